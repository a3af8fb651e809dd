#pragma once
/// Checkers read only the history (and the scenario value) and return pass / fail / unknown with named
/// anomalies. A checker that throws yields unknown, never pass; merged, fail beats unknown beats pass.
#include "core/verdict.h"
#include "history/history.h"
#include "scenario/scenario.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace idem {

/// The mistake in the consumer (or endpoint) that a violation's steps show: one of the anti-patterns of
/// docs/report.md ("Anti-patterns"), recognised by a classifier of checkers/patterns/. A failing run's
/// violation carries one when a classifier recognises it, else none ("no known pattern").
struct Pattern {
  std::string id;          ///< "ack-before-effect"
  std::string name;        ///< "acknowledge before the effect is durable"
  std::vector<int64_t> ops; ///< history indices of the steps that show it
  std::string explanation; ///< one sentence naming the steps
  std::string fix;         ///< a generic recipe: the order of steps, and the SQL or command
};

/// One anomaly. Kinds: duplicate (an event applied more than once), lost (acknowledged, never applied),
/// stuck (never acknowledged: pending or never delivered), stale-version (an older version won),
/// phantom (an effect no event explains), crash (a consumer exited non-zero by itself).
struct Violation {
  std::string kind;
  std::string invariant;            ///< invariant name, or "broker", "process"
  std::string key;                  ///< the row key (wallet, customer, sku), or "" when none
  nlohmann::json expected;          ///< e.g. 25000, or {"version": 3, "city": "..."}
  nlohmann::json observed;
  std::vector<int> events;          ///< event numbers the diagnosis names (may be empty: not decidable)
  std::vector<int> candidates;      ///< when not decidable: the events that could explain it (none is named)
  std::vector<std::string> entries; ///< stream entry ids involved
  std::string kill_point;           ///< the kill point that caused it, when the history shows one
  std::string message;              ///< one sentence a person reads: "event 2 applied twice (...)"
  std::vector<int64_t> ops;         ///< history indices cited (deliveries, kills, steps around them)
  std::optional<Pattern> pattern = {}; ///< the anti-pattern behind it (failing runs only), or none
};


struct CheckResult {
  std::string checker; ///< "invariant:balance", "broker", "process", "faults"
  Verdict verdict = Verdict::Unknown; ///< pass | fail | unknown
  std::vector<Violation> violations;
  std::string error;   ///< why Unknown
  /// What a person should know that changes no verdict (a replay equal as JSON, with other bytes).
  std::vector<std::string> notes = {};
};

void to_json(nlohmann::json& j, const Pattern& p);
void to_json(nlohmann::json& j, const Violation& v);
void to_json(nlohmann::json& j, const CheckResult& r);

/// Every checker of a scenario over one history, in this order: one per invariant ("invariant:NAME"), the
/// four poison checkers and the three of the sink ("sink:exactly-once", "sink:agreement", "sink:key-stable"
/// when the run's sink honoured keys) for a scenario with them, the broker checker (zero pending, every
/// entry delivered and acked), the process checker (crashes), the
/// faults checker (every kill point of the plan fired, else Unknown), the run checker ("error" ops make
/// it Unknown) and the observation checker (connections the proxies could not decode), each wrapped so
/// that an exception gives Unknown. Violations carry a diagnosis (events,
/// kill point, message).
std::vector<CheckResult> checkAll(const Scenario& s, const std::vector<Op>& history);

/// The short name of anti-pattern `id` ("dedup-outside-transaction" -> "dedup mark outside the effect's
/// transaction"), "" when no classifier has that id.
std::string patternName(const std::string& id);

/// Names the anti-pattern of every violation of `results` when they merge to fail (checkers/patterns/);
/// a run that does not fail is never classified. checkAll calls it.
void classifyViolations(const Scenario& s, const std::vector<Op>& history, std::vector<CheckResult>& results);

/// Fail if any fails, else unknown if any is unknown, else pass.
Verdict merge(const std::vector<CheckResult>& results);

/// Whether a process of `history` worked on two PostgreSQL connections at once: a step on one while a
/// transaction of another was open (checkers/tx_statement.h overlappingTransactions). Such a consumer
/// handles several deliveries at once, and one process's run is then left to timing too.
bool concurrentWork(const std::vector<Op>& history);

} // namespace idem
