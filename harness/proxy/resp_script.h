#pragma once
/// What the RESP tracker can tell of a Lua script a consumer runs on Valkey (EVAL, EVALSHA, SCRIPT LOAD):
/// the script's SHA-1 (the name EVALSHA calls it by), the stream commands its body calls, and the arguments
/// it is called with that look like entry ids. Pure functions of bytes.
#include <string>
#include <string_view>
#include <vector>

namespace idem::proxy {

/// The SHA-1 of `body` in lowercase hex: the name Valkey gives a script (SCRIPT LOAD's reply, EVALSHA's
/// argument).
std::string scriptSha(std::string_view body);

/// The stream commands (X…, uppercase, each once) that the Lua `body` calls as
/// `redis.call('XACK', …)`, `redis.pcall("XACK", …)` or `server.call(…)`: what the script may do to the
/// stream. A command named through a variable is not seen.
std::vector<std::string> scriptStreamCalls(std::string_view body);

/// Of `args` from index `from` on, those that look like a whole stream entry id ("1733-0": digits, '-',
/// digits).
std::vector<std::string> entryIdArgs(const std::vector<std::string_view>& args, size_t from);

} // namespace idem::proxy
