#pragma once
/// A minimal blocking Valkey/Redis client for the reference consumers, over hiredis 0.14 (RESP2 only).
/// One command is one round trip; nothing is ever sent that the caller did not ask for (no PING, no
/// CLIENT SETNAME, no HELLO), so the harness sees exactly the consumer's own steps. Any I/O error or
/// error reply throws std::runtime_error.
#include <hiredis/hiredis.h>

#include <memory>
#include <string>
#include <vector>

namespace idem::targets {

/// The parts of a `redis://[[user]:password@]host[:port][/db]` URL that the consumers use.
struct ValkeyUrl {
  std::string user;     ///< empty: the default user
  std::string password; ///< empty: no AUTH
  std::string host;
  int port = 6379;
  int db = 0;
};

/// Parses `redis://[[user]:password@]host[:port][/db]` (user and password percent-decoded). Throws
/// std::runtime_error on another scheme, options (`?`), or a port or db that is not a number.
ValkeyUrl parseValkeyUrl(const std::string& url);

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

class Valkey {
public:
  /// Connects to `url`; AUTHs when it holds a password and SELECTs its db when it is not 0 (one round
  /// trip each).
  explicit Valkey(const std::string& url);
  ~Valkey();
  Valkey(const Valkey&) = delete;
  Valkey& operator=(const Valkey&) = delete;

  /// Sends one command (arguments are binary safe) and returns its reply, never null.
  /// Throws on an I/O error or an error reply, naming the command.
  ReplyPtr command(const std::vector<std::string>& argv);

private:
  redisContext* ctx_ = nullptr;
};

/// The text of a string, status or verbatim reply; throws on another type.
std::string replyText(const redisReply* r, const char* what);

} // namespace idem::targets
