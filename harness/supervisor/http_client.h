#pragma once
/// The client side of an HTTP schedule: one request on its own connection (Boost.Beast), in steps the
/// supervisor drives — connect, write, then read the answer, or only its headers, or part of its body, or
/// nothing — so that the harness decides when the client gives up. Calls block; cancel() from another
/// thread ends any of them at once (the run's deadline). Every request carries "Connection: close".
#include <atomic>
#include <map>
#include <memory>
#include <string>

namespace idem {

struct HttpAnswer {
  std::string outcome; ///< answered | cut | reset | refused (history.h ops::Response)
  int status = 0;
  std::string location;
  std::string body;
  std::string digest; ///< fnv64Hex of the body ("" when no body was read)
};

/// FNV-1a 64 of `s`, 16 lower-case hex digits.
std::string fnv64Hex(const std::string& s);

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
  /// Reads the whole answer: answered, or reset when the connection ended first.
  HttpAnswer read();
  /// Reads the status line and headers, then closes: cut (status and location set), or reset.
  HttpAnswer readHeadersThenCut();
  /// Reads the headers and the first bytes that came of the body, then closes: cut, or reset.
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
