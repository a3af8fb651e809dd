#pragma once
/// The bytes of a server error, for a fault that answers a request in the server's place.
#include "proxy/hub.h"

#include <string>

namespace idem::proxy {

/// PostgreSQL: ErrorResponse (severity ERROR, SQLSTATE `code`, `message`) then ReadyForQuery with
/// transaction status `txStatus` ('I' idle, 'T' in a transaction, 'E' in a failed one). Valkey: the simple
/// error "-CODE message\r\n" (the code is the error's first word, as servers send it: "LOADING ...").
std::string errorReply(Server server, const std::string& code, const std::string& message, char txStatus = 'I');

} // namespace idem::proxy
