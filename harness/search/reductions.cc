#include "search/reductions.h"

#include <rapidcheck.h>

#include <algorithm>
#include <functional>

namespace idem {

namespace {

using Change = std::function<Shape(Shape)>;

Reduction reduction(const rc::Shrinkable<Shape>& failing, std::string what, Change change) {
  return {std::move(what), rc::shrinkable::map(failing, std::move(change))};
}

bool anyInflight(const Shape& s) {
  return std::any_of(s.events.begin(), s.events.end(), [](const Shape::Event& e) {
    return std::any_of(e.retries.begin(), e.retries.end(), [](const Shape::Retry& r) { return r.inflight; });
  });
}

bool burst(const Shape::Request& r) { return std::abs(r.kind) % 4 == 1; }
/// A send whose end is left to timing: it times out while the server works, or cuts the connection.
bool leftInFlight(const Shape::Request& r) { return std::abs(r.kind) % 4 == 0 && std::abs(r.wait) % 5 != 0; }

/// A burst's copies as sends of its key, one after another (Shape::Request kinds: 0 send, 1 burst), as many
/// as materialize gives the burst; with `answers`, every send also waits for its answer (wait 0).
Shape sequentialSends(Shape s, int maxBurst, bool answers) {
  std::vector<Shape::Request> out;
  for (auto r : s.requests) {
    if (!burst(r)) {
      if (answers && leftInFlight(r)) r.wait = 0;
      out.push_back(r);
      continue;
    }
    Shape::Request send;
    send.key = r.key;
    const int copies = std::clamp(r.copies, 2, std::clamp(maxBurst, 2, kMaxBurst));
    for (int c = 0; c < copies; ++c) {
      send.mismatch = r.mismatch && c == copies - 1; // materialize: the payload of the burst's `other`
      out.push_back(send);
    }
  }
  s.requests = std::move(out);
  return s;
}

} // namespace

std::vector<Reduction> deterministicShapes(const rc::Shrinkable<Shape>& failing, const ModelParams& p) {
  const Shape s = failing.value();
  std::vector<Reduction> out;
  if (!s.requests.empty()) {
    const bool bursts = std::any_of(s.requests.begin(), s.requests.end(), burst);
    const bool inFlight = std::any_of(s.requests.begin(), s.requests.end(), leftInFlight);
    if (!bursts && !inFlight) return out;
    const int most = p.maxBurst;
    out.push_back(reduction(failing, "requests one after another, each answered, no fault", [most](Shape x) {
      x.kills.clear();
      return sequentialSends(std::move(x), most, true);
    }));
    if (!s.kills.empty())
      out.push_back(reduction(failing, "requests one after another, each answered",
                              [most](Shape x) { return sequentialSends(std::move(x), most, true); }));
    if (bursts && inFlight)
      out.push_back(reduction(failing, "bursts sent one after another",
                              [most](Shape x) { return sequentialSends(std::move(x), most, false); }));
    return out;
  }
  const int fewest = std::clamp(p.minConsumers, 1, kMaxConsumers);
  const int consumers = std::clamp(s.consumers, 1, kMaxConsumers);
  if (consumers < 2 && !anyInflight(s)) return out;
  if (consumers > fewest || anyInflight(s)) {
    out.push_back(reduction(failing, fewest == 1 ? "one consumer" : "fewest consumers", [fewest](Shape x) {
      x.consumers = fewest;
      x.holds.clear();
      for (auto& e : x.events)
        for (auto& r : e.retries) r.inflight = false;
      return x;
    }));
  }
  if (consumers >= 2 && !s.holds.empty()) {
    out.push_back(reduction(failing, "no holds", [](Shape x) {
      x.holds.clear();
      return x;
    }));
    for (size_t i = 0; s.holds.size() >= 2 && i < s.holds.size(); ++i) {
      out.push_back(reduction(failing, "hold " + std::to_string(i + 1) + " removed", [i](Shape x) {
        if (i < x.holds.size()) x.holds.erase(x.holds.begin() + static_cast<long>(i));
        return x;
      }));
    }
  }
  return out;
}

bool concurrent(const Schedule& s) {
  return s.consumers >= 2 || std::any_of(s.client.begin(), s.client.end(), [](const ClientOp& op) {
           return op.kind == ClientOp::Kind::Burst || (op.kind == ClientOp::Kind::Send && op.wait != ClientOp::Wait::Answer);
         });
}

} // namespace idem
