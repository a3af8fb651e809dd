#pragma once
/// A scenario is data: a JSON file under scenarios/ (or anywhere) that tells the harness the tables and
/// initial rows, how each event field is generated, the default schedule, and the invariants, each one of
/// a small set of kinds bound to the user's own SQL. No scenario has C++ of its own.
/// The format is documented in docs/scenarios.md.
#include "plan/schedule.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace idem {

/// How one event field is generated.
///  seq      1, 2, 3, ... (the event number n)
///  uuid     a fresh random UUID for every execution (the event's identity across retries)
///  key      one of Scenario::keys
///  int      an integer in [min, max], written in decimal
///  pick     one of `values`
///  version  1, 2, 3, ... per value of field `of` (in event order)
///  map      map.at(value of field `of`)
///  const    `value`
struct FieldGen {
  std::string name;
  std::string gen;
  int64_t min = 0, max = 0;
  std::vector<std::string> values;
  std::string of;
  std::map<std::string, std::string> map;
  std::string value;
};

/// One invariant, checked on the final state against what the producer sent (distinct events).
///  sum-of-distinct   observed rows (key, value): value == initial[key] + sign * Σ field over distinct `distinct` per key
///  count-of-distinct observed rows (key, value): value == initial[key] + sign * count of distinct `distinct` per key
///  latest-version    observed rows (key, col...): for each key with events, the columns named in `columns` equal the
///                    fields of the event with the highest `version`; keys without events keep their initial row
///  final-value       observed rows (key, value): for each key with events, value == `value`
///  one-row-per-event observed rows (event id): every distinct `distinct` exactly once, nothing else
/// "initial" values are read with the same query after reset, before the producer sends anything.
struct Invariant {
  std::string name;
  std::string kind;
  std::string observed;            ///< SQL
  std::string key;                 ///< event field that selects the row (not for one-row-per-event)
  std::string field;               ///< sum-of-distinct: the event field summed
  std::string distinct = "event_id";
  int sign = 1;                    ///< +1 or -1
  std::string version;             ///< latest-version: the event field holding the version
  std::vector<std::string> columns;///< latest-version: observed column i+1 compared with event field columns[i]
  std::string value;               ///< final-value

  /// The columns `observed` returns for this kind: (key, value), (key, c1, c2, ...) or (id).
  size_t observedColumns() const;
};

struct DefaultSchedule {
  std::vector<Event> events;
  std::vector<StreamEntry> stream;
  std::vector<ClientOp> client; ///< HTTP scenarios
};

/// What an HTTP scenario declares its endpoint does with an Idempotency-Key (docs/http-contract.md): the
/// anchors disagree (the IETF draft, Stripe), so the scenario says which answers are right.
struct HttpPolicy {
  int created = 201;        ///< the status of a request that executed
  int mismatch = 422;       ///< the key reused with another payload
  /// A retry while the key's first request runs: this status, or 0 for "wait": the server blocks it until
  /// the first completes and then replays it.
  int inFlight = 409;
  int missingKey = 400;     ///< no key, or a malformed one
  bool replay5xx = false;   ///< a 5xx answer is stored and replayed (else a retry after a 5xx may execute)
  int leaseMs = 2000;       ///< after a crash, a retry completes (or gets a faithful answer) within this
  int64_t retentionMs = 86400000; ///< how long a completed key is remembered
  /// How a replay's body is compared with the first answer's: "json" (equal as JSON values, for answers
  /// that say they are JSON; others byte for byte) or "bytes" (byte for byte).
  std::string replayEquivalence = "json";
  /// How the server compares a retry's payload with the key's first one: "bytes" (byte for byte), "json"
  /// (equal JSON values) or "form" (the same name=value pairs in any order). Default: the body's kind. A
  /// retry with its fields reordered is the same payload under "json" and "form", another under "bytes".
  std::string payloadEquivalence = "json";
};

/// The endpoint of an HTTP scenario (kind "http").
struct HttpSpec {
  std::string method = "POST";
  std::string path = "/orders";
  std::string keyHeader = "Idempotency-Key";
  std::string keyFormat = "sf-string";  ///< "sf-string" (RFC 8941, quoted) or "opaque" (the header value)
  /// How the request body is written: "json" (application/json, an object) or "form"
  /// (application/x-www-form-urlencoded name=value pairs, as Stripe's API takes them).
  std::string body = "json";
  std::vector<std::string> numbers;     ///< body fields sent as JSON numbers (the others are strings)
  /// SQL returning (id, count): the effects of each request payload, by the value of its uuid field (ref).
  std::string effects;
  /// An optional sum the effects move: observed (key, value) == initial + sign × Σ field over effects.
  struct Ledger {
    std::string observed, key, field;
    int sign = -1;
  };
  std::optional<Ledger> ledger;
  HttpPolicy policy;
};

/// Poison events (docs/scenarios.md, "Poison events"): events a consumer can never apply, their field values,
/// and the handling the scenario declares for them: a dead-letter destination and a bound on deliveries.
struct PoisonSpec {
  /// The default schedule's poison events, by number: their `fields` take the values below.
  std::vector<int> events;
  /// The values that make an event poison: an event is poison when it carries every one of them. At least
  /// one is a value its generator never draws, so no generated event is poison by chance.
  std::map<std::string, std::string> fields;
  /// Where a poison event goes: a stream (Valkey), a queue (RabbitMQ) or a topic (Kafka) of the broker, named in the run's
  /// namespace, or a table. At most one is set.
  std::string deadLetterStream;
  std::string deadLetterQueue;
  std::string deadLetterTopic;
  std::string deadLetterTable;
  /// The broker destination declared: {"stream", name}, {"queue", name}, {"topic", name}, or {"", ""} for
  /// a table.
  std::pair<std::string, std::string> brokerDeadLetter() const {
    if (!deadLetterStream.empty()) return {"stream", deadLetterStream};
    if (!deadLetterQueue.empty()) return {"queue", deadLetterQueue};
    if (!deadLetterTopic.empty()) return {"topic", deadLetterTopic};
    return {"", ""};
  }
  /// The stream field, or the table column, that holds the event's id (the uuid field by default).
  std::string deadLetterId;
  /// The most times a poison event may be delivered before it is dead-lettered.
  int maxDeliveries = 1;
  /// check's generated schedules: every `every`-th event (by number) is poison; 0: none is.
  int every = 0;
};

/// The sink of a consumer scenario (docs/sink.md): the external call a consumer makes for each event it
/// applies — a payment provider's charge, a webhook — which idemproof answers in the provider's place, so
/// that every call is recorded and judged (sink:exactly-once, sink:agreement, sink:key-stable).
struct SinkSpec {
  std::string method = "POST";
  std::string path = "/charges";
  /// The member of the call's JSON body that carries the event's id (the value of the scenario's uuid field):
  /// it attributes each call to its event.
  std::string ref = "event_id";
  std::string keyHeader = "Idempotency-Key";
  /// The provider's policy. Honouring keys: a key's first answer is replayed to every later call with the
  /// key and the same payload (no execution), and another payload under a used key gets `mismatch`.
  /// Ignoring them: every call executes. The scenario's default; a command's --sink-policy overrides it.
  bool honoursKeys = true;
  int mismatch = 422;
  int status = 200;          ///< an executed call's answer status
  /// Its body (JSON); in its strings "{execution}" becomes the execution's number and "{ref}" the event's id.
  nlohmann::json answer = nlohmann::json::object();
  /// SQL returning one row per event the database booked, its first column the event's id: the database
  /// side of sink:agreement.
  std::string booked;
  /// How long the consumer waits for the provider's answer before it gives up (`timeout_ms`), 0 when not
  /// declared. Declared, sweep and check also delay a call kPastLeaseMs longer than that, before and after
  /// the sink executes it: an answer that comes too late, a request that reaches the provider after its
  /// client gave up.
  int timeoutMs = 0;
};

/// How far past max_deliveries a poison event may go on being delivered before the run ends: the consumer
/// redelivers it without end, and waiting for the deadline would prove nothing more.
inline constexpr int kPoisonMargin = 3;

struct Scenario {
  std::filesystem::path file;  ///< where it was read from
  std::string name;
  std::string description;
  std::string kind = "consumer"; ///< "consumer" (a stream) or "http" (an Idempotency-Key endpoint)
  std::optional<HttpSpec> http;  ///< kind "http"
  std::string create_sql;      ///< CREATE TABLE statements (run once per namespace)
  std::string initial_sql;     ///< INSERTs of the initial rows (run after every reset)
  std::vector<std::string> tables; ///< tables the harness empties on reset (scenario's own)
  std::vector<std::string> keys;   ///< values of the `key` generator
  std::vector<FieldGen> fields;
  std::vector<Invariant> invariants;
  DefaultSchedule default_schedule;
  /// How late the producer may send a retry of an event (`retry_window_ms`): a retry within it must still be
  /// deduplicated, one after it may be applied again. nullopt: the producer may retry at any time, so every
  /// retry must be deduplicated however much time an `age` fault simulated.
  std::optional<int64_t> retryWindowMs;
  /// `prune`: the statement a retention job of the consumer runs on its dedup rows, run by an `age` fault;
  /// `$1` is an interval (docs/scenarios.md, "Dedup retention"). Empty: nothing is pruned.
  std::string prune;
  std::optional<PoisonSpec> poison; ///< poison events and their declared handling, if the scenario has any
  std::optional<SinkSpec> sink;     ///< the external call its consumers make per event, if the scenario has one

  const FieldGen* fieldGen(const std::string& name) const;
  /// The name of the field generated with `uuid` that identifies an event ("event_id").
  std::string idField() const;
  /// Whether an event with these fields is poison: it carries every value of poison.fields.
  bool isPoison(const std::map<std::string, std::string>& fields) const;
};

/// Reads a scenario from a file path, or a bare NAME resolved as <scenarios dir>/NAME.json.
/// Throws UsageError naming the file and the field.
Scenario loadScenario(const std::string& nameOrFile, const std::filesystem::path& scenariosDir);
Scenario scenarioFromJson(const nlohmann::json& j, const std::string& what);

/// The default schedule as a Schedule value (fields filled in by the generators where the file leaves
/// them out, no kills).
Schedule defaultSchedule(const Scenario& s);

/// Fills in every non-uuid field of `events` in event order (seq, version, map, const), keeping values
/// already present (key, int, pick drawn by a generator or given by a file). Throws UsageError when a
/// key/int/pick field is missing.
void completeEvents(const Scenario& s, std::vector<Event>& events);

/// Throws UsageError "<what>: field '<field>[i]': why" when a request of `client` can't run under the
/// scenario's policy: a request after the retention of a scenario whose retention_ms is longer than the
/// client waits (kMaxRetentionWaitMs).
void checkClientOps(const Scenario& s, const std::vector<ClientOp>& client, const std::string& what,
                    const std::string& field);

/// check's generated schedules: makes every poison.every-th event of `events` poison (its poison values);
/// nothing without poison or without `every`.
void poisonGenerated(const Scenario& s, std::vector<Event>& events);

/// A fresh UUID v4 text for uuid fields at execution time.
std::string freshUuid();

} // namespace idem
