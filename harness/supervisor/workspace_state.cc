/// The database side of a workspace: the scenario's SQL checked against the tables it created, the state
/// reset before each run, and what the checkers read at the start and the end (the invariants' rows, the
/// broker's leftovers, dead letters, the outbox).
#include "supervisor/workspace_impl.h"

#include "core/error.h"

#include <fmt/format.h>

#include <set>

namespace idem {

void Workspace::Impl::checkScenarioShapes() {
  // The scenario's JSON was valid; now its SQL against the tables it created: every table it names exists,
  // and every observed query returns the columns its kind reads (docs/scenarios.md).
  for (size_t i = 0; i < scenario.tables.size(); ++i) {
    std::string literal;
    for (char c : scenario.tables[i]) literal += c == '\'' ? std::string("''") : std::string(1, c);
    auto found = pg->query("SELECT to_regclass('" + literal + "') IS NOT NULL");
    if (found.empty() || found[0][0] != "t")
      throw UsageError(fmt::format("{}: field 'tables.names[{}]': no table '{}' after tables.create", scenario.file.string(),
                                   i, scenario.tables[i]));
  }
  if (scenario.http) { // each returns (id, count) / (key, value), the second a whole number
    std::vector<std::pair<std::string, std::string>> queries{{"http.effects", scenario.http->effects}};
    if (scenario.http->ledger) queries.emplace_back("http.ledger.observed", scenario.http->ledger->observed);
    for (const auto& [field, sql] : queries) {
      const char* shape = field == "http.effects" ? "the payload's reference, its count" : "key, value";
      size_t columns = 0;
      std::vector<std::string> types;
      try {
        pg->rows(sql, &columns, &types);
      } catch (const std::exception& e) {
        throw UsageError(fmt::format("{}: field '{}': {}", scenario.file.string(), field, e.what()));
      }
      if (columns != 2)
        throw UsageError(fmt::format("{}: field '{}': returns {} column{}, it must return 2 ({})", scenario.file.string(),
                                     field, columns, columns == 1 ? "" : "s", shape));
      static const std::set<std::string> whole{"smallint", "integer", "bigint", "numeric"};
      if (!whole.count(types[1]))
        throw UsageError(fmt::format("{}: field '{}': its second column is of type {}, it must be a whole number ({}, "
                                     "in this order)", scenario.file.string(), field, types[1], shape));
    }
  }
  for (const auto& inv : scenario.invariants) {
    size_t columns = 0;
    try {
      pg->rows(inv.observed, &columns);
    } catch (const std::exception& e) {
      throw UsageError(fmt::format("{}: invariant '{}': field 'observed': {}", scenario.file.string(), inv.name, e.what()));
    }
    if (columns != inv.observedColumns())
      throw UsageError(fmt::format("{}: invariant '{}': field 'observed': returns {} column{}, a {} invariant reads {}",
                                   scenario.file.string(), inv.name, columns, columns == 1 ? "" : "s", inv.kind,
                                   inv.observedColumns()));
  }
}

void Workspace::Impl::reset() {
  std::string sql = "BEGIN;";
  if (servers.embedded) sql += "SET LOCAL session_replication_role = replica;";
  for (const auto& t : tables) sql += "DELETE FROM " + t + ";";
  sql += scenario.initial_sql;
  sql += ";COMMIT;";
  try {
    pg->exec(sql);
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("{}: field 'tables.initial': {}", scenario.file.string(), e.what()));
  }
}

Observed Workspace::Impl::observe(std::chrono::milliseconds budget) {
  Observed observed;
  auto rowsOf = [&](const std::string& sql, const std::string& field) {
    try {
      return pg->rows(sql);
    } catch (const PgTimeout&) {
      // Not the scenario's fault alone: the run had this long left. The run can't be judged.
      throw std::runtime_error(fmt::format("the scenario's query {} ({}) did not finish within the {} ms left of "
                                           "--deadline; raise --deadline, or make the query faster",
                                           field, scenario.file.string(), budget.count()));
    } catch (const std::exception& e) {
      throw UsageError(fmt::format("{}: {}: {}", scenario.file.string(), field, e.what()));
    }
  };
  for (const auto& inv : scenario.invariants)
    observed[inv.name] = rowsOf(inv.observed, fmt::format("invariant '{}': field 'observed'", inv.name));
  if (scenario.http) { // HTTP: the effects per payload reference, and the ledger they move
    observed["effects"] = rowsOf(scenario.http->effects, "field 'http.effects'");
    if (scenario.http->ledger) observed["ledger"] = rowsOf(scenario.http->ledger->observed, "field 'http.ledger.observed'");
  }
  // The sink: the events the database booked, the database side of the agreement with the calls executed.
  if (scenario.sink) observed["sink:booked"] = rowsOf(scenario.sink->booked, "field 'sink.booked'");
  return observed;
}

ops::Final Workspace::Impl::finalState() {
  ops::Final f;
  const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - runStarted);
  const auto budget = std::max(options.deadline - spent, kObserveFloor);
  pg->setTimeout(budget);
  try {
    f.observed = observe(budget);
  } catch (...) {
    pg->setTimeout(options.deadline);
    throw;
  }
  pg->setTimeout(options.deadline);
  auto left = broker->leftover();
  for (auto& p : left.pending) f.pending.push_back({p.entry, p.consumer, p.idleMs, p.deliveries});
  f.undelivered = std::move(left.undelivered);
  f.settledUnseen = std::move(left.settledUnseen);
  f.stream = std::move(left.stream);
  f.lastDelivered = std::move(left.position);
  readDeadLetters(f);
  f.outboxPending = outboxPending();
  return f;
}

std::optional<int64_t> Workspace::Impl::outboxPending() {
  if (target.relay.empty()) return std::nullopt;
  auto bad = [&](const std::string& why) {
    return UsageError(fmt::format("{}: field 'outbox.pending': {}", target.manifest.string(), why));
  };
  nlohmann::json r;
  try {
    r = pg->query(target.outboxPending);
  } catch (const std::exception& e) {
    throw bad(e.what());
  }
  if (!r.is_array() || r.size() != 1 || !r[0].is_array() || r[0].empty())
    throw bad(fmt::format("returned {} rows, not one row with the count of unsent outbox rows", r.is_array() ? r.size() : 0));
  const auto& v = r[0][0];
  try {
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_string()) {
      size_t used = 0;
      int64_t n = std::stoll(v.get<std::string>(), &used);
      if (used == v.get<std::string>().size() && n >= 0) return n;
    }
  } catch (const std::exception&) {
  }
  throw bad(fmt::format("returned {}, not a count of unsent outbox rows", v.dump()));
}

void Workspace::Impl::readDeadLetters(ops::Final& f) {
  if (!scenario.poison) return;
  const auto& p = *scenario.poison;
  if (!deadLetterStream.empty()) {
    f.deadLetterWhere = p.brokerDeadLetter().first + " " + deadLetterStream;
    for (auto& d : broker->deadLetters(p.deadLetterId)) f.deadLetters.push_back({d.id, d.eventId});
    return;
  }
  f.deadLetterWhere = "table " + p.deadLetterTable;
  Rows rows;
  try {
    rows = pg->rows(fmt::format("SELECT {}::text FROM {}", p.deadLetterId, p.deadLetterTable));
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("{}: field 'poison.dead_letter': {}", scenario.file.string(), e.what()));
  }
  for (size_t i = 0; i < rows.size(); ++i)
    f.deadLetters.push_back({std::to_string(i + 1), rows[i].empty() ? std::nullopt : rows[i][0]});
}

} // namespace idem
