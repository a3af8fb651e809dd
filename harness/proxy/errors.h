#pragma once
/// The bytes of a server error, for a fault that answers a request in the server's place.
#include "proxy/hub.h"

#include <string>
#include <vector>

namespace idem::proxy {

/// PostgreSQL: ErrorResponse (severity ERROR, SQLSTATE `code`, `message`) then ReadyForQuery with
/// transaction status `txStatus` ('I' idle, 'T' in a transaction, 'E' in a failed one). Valkey: the simple
/// error "-CODE message\r\n" (the code is the error's first word, as servers send it: "LOADING ...").
/// The sink: httpErrorAnswer. `fatal` (PostgreSQL): severity FATAL and no ReadyForQuery — the server ends the session after it.
std::string errorReply(Server server, const std::string& code, const std::string& message, char txStatus = 'I',
                       bool fatal = false);

/// The sink (HTTP/1.1): an answer of status `code` (three digits, 500 to 599; another: 503) with Content-Length
/// and a small JSON body {"error": message}; the connection stays open.
std::string httpErrorAnswer(const std::string& code, const std::string& message);

/// PostgreSQL: a simple Query that makes the server itself raise SQLSTATE `code` with `message`, sent in
/// place of a request so that the server's state is what the client is told: the statement does nothing,
/// a transaction around it is aborted, and ReadyForQuery says so. Its reply (ErrorResponse, then
/// ReadyForQuery) is what the client expects of any failed Query or Sync-ended group.
std::string pgRaiseQuery(const std::string& code, const std::string& message);

/// PostgreSQL: the simple Query message of `sql`.
std::string pgQuery(const std::string& sql);

/// Valkey: the command `words` as a RESP array of bulk strings (what a client sends).
std::string respCommand(const std::vector<std::string>& words);

} // namespace idem::proxy
