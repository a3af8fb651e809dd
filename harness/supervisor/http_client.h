#pragma once
/// The client side of an HTTP schedule: one request on its own connection (Boost.Beast), in steps the
/// supervisor drives — connect, write, then read the answer, or only its headers, or part of its body, or
/// nothing — so that the harness decides when the client gives up. Calls block; cancel() from another
/// thread ends any of them at once (the run's deadline). Every request carries "Connection: close".
///
/// An answer is its final one: interim 1xx answers (102 Processing, 103 Early Hints) are read past, as a
/// client does. Its body is never held whole: the client keeps a digest of every byte and its first
/// bytes (http_body.h), and reads at most ops::kAnswerLimit bytes of it (history/history.h).
#include "history/history.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace idem {

/// The first bytes of a body an answer keeps (the history's copy of it).
inline constexpr size_t kAnswerHeadBytes = 4096;

struct HttpAnswer {
  std::string outcome; ///< answered | cut | reset | refused | too-large (history.h ops::Response)
  int status = 0;      ///< the final status (0 when none arrived)
  std::string location;
  std::string contentType;
  std::string body;       ///< its first kAnswerHeadBytes bytes
  uint64_t size = 0;      ///< the bytes of the body read
  std::string digest;     ///< fnv64Hex of the whole body ("" when no body was read)
  /// fnv64Hex of the body as canonical JSON (object keys sorted, no spaces) when the answer says it is
  /// JSON (application/json, or a +json type), it was read whole and parses; else "".
  std::string jsonDigest;
};

/// Whether a Content-Type value names JSON: application/json or a type/subtype+json, parameters aside.
bool isJsonMediaType(const std::string& contentType);

/// fnv64Hex of `body` as canonical JSON (nlohmann::json's dump: object keys sorted), "" when it is no JSON.
std::string canonicalJsonDigest(const std::string& body);

class HttpCall {
public:
  /// A request to 127.0.0.1:port. `headers` are added to Host, Content-Type (application/json with a body),
  /// Content-Length and Connection: close.
  HttpCall(int port, std::string method, std::string target, std::map<std::string, std::string> headers,
           std::string body);
  ~HttpCall();
  HttpCall(const HttpCall&) = delete;
  HttpCall& operator=(const HttpCall&) = delete;

  /// False when no server accepted the connection.
  bool connect();
  /// Writes the whole request; false when the connection broke.
  bool write();
  /// Reads the whole final answer: answered; reset when the connection ended first; too-large when its
  /// body passed ops::kAnswerLimit.
  HttpAnswer read();
  /// Reads the final answer's status line and headers, then closes: cut (status and location set), or reset.
  HttpAnswer readHeadersThenCut();
  /// Reads the final answer's headers and the first bytes that came of its body, then closes: cut, or reset.
  HttpAnswer readSomeThenCut();
  /// Closes the connection now (after write: the client gave up without reading).
  void close();
  /// From any thread: ends a blocking connect, write or read now.
  void cancel();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace idem
