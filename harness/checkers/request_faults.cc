#include "checkers/request_faults.h"

#include "plan/fault_kind.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace idem::detail {

std::string requestName(const ops::Request& r) {
  std::string what;
  if (r.role == "original") what = fmt::format("the first request of key {}", r.key);
  else if (r.role == "retry") what = fmt::format("a retry of key {}", r.key);
  else if (r.role == "settle") what = fmt::format("the client's retry of key {} at the end", r.key);
  else if (r.role == "mismatch") what = fmt::format("key {} with payload {}", r.key, r.body);
  else if (r.role == "no-key") what = fmt::format("payload {} without a key", r.body);
  else if (r.role == "bad-key") what = fmt::format("payload {} with a malformed key", r.body);
  else what = r.role;
  if (r.burst) what = fmt::format("copy {} of a burst of key {}", r.burst, r.key);
  return fmt::format("r{} ({})", r.id, what);
}

std::string faultEvent(const Fault& f, const std::string& process) {
  if (f.isKill()) return fmt::format("{} was killed at {}", process, f.str());
  return faultKind(f.kind, "fault").phrase(f, process, serverTitle);
}

std::vector<RequestFault> requestFaults(const std::vector<Op>& ops) {
  std::vector<RequestFault> out;
  std::map<int, std::pair<const ops::Request*, int64_t>> open; // request id -> the request, while unanswered
  for (const Op& op : ops) {
    if (const auto* r = op.as<ops::Request>()) {
      open[r->id] = {r, op.index};
    } else if (const auto* a = op.as<ops::Response>()) {
      open.erase(a->id);
    } else if (const auto* f = op.as<ops::FaultOp>()) {
      RequestFault rf;
      rf.op = op.index;
      rf.process = op.process;
      rf.fault = f->fault;
      for (const auto& [id, q] : open) { // ids are in the order written
        rf.inFlight.push_back(q.first);
        if (q.second > rf.requestOp) rf.request = q.first, rf.requestOp = q.second;
      }
      out.push_back(std::move(rf));
    }
  }
  return out;
}

std::string faultsOnKey(const std::vector<RequestFault>& faults, int key) {
  std::string out;
  for (const auto& f : faults) {
    if (std::none_of(f.inFlight.begin(), f.inFlight.end(), [&](const ops::Request* r) { return r->keyHeader && r->key == key; }))
      continue;
    std::string names;
    for (size_t i = 0; i < f.inFlight.size(); ++i)
      names += (i == 0 ? "" : i + 1 == f.inFlight.size() ? " and " : ", ") + requestName(*f.inFlight[i]);
    out += fmt::format("{}{} {} in flight when {}", out.empty() ? "" : "; ", names, f.inFlight.size() == 1 ? "was" : "were",
                       faultEvent(f.fault, f.process));
  }
  return out;
}

} // namespace idem::detail
