/// The checkers of the sink (docs/sink.md, docs/verdicts.md "The sink"): the external call a consumer makes per
/// event, answered and recorded by idemproof's sink. Like every checker they read only the history: the sink's
/// call records, the consumer's CALL steps, and the rows of the scenario's booked query the harness read at the
/// end (Final.observed["sink:booked"]).
///   sink:exactly-once  every event delivered is executed once at the sink: charged twice, never charged
///   sink:agreement     once the run is over, booked in the database <=> executed at the sink
///   sink:key-stable    under a provider that honours keys, every call of one event carries the same key
#include "checkers/detail.h"
#include "checkers/sink_view.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

namespace idem::detail {

namespace {

Violation violation(const std::string& invariant, const std::string& kind, const SinkView& s,
                    const std::string& ref, const Story& st) {
  Violation v;
  v.invariant = invariant;
  v.kind = kind;
  v.key = ref;
  if (auto it = s.eventOf.find(ref); it != s.eventOf.end()) v.events = {it->second};
  cite(v, st);
  return v;
}

/// "executions 1 and 2, calls 1 and 3"
std::string executionsText(const std::vector<const SinkCall*>& ex) {
  std::vector<int> execs, ids;
  for (const SinkCall* c : ex) {
    execs.push_back(c->call->execution);
    ids.push_back(c->call->id);
  }
  return fmt::format("execution{} {}, call{} {}", ex.size() == 1 ? "" : "s", listNumbers(execs),
                     ex.size() == 1 ? "" : "s", listNumbers(ids));
}

/// The ids booked at the end and not before (a row the initial state held was booked by no event of the run).
std::set<std::string> bookedIds(const HistoryView& h, std::string& missing) {
  std::set<std::string> out;
  const auto& fin = h.requireFinal().observed;
  auto rows = fin.find(kSinkBooked);
  if (rows == fin.end()) {
    missing = "the final op has no rows of the sink's booked query (sink:booked)";
    return out;
  }
  for (const auto& row : rows->second)
    if (!row.empty() && row[0]) out.insert(*row[0]);
  if (h.initial) {
    auto init = h.initial->observed.find(kSinkBooked);
    if (init != h.initial->observed.end())
      for (const auto& row : init->second)
        if (!row.empty() && row[0]) out.erase(*row[0]);
  }
  return out;
}

} // namespace

std::string sinkPolicyOf(const Scenario& s, const std::vector<Op>& history) {
  for (const Op& op : history)
    if (const auto* p = op.as<ops::Plan>(); p && !p->sinkPolicy.empty()) return p->sinkPolicy;
  return s.sink && !s.sink->honoursKeys ? "ignore" : "honour";
}

CheckResult checkSinkExactlyOnce(const HistoryView& h) {
  const SinkView s(h);
  std::vector<Violation> out;
  std::vector<std::string> unknown;
  std::set<std::string> judged;
  for (const auto& send : h.sends) {
    if (!judged.insert(send.event_id).second) continue;
    const int n = send.n;
    const auto ex = s.executions(send.event_id);
    if (ex.size() == 1) continue;
    if (ex.empty()) {
      // Only a delivered event had to be charged; poison events never.
      if (h.deliveriesOf(n).empty() || h.scenario.isPoison(send.fields)) continue;
      const Story st = sinkStory(s, send.event_id);
      Violation v = violation("sink:exactly-once", "never-charged", s, send.event_id, st);
      v.expected = 1;
      v.observed = 0;
      v.message = fmt::format("{} never charged: {}; the sink executed no call for it", s.label(send.event_id), st.text);
      // More time could still bring its call.
      if (h.end() == RunEnd::Limit) {
        unknown.push_back(fmt::format("{}, but the run did not finish ({})", v.message, h.endReason()));
        continue;
      }
      out.push_back(std::move(v));
      continue;
    }
    const Story st = sinkStory(s, send.event_id);
    Violation v = violation("sink:exactly-once", "charged-twice", s, send.event_id, st);
    v.expected = 1;
    v.observed = static_cast<int64_t>(ex.size());
    for (const SinkCall* c : ex) v.ops.push_back(c->op);
    v.message = fmt::format("{} charged {} ({}): {}", s.label(send.event_id), times(static_cast<int>(ex.size())),
                            executionsText(ex), st.text);
    out.push_back(std::move(v));
  }
  // Charges of no event: a reference the producer never sent.
  std::set<std::string> phantoms;
  for (const auto& c : s.calls) {
    if (!c.call->executed() || s.eventOf.count(c.call->ref) || !phantoms.insert(c.call->ref).second) continue;
    const auto ex = s.executions(c.call->ref);
    const Story st = sinkStory(s, c.call->ref);
    Violation v = violation("sink:exactly-once", "phantom", s, c.call->ref, st);
    v.expected = 0;
    v.observed = static_cast<int64_t>(ex.size());
    for (const SinkCall* e : ex) v.ops.push_back(e->op);
    v.message = fmt::format("ref '{}', which no event sent carries, charged ({}): {}", c.call->ref, executionsText(ex),
                            st.text);
    out.push_back(std::move(v));
  }
  return resultOf(std::move(out), unknown);
}

CheckResult checkSinkAgreement(const HistoryView& h) {
  // Booked and charged may still come to agree while the consumer works: judged only once the run is over.
  if (h.end() == RunEnd::Limit)
    return resultOf({}, {fmt::format("the run did not finish ({}): booked and charged may still come to agree",
                                     h.endReason())});
  std::string missing;
  const auto booked = bookedIds(h, missing);
  if (!missing.empty()) return resultOf({}, {missing});
  const SinkView s(h);
  std::set<std::string> refs(booked);
  for (const auto& c : s.calls)
    if (c.call->executed()) refs.insert(c.call->ref);
  std::vector<Violation> out;
  for (const auto& ref : refs) {
    const auto ex = s.executions(ref);
    const bool isBooked = booked.count(ref) > 0;
    if (isBooked == !ex.empty()) continue;
    const Story st = sinkStory(s, ref);
    Violation v = violation("sink:agreement", isBooked ? "booked-not-charged" : "charged-not-booked", s, ref, st);
    v.expected = "booked and charged, or neither";
    v.observed = {{"booked", isBooked}, {"executions", static_cast<int64_t>(ex.size())}};
    for (const SinkCall* c : ex) v.ops.push_back(c->op);
    v.message = isBooked ? fmt::format("{} booked but not charged: {}; {} has its row, the sink executed no call for it",
                                       s.label(ref), st.text, kSinkBooked)
                         : fmt::format("{} charged but not booked ({}): {}; {} has no row for it", s.label(ref),
                                       executionsText(ex), st.text, kSinkBooked);
    out.push_back(std::move(v));
  }
  return resultOf(std::move(out), {});
}

CheckResult checkSinkKeyStable(const HistoryView& h) {
  const SinkView s(h);
  const std::string header = h.scenario.sink ? h.scenario.sink->keyHeader : "Idempotency-Key";
  std::vector<Violation> out;
  std::set<std::string> judged;
  for (const auto& c : s.calls) {
    const std::string& ref = c.call->ref;
    if (ref.empty() || !judged.insert(ref).second) continue;
    // Each key (none counts as one of its own) with the calls that carried it, in order of first use; and
    // the calls the sink never received (answered in its place, dropped or killed before it): a key a
    // consumer changed there is changed all the same, and the next fault of the kind may fall after it.
    struct Use {
      std::string key;
      std::vector<const SinkCall*> calls;
      std::vector<const CallStep*> unsent;
    };
    std::vector<Use> keys;
    auto use = [&](const std::string& k) -> Use& {
      auto it = std::find_if(keys.begin(), keys.end(), [&](const Use& u) { return u.key == k; });
      return it != keys.end() ? *it : keys.emplace_back(Use{k, {}, {}});
    };
    for (const SinkCall* x : s.callsOf(ref)) use(x->call->keyHeader ? "'" + x->call->key + "'" : "none").calls.push_back(x);
    for (const CallStep* st : s.stepsOf(ref))
      if (st->callOp < 0 && !st->keyCut && !st->step->reachedServer())
        use(st->keyed ? "'" + st->key + "'" : "none").unsent.push_back(st);
    if (keys.size() < 2) continue;
    const Story st = sinkStory(s, ref);
    Violation v = violation("sink:key-stable", "key-changed", s, ref, st);
    std::vector<std::string> said;
    for (const auto& u : keys) {
      std::vector<int> ids;
      for (const SinkCall* x : u.calls) {
        ids.push_back(x->call->id);
        v.ops.push_back(x->op);
      }
      std::vector<std::string> parts;
      if (!ids.empty()) parts.push_back(fmt::format("call{} {}", ids.size() == 1 ? "" : "s", listNumbers(ids)));
      for (const CallStep* x : u.unsent) {
        parts.push_back(fmt::format("{} at {}, which the sink never received", x->process, x->step->name()));
        v.ops.push_back(x->op);
      }
      said.push_back(fmt::format("{} ({})", u.key, fmt::join(parts, "; ")));
    }
    v.expected = 1;
    v.observed = static_cast<int64_t>(keys.size());
    v.message = fmt::format("{} called with {} different {} keys, {}: {}; a provider that honours keys executes each "
                            "key anew",
                            s.label(ref), keys.size(), header, listAnd(said), st.text);
    out.push_back(std::move(v));
  }
  return resultOf(std::move(out), {});
}

} // namespace idem::detail
