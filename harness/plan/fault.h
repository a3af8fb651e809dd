#pragma once
/// A fault is a value: what to do to one step of a run, like Toxiproxy's toxics — a kind, the step, and
/// the kind's parameters. Its text form is parsed and printed here, in one place:
///
///   [KIND:][cN:|rN:|sN:]before|after:VERB#k[:ARG...]   e.g. after:COMMIT#3   drop:after:COMMIT#3   c2:after:XACK#1
///
/// KIND is one of the registered fault kinds (fault_kind.h); without it the fault is a kill, so the kill
/// points of earlier versions (`after:COMMIT#3`) keep their meaning. VERB#k is the k-th request with that
/// verb in the run, counted from 1 over every consumer process and both servers; with a process, cN:VERB#k
/// is the k-th of process cN alone — the same step in every replay, however several live processes
/// interleave. rN names the target's outbox relay (r1, and r2, … for the processes that replace it): its steps
/// are numbered apart from the consumers' (never a VERB#k of the run), so only rN:VERB#k reaches them.
/// sN names an HTTP server process: s1..sR are the R replicas of a run (docs/http-contract.md), and the
/// processes that replace killed ones take the next numbers.
/// `before` acts on the
/// request before the server sees it; `after` lets it take effect and acts on its reply.
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace idem {

enum class When { Before, After };

struct Fault {
  std::string kind = "kill";
  When when = When::After;
  std::string process;           ///< "c2": k counts that process's steps only; "": the whole run's
  std::string verb;              ///< upper case: COMMIT, XACK, SET, ...
  int k = 1;                     ///< 1-based occurrence in the run (or in `process`)
  std::vector<std::string> args; ///< the kind's parameters, as written

  /// "after:COMMIT#3" (a kill), "drop:after:COMMIT#3", "delay:before:XACK#2:500".
  std::string str() const;
  /// "after:COMMIT#3", "c2:after:COMMIT#1": where it acts, without kind and arguments.
  std::string point() const;
  /// "COMMIT#3", "c2:COMMIT#1"
  std::string step() const;
  bool isKill() const { return kind == "kill"; }

  /// Parses the text form; the kind must be registered and its arguments right (FaultKind::check).
  /// Throws UsageError naming `what` (a flag, a file and field) and the expected form.
  static Fault parse(const std::string& text, const std::string& what = "--crash");
  /// A kill at `when` of VERB#k.
  static Fault kill(When when, std::string verb, int k);

  bool operator==(const Fault& o) const;
  bool operator!=(const Fault& o) const { return !(*this == o); }
  bool operator<(const Fault& o) const;
  /// Acts on the same step at the same moment (the same point), whatever the kind.
  bool samePoint(const Fault& o) const { return when == o.when && process == o.process && verb == o.verb && k == o.k; }
};

void to_json(nlohmann::json& j, const Fault& f);
void from_json(const nlohmann::json& j, Fault& f);

/// A process label a fault may name: a consumer cN, a relay rN or an HTTP server sN (N from 1, at most 3 digits).
bool isProcessLabel(const std::string& label);
/// An HTTP server process's label: s1, s2, … (its replicas first, then the processes that replace them).
bool isServerLabel(const std::string& label);
/// A relay's label: r1, r2, … (docs/target-contract.md, "An outbox relay").
bool isRelayLabel(const std::string& label);

/// A server's name for people: "pg" -> "PostgreSQL", "valkey" -> "Valkey", "kafka" -> "Kafka".
std::string serverTitle(const std::string& server);

} // namespace idem
