#pragma once
/// What the target does, learned from fault-free trace runs before any schedule is generated: the verbs
/// of the steps it sends and, per verb, how many of them a run of E events reaches for sure. Kill points
/// are drawn only from these verbs with k within these bounds, so a generated kill point fires unless the
/// schedule's own content makes the target skip work (two orders of the same SKU, a duplicate it
/// recognises): that is coverage loss, reported, never a failure of the target.
#include "history/history.h"

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace idem {

/// Per verb: count(E) = start + perEvent * E, a line through two traces (see KillModel::learn).
struct VerbLine {
  double start = 0;
  double perEvent = 0;
};

class KillModel {
public:
  KillModel() = default;
  /// Fits one line per verb through two fault-free traces: `small` with `smallEntries` stream entries and
  /// `large` with `largeEntries` (> smallEntries). The slope is taken per stream entry and applied per
  /// distinct event, which is conservative: retries only add steps, and a verb that duplicates skip
  /// (COMMIT of a recognised duplicate) gets a slope below its per-event rate.
  static KillModel learn(const std::vector<Op>& small, int smallEntries, const std::vector<Op>& large,
                         int largeEntries);
  /// Steps of a history counted per verb: outcome "ok", up to the last step that acknowledged entries.
  /// The reads of a consumer idling after its work (how many depends on timing) are left out, so the
  /// counts of a deterministic target are deterministic.
  static std::map<std::string, int> reliableCounts(const std::vector<Op>& history);

  /// Verbs in the order of their first step in the large trace.
  const std::vector<std::string>& verbs() const { return order_; }
  /// The largest k such that VERB#k is reached in every fault-free run of `events` distinct events
  /// (0: none). Faults, retries and later phases only add steps.
  int bound(const std::string& verb, int events) const;
  /// The server of the verb's first step in the traces, "pg" or "valkey" ("pg" when it never appeared).
  std::string server(const std::string& verb) const;
  /// How many more steps of the verb each more stream entry brings (the line's slope; 0 for a verb never seen).
  double perEvent(const std::string& verb) const;
  /// max over verbs of bound(verb, events).
  int maxBound(int events) const;
  /// The verbs whose steps can conflict with a step of `held`, in verbs() order: the release points of a
  /// hold on `held` that order a race (materialize draws a hold's releasing point among them). Two verbs
  /// conflict when their steps in the traces share a resource (resourcesOf): a table both name, a table
  /// and a COMMIT (which publishes what its transaction wrote), the stream (a read or claim of an entry
  /// and its XACK), a Valkey key family (`seen:` of `SET seen:<id> NX`) or a key family and an EXEC. A
  /// verb with no resource (BEGIN, PARSE) conflicts with nothing: a hold on it is released by the others'
  /// idleness. Set-up steps are no verbs at all (history/trace.h).
  std::vector<std::string> conflicting(const std::string& held) const;
  /// What a step may conflict on: "pg:TABLE" per table it names, "pg:*" for COMMIT/END, "stream" for a
  /// read, claim or acknowledgement of stream entries, "valkey:PREFIX" for a command on a key (its text up
  /// to its last ':'), "valkey:*" for EXEC.
  static std::set<std::string> resourcesOf(const ops::Step& step);
  bool empty() const { return order_.empty(); }
  /// The model of the target's outbox relay (r1's own steps, its polls of an empty outbox left out), learned
  /// from the same traces; nullptr when they have no relay step. materialize draws rN:VERB#k from it.
  const KillModel* relay() const { return relay_.get(); }
  /// Sets the relay's model (tests).
  void setRelay(KillModel m) { relay_ = std::make_shared<const KillModel>(std::move(m)); }

  /// {"VERB": {"start": s, "per_event": p}, ...}
  nlohmann::json toJson() const;
  /// Builds a model from explicit lines and, per verb, what its steps may conflict on (tests).
  static KillModel fromLines(const std::vector<std::pair<std::string, VerbLine>>& lines,
                             const std::map<std::string, std::set<std::string>>& resources = {});

private:
  std::vector<std::string> order_;
  std::map<std::string, VerbLine> lines_;
  std::map<std::string, std::string> servers_;
  std::map<std::string, std::set<std::string>> resources_; ///< verb -> resourcesOf its steps, united
  std::shared_ptr<const KillModel> relay_;                  ///< relay(): the relay's own model
};

} // namespace idem
