// HTTP: no request hash. A key reused with another payload got an answer of success (the first request's)
// or took effect: the server looked the key up without comparing the request with the one it first saw.
// Named only when a request of the key had a 2xx answer before the reused one was written, or the reused one
// got an earlier request's answer (its Location, or a body naming its payload): copies sent at once may each
// have found no key (a race, not a missing comparison).
#include "checkers/patterns/patterns.h"

#include <fmt/format.h>

#include <map>
#include <set>

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
  // The server can only have found the key when a request of it had a 2xx before this one was written;
  // copies at once (a burst) may each find nothing, and then no comparison could have run.
  int64_t written = -1;
  std::set<int> earlier;
  bool answeredBefore = false;
  for (const Op& op : h.ops) {
    if (const auto* r = op.as<ops::Request>()) {
      if (r == req) written = op.index;
      else if (r->key == req->key && r->id < req->id && written < 0) earlier.insert(r->id);
    } else if (const auto* a = op.as<ops::Response>();
               a && written < 0 && earlier.count(a->id) && a->final() && a->status >= 200 && a->status < 300) {
      answeredBefore = true;
    }
  }
  const bool success = resp && resp->final() && resp->status >= 200 && resp->status < 300;
  // Or its answer is an earlier request's of the key (its Location, or a body that names that request's
  // payload and not its own): a stored answer replayed, so the key was found although that request had only
  // timed out by then.
  bool replayed = false;
  if (success) {
    std::map<int, const ops::Response*> answers;
    for (const Op& op : h.ops)
      if (const auto* a = op.as<ops::Response>(); a && a->final()) answers[a->id] = a;
    for (const Op& op : h.ops) {
      const auto* r = op.as<ops::Request>();
      if (!r || r->key != req->key || r->id >= req->id || r->body == req->body) continue;
      auto it = answers.find(r->id);
      if (it == answers.end()) continue;
      const ops::Response& a = *it->second;
      const bool sameLocation = !resp->location.empty() && resp->location == a.location;
      const bool namesTheirs = !r->ref.empty() && !req->ref.empty() && resp->body.find(r->ref) != std::string::npos &&
                               resp->body.find(req->ref) == std::string::npos;
      if (sameLocation || namesTheirs) replayed = true;
    }
  }
  if (!answeredBefore && !replayed) return std::nullopt;
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
