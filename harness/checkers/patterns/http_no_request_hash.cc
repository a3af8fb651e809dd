// HTTP: no request hash. A key reused with another payload got an answer of success (the first request's)
// or took effect: the server looked the key up without comparing the request with the one it first saw.
#include "checkers/patterns/patterns.h"

#include <fmt/format.h>

namespace idem::detail::patterns {

Found httpNoRequestHash(const HistoryView& h, const Violation& v) {
  if (v.invariant != "http:mismatch") return std::nullopt;
  if (v.kind != "mismatch-accepted" && v.kind != "mismatch-status") return std::nullopt;
  const ops::Request* req = nullptr;
  const ops::Response* resp = nullptr;
  std::vector<int64_t> cited;
  for (int64_t i : v.ops) {
    if (i < 0 || static_cast<size_t>(i) >= h.ops.size()) continue;
    const Op& op = h.ops[static_cast<size_t>(i)];
    if (auto* r = op.as<ops::Request>(); r && !req) req = r, cited.push_back(i);
    else if (auto* a = op.as<ops::Response>(); a && req && a->id == req->id) resp = a, cited.push_back(i);
  }
  if (!req) return std::nullopt;
  const bool success = resp && resp->final() && resp->status >= 200 && resp->status < 300;
  if (v.kind == "mismatch-status" && !success) return std::nullopt;
  return make("http-no-request-hash", "no request hash", cited,
              fmt::format("r{} reused key {} with another payload (payload {}) and {}: the server found the key "
                          "and never compared the request with the one it first stored",
                          req->id, req->key, req->body,
                          success ? fmt::format("got {}", resp->status) : std::string("it took effect")),
              "store a hash of the request (method, path and canonical body) in the key's row with the answer; "
              "on a repeated key, compare it first and answer 422 when it differs");
}

} // namespace idem::detail::patterns
