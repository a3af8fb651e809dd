// HTTP: the key kept in process memory. A key's payload took effect more than once, executed by different
// server processes (replicas behind one client, or a process and the one that replaced it after a kill),
// while no server step ever looked anything up: no Valkey command, no SELECT of a table, no INSERT that a
// unique key or ON CONFLICT could refuse, and no table but the effects' own. Whatever the server kept of
// its keys, it kept where another process cannot see it (a map in its memory): each process executes a key
// it has not seen itself.
#include "checkers/patterns/patterns.h"

#include <fmt/format.h>

#include <set>

namespace idem::detail::patterns {

namespace {

/// Whether `sql` (upper-cased) has `word` as a whole word.
bool hasWord(const std::string& sql, const std::string& word) {
  auto isWordChar = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = sql.find(word); at != std::string::npos; at = sql.find(word, at + 1)) {
    const bool before = at == 0 || !isWordChar(sql[at - 1]);
    const bool after = at + word.size() >= sql.size() || !isWordChar(sql[at + word.size()]);
    if (before && after) return true;
  }
  return false;
}

} // namespace

Found httpKeyInMemory(const HistoryView& h, const Violation& v) {
  if (v.invariant != "http:exactly-once" || v.kind != "double-effect" || !h.scenario.http) return std::nullopt;
  // The key's requests answered success, and the server processes that answered them.
  std::map<int, std::string> servers; // request id -> its server
  for (int64_t i : v.ops)
    if (i >= 0 && static_cast<size_t>(i) < h.ops.size())
      if (const auto* r = h.ops[static_cast<size_t>(i)].as<ops::Request>()) servers[r->id] = r->server;
  std::set<std::string> executedOn;
  std::vector<int64_t> answers;
  for (size_t i = 0; i < h.ops.size(); ++i) {
    const auto* a = h.ops[i].as<ops::Response>();
    if (!a || !servers.count(a->id) || !a->final() || a->status < 200 || a->status >= 300) continue;
    executedOn.insert(servers.at(a->id));
    answers.push_back(static_cast<int64_t>(i));
  }
  if (executedOn.size() < 2) return std::nullopt;
  // The tables the effects are read from: a server that names another keeps something there.
  const std::string effects = patternUpper(h.scenario.http->effects + " " +
                                           (h.scenario.http->ledger ? h.scenario.http->ledger->observed : ""));
  for (const Op& op : h.ops) {
    const auto* st = op.as<ops::Step>();
    if (!st || st->setUp || op.process == "harness") continue;
    if (st->server != "pg") return std::nullopt; // a Valkey command: a key store it may have looked at
    if (st->verb == "SELECT" && !st->tables.empty()) return std::nullopt;
    if (says(*st, "ON CONFLICT") || isDuplicateKey(*st) || st->verb == "MERGE") return std::nullopt;
    for (const auto& t : st->tables)
      if (!hasWord(effects, patternUpper(t))) return std::nullopt;
  }
  return make("http-key-in-memory", "the key kept in process memory", answers,
              fmt::format("{} was executed by {} server processes ({}), and no server step looked anything up: no "
                          "Valkey command, no SELECT of a table, no insert a unique key could refuse, no table but the "
                          "effects' own; what the server kept of its keys, another process could not see",
                          v.key, executedOn.size(), fmt::join(executedOn, ", ")),
              "keep the key and its answer in the database, in the effect's transaction, under a unique key "
              "(INSERT … ON CONFLICT (key) DO NOTHING, or a lock on the key before the look-up): every replica, "
              "and the process that replaces one, sees it");
}

} // namespace idem::detail::patterns
