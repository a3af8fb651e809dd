// HTTP: check-then-insert on the key. Two requests of one key ran at once; each looked the key up (a
// SELECT of the key's table) before the other's key row was committed, and with no unique constraint on
// the key (an INSERT with no ON CONFLICT went in) both executed. A server's step does not say which request
// it served: named only when those look-ups are every key row that committed while the key's requests
// ran, as many as the key's executions.
#include "checkers/patterns/patterns.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

namespace idem::detail::patterns {

namespace {

/// One connection's look-up of the key and the insert after it.
struct Lookup {
  std::string process;
  int conn = 0;
  StepAt select, insert, commit;
};

} // namespace

Found httpCheckThenInsert(const HistoryView& h, const Violation& v) {
  if (v.invariant != "http:exactly-once" || v.kind != "double-effect") return std::nullopt;
  // The key's requests, from the first written to the last answered.
  int64_t from = kNoOp, to = -1;
  for (int64_t i : v.ops) {
    if (i < 0 || static_cast<size_t>(i) >= h.ops.size()) continue;
    const Op& op = h.ops[static_cast<size_t>(i)];
    if (op.as<ops::Request>()) from = std::min(from, i);
    if (op.as<ops::Request>() || op.as<ops::Response>()) to = std::max(to, i);
  }
  if (from == kNoOp) return std::nullopt;
  // Per connection of a server process: its SELECTs in that time, each with the first INSERT after it into a
  // table the SELECT read, without ON CONFLICT, and where that INSERT committed.
  std::map<std::pair<std::string, int>, std::vector<StepAt>> selects;
  std::vector<Lookup> lookups;
  for (int64_t i = from + 1; i < to && static_cast<size_t>(i) < h.ops.size(); ++i) {
    const Op& op = h.ops[static_cast<size_t>(i)];
    const auto* st = op.as<ops::Step>();
    if (!st || st->server != "pg" || st->setUp || st->error || !st->reachedServer()) continue;
    auto& open = selects[{op.process, st->conn}];
    if (st->verb == "SELECT" && !st->tables.empty()) {
      open.push_back({i, st});
      continue;
    }
    if (st->verb != "INSERT" || says(*st, "ON CONFLICT")) continue;
    for (auto it = open.begin(); it != open.end(); ++it) {
      if (!shareTable(*it->step, *st)) continue;
      if (auto c = commitOf(h, op.process, i)) lookups.push_back({op.process, st->conn, *it, {i, st}, *c});
      open.erase(it);
      break;
    }
  }
  // A step does not say which request it served: the look-ups are the key's only when they are all that
  // committed while its requests ran, as many as its executions (another key's request in flight then
  // would make one more).
  if (!v.observed.is_number_integer() || static_cast<int64_t>(lookups.size()) != v.observed.get<int64_t>())
    return std::nullopt;
  // Two of them on different connections, each looking before the other's row was committed (READ
  // COMMITTED: a row not yet committed is not seen).
  for (size_t a = 0; a < lookups.size(); ++a) {
    for (size_t b = a + 1; b < lookups.size(); ++b) {
      const Lookup& x = lookups[a];
      const Lookup& y = lookups[b];
      if (x.process == y.process && x.conn == y.conn) continue;
      if (x.select.op > y.commit.op || y.select.op > x.commit.op) continue;
      auto who = [](const Lookup& l) { return fmt::format("{}'s connection {}", l.process, l.conn); };
      auto done = [](const Lookup& l) {
        return l.insert.op == l.commit.op ? l.insert.name() + " in autocommit" : l.insert.name() + ", " + l.commit.name();
      };
      return make("http-check-then-insert", "check-then-insert on the key",
                  {x.select.op, y.select.op, x.insert.op, y.insert.op, x.commit.op, y.commit.op},
                  fmt::format("two requests of {} ran at once: {} and {} each looked the key up ({}, {}) before the "
                              "other's key row was committed ({}; {}); with no unique constraint on the key both "
                              "inserts went in, and both requests executed",
                              v.key, who(x), who(y), x.select.name(), y.select.name(), done(x), done(y)),
                  "let the database decide: a unique key on the key column and, in the request's transaction, "
                  "INSERT INTO idempotency_keys … ON CONFLICT (key) DO NOTHING RETURNING key first (no row: read "
                  "the stored answer, or answer 409 while it is in flight); or pg_advisory_xact_lock(hashtext(key)) "
                  "before the look-up");
    }
  }
  return std::nullopt;
}

} // namespace idem::detail::patterns
