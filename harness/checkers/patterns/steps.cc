#include "checkers/patterns/patterns.h"

#include "checkers/tx_statement.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <stdexcept>

namespace idem::detail::patterns {

std::string patternUpper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

namespace {

bool onPg(const ops::Step& s) { return s.server == "pg"; }

} // namespace

std::vector<StepAt> stepsOf(const HistoryView& h, const std::string& process, int64_t after, int64_t before) {
  std::vector<StepAt> out;
  for (const Op& op : h.ops) {
    if (op.index <= after || op.index >= before || op.process != process) continue;
    if (const auto* s = op.as<ops::Step>(); s && !s->setUp) out.push_back({op.index, s});
  }
  return out;
}

const ops::Step* stepAt(const HistoryView& h, int64_t index) {
  if (index < 0 || static_cast<size_t>(index) >= h.ops.size()) return nullptr;
  return h.ops[static_cast<size_t>(index)].as<ops::Step>();
}

bool isAck(const ops::Step& s) { return !s.acked.empty(); }

std::vector<std::string> newlyAcked(const HistoryView& h, const StepAt& at) {
  std::vector<std::string> out;
  for (const auto& e : at.step->acked) {
    if (std::none_of(h.acks.begin(), h.acks.end(), [&](const AckRec& a) { return a.op < at.op && a.entry == e; }))
      out.push_back(e);
  }
  return out.empty() ? at.step->acked : out;
}

std::string ackVerbOf(const HistoryView& h) {
  bool elsewhere = false; // a delivery from a broker other than Valkey
  for (const Op& op : h.ops) {
    const auto* s = op.as<ops::Step>();
    if (!s) continue;
    if (isAck(*s)) return s->verb;
    if (!s->delivered.empty() && s->server != "valkey") elsewhere = true;
  }
  return elsewhere ? "" : "XACK";
}

AckWords ackWords(const std::string& verb) {
  if (verb == "XACK") return {"XACK", "XACK the entry", "XACK"};
  // A commit of positions (COMMIT_OFFSET): what it acknowledges is the record's offset.
  if (patternUpper(verb).find("OFFSET") != std::string::npos)
    return {"commit its offset", "commit its offset", "the offset commit"};
  if (verb.empty()) return {"acknowledge it", "acknowledge the entry", "the acknowledgement"};
  return {"acknowledge it (" + verb + ")", "acknowledge the entry (" + verb + ")", verb};
}

bool isWrite(const ops::Step& s) {
  return onPg(s) && (s.verb == "INSERT" || s.verb == "UPDATE" || s.verb == "DELETE" || s.verb == "MERGE");
}

bool shareTable(const ops::Step& a, const ops::Step& b) {
  return std::any_of(a.tables.begin(), a.tables.end(), [&](const std::string& t) {
    return std::find(b.tables.begin(), b.tables.end(), t) != b.tables.end();
  });
}

bool isCommit(const ops::Step& s) { return onPg(s) && (s.verb == "COMMIT" || s.verb == "END"); }

bool committed(const ops::Step& s) {
  // A COMMIT of a transaction that a failed statement aborted is answered "ROLLBACK", with no error.
  return isCommit(s) && s.reachedServer() && !s.error && s.summary.rfind("ROLLBACK", 0) != 0;
}

bool isBegin(const ops::Step& s) { return txStatement(s).kind == TxStatement::Kind::Begin; }

namespace {

/// COMMIT, ROLLBACK, or a two-phase step: the transaction of the connection is over (a ROLLBACK TO is not).
bool ends(const TxStatement& t) {
  using K = TxStatement::Kind;
  return t.kind == K::Commit || t.kind == K::Rollback || t.kind == K::Prepare || t.kind == K::Prepared;
}

/// The last index of `name` in the savepoints (PostgreSQL allows a name twice: the newer one counts).
std::optional<size_t> savepointIndex(const std::vector<std::string>& savepoints, const std::string& name) {
  for (size_t i = savepoints.size(); i-- > 0;)
    if (savepoints[i] == name) return i;
  return std::nullopt;
}

} // namespace

bool endsTransaction(const ops::Step& s) { return ends(txStatement(s)); }

bool failsTransaction(const Fault& f) { return f.kind == "drop" || f.kind == "error" || f.kind == "restart"; }

bool says(const ops::Step& s, const std::string& word) {
  return patternUpper(s.detail).find(patternUpper(word)) != std::string::npos;
}

namespace {

/// The first statement of a SQL text: up to its first `;` outside quotes.
std::string firstStatement(const std::string& sql) {
  char quote = 0;
  for (size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == ';') {
      return sql.substr(0, i);
    }
  }
  return sql;
}

/// INSERT … ON CONFLICT [target] DO NOTHING; not DO UPDATE (an upsert writes the effect again).
bool doesNothingOnConflict(const ops::Step& s) {
  const std::string u = patternUpper(firstStatement(namedStatementText(s)));
  const size_t at = u.find("ON CONFLICT");
  if (at == std::string::npos) return false;
  const size_t nothing = u.find("DO NOTHING", at), update = u.find("DO UPDATE", at);
  return nothing != std::string::npos && (update == std::string::npos || nothing < update);
}

bool namedAsMark(const ops::Step& s) {
  std::vector<std::string> names = s.tables;
  if (names.empty()) names.push_back(s.detail);
  for (const auto& t : names) {
    const std::string u = patternUpper(t);
    for (const char* w : {"PROCESSED", "SEEN", "DEDUP", "INBOX", "IDEMPOT"})
      if (u.find(w) != std::string::npos) return true;
  }
  return false;
}

} // namespace

bool isDuplicateKey(const ops::Step& s) {
  return onPg(s) && s.error && s.summary.find("duplicate key value violates unique constraint") != std::string::npos;
}

bool insertedNone(const ops::Step& s) {
  return onPg(s) && !s.error && s.verb == "INSERT" && s.summary.rfind("INSERT 0 0", 0) == 0;
}

std::set<std::string> keyedTables(const HistoryView& h) {
  std::set<std::string> out;
  for (const Op& op : h.ops) {
    const auto* s = op.as<ops::Step>();
    if (s && s->verb == "INSERT" && isDuplicateKey(*s)) out.insert(s->tables.begin(), s->tables.end());
  }
  return out;
}

Mark markOf(const ops::Step& s, const std::set<std::string>& keyed) {
  if (s.server == "valkey") {
    if (patternUpper(s.verb) == "SETNX") return Mark::Shape;
    if (patternUpper(s.verb) != "SET") return Mark::None;
    const std::string d = patternUpper(s.detail);
    const bool nx = d.size() >= 3 && (d.find(" NX ") != std::string::npos || d.compare(d.size() - 3, 3, " NX") == 0);
    return nx ? Mark::Shape : Mark::None;
  }
  if (!onPg(s) || s.verb != "INSERT") return Mark::None;
  // The name first only to tell how sure the answer is: a mark named so is one whatever its shape.
  if (namedAsMark(s)) return Mark::Named;
  if (doesNothingOnConflict(s)) return Mark::Shape;
  for (const auto& t : s.tables)
    if (keyed.count(t)) return Mark::Shape;
  return Mark::None;
}

bool isMark(const ops::Step& s, const std::set<std::string>& keyed) { return markOf(s, keyed) != Mark::None; }

std::optional<StepAt> commitOf(const HistoryView& h, const std::string& process, int64_t write, int64_t before) {
  using K = TxStatement::Kind;
  const ops::Step* w = stepAt(h, write);
  if (!w) return std::nullopt;
  // A transaction is its connection's: a process with a pool runs others on its other connections.
  auto sameConn = [&](const StepAt& st) { return st.step->server == w->server && st.step->conn == w->conn; };
  // In a transaction when a BEGIN on the write's connection came after its last COMMIT or ROLLBACK before
  // the write; a ROLLBACK TO SAVEPOINT ends no transaction. The savepoints of that transaction still open.
  bool open = false;
  std::vector<std::string> savepoints;
  auto apply = [&](const TxStatement& t) {
    if (t.kind == K::Savepoint) {
      savepoints.push_back(t.savepoint);
    } else if (t.kind == K::Release || t.kind == K::RollbackTo) {
      // RELEASE drops the savepoint and those after it; ROLLBACK TO keeps it and drops those after it.
      if (auto at = savepointIndex(savepoints, t.savepoint)) savepoints.resize(*at + (t.kind == K::RollbackTo));
    }
  };
  // A step opens a transaction (BEGIN; or "BEGIN; INSERT …", a pipelined BEGIN) or ends one (COMMIT,
  // ROLLBACK; or "…; COMMIT" that committed, a whole transaction in one step), or neither.
  const auto opens = [](const ops::Step& s, const TxStatement& t) { return t.kind == K::Begin || opensWithBegin(s); };
  const auto closes = [](const ops::Step& s, const TxStatement& t) { return ends(t) || commitsWithin(s); };
  for (const auto& st : stepsOf(h, process, -1, write)) {
    if (!sameConn(st)) continue;
    const TxStatement t = txStatement(*st.step);
    if (opens(*st.step, t) || closes(*st.step, t)) {
      open = !closes(*st.step, t);
      savepoints.clear();
    } else if (!st.step->error) {
      apply(t);
    }
  }
  if (opensWithBegin(*w)) { // the write is its transaction's first statement, sent with its BEGIN
    open = true;
    savepoints.clear();
  }
  if (open && commitsWithin(*w)) return StepAt{write, w};
  if (!open) {
    if (w->reachedServer() && !w->error) return StepAt{write, w};
    return std::nullopt;
  }
  // The savepoints set before the write and not released since: a ROLLBACK TO one of them undoes it.
  size_t enclosing = savepoints.size();
  for (const auto& st : stepsOf(h, process, write, before)) {
    if (!sameConn(st)) continue;
    const TxStatement t = txStatement(*st.step);
    if (ends(t)) {
      if (committed(*st.step)) return st;
      return std::nullopt;
    }
    if (st.step->error || t.kind == K::Other || t.kind == K::Begin) continue;
    const auto at = savepointIndex(savepoints, t.savepoint);
    if (t.kind == K::RollbackTo && at && *at < enclosing) return std::nullopt;
    apply(t);
    enclosing = std::min(enclosing, savepoints.size());
  }
  return std::nullopt;
}

namespace {

/// The units of work of `process` in (after, before), stopping at its next read that delivered: each a
/// transaction on one connection that wrote (its first write), or a write in autocommit; and every write.
struct Work {
  std::vector<StepAt> units, writes;
};

Work workAfter(const HistoryView& h, const std::string& process, int64_t after, int64_t before = kNoOp) {
  using K = TxStatement::Kind;
  Work out;
  std::map<std::pair<std::string, int>, bool> open, counted; // per connection: in a transaction; its unit taken
  for (const auto& st : stepsOf(h, process, after, before)) {
    if (!st.step->delivered.empty()) break;
    const auto conn = std::make_pair(st.step->server, st.step->conn);
    const TxStatement t = txStatement(*st.step);
    if (t.kind == K::Begin || opensWithBegin(*st.step)) {
      open[conn] = true;
      counted[conn] = false;
    }
    if (isWrite(*st.step)) {
      out.writes.push_back(st);
      if (!open[conn] || !counted[conn]) out.units.push_back(st);
      counted[conn] = open[conn];
    }
    if (ends(t) || commitsWithin(*st.step)) open[conn] = false;
  }
  return out;
}

} // namespace

std::optional<StepAt> writeFor(const HistoryView& h, const DeliveryRec& d) {
  const ops::Step* read = stepAt(h, d.op);
  if (!read) return std::nullopt;
  size_t i = 0;
  while (i < read->delivered.size() && read->delivered[i].entry != d.entry) ++i;
  // A process that read again before it had done a unit of work for each entry of its last read (a client
  // that reads ahead, librdkafka's prefetch) may still be working on those: whose work follows this read the
  // order cannot tell. The same process, not one that replaced it.
  const StepAt* previous = nullptr;
  const auto before = stepsOf(h, d.process, -1, d.op);
  for (auto it = before.rbegin(); it != before.rend() && !previous; ++it)
    if (!it->step->delivered.empty()) previous = &*it;
  if (previous) {
    bool replaced = false;
    for (const ExitRec& x : h.exits) replaced = replaced || (x.process == d.process && x.op > previous->op && x.op < d.op);
    if (!replaced && workAfter(h, d.process, previous->op, d.op).units.size() < previous->step->delivered.size())
      return std::nullopt;
  }
  // The entries are worked through in order: the i-th entry's is the i-th unit (a transaction per entry), or
  // the i-th write of the batch's one transaction (a write per entry); a process that stopped part-way did
  // the first ones. More units than entries (a transaction tried again) and no other count say whose is whose.
  const Work work = workAfter(h, d.process, d.op);
  const size_t entries = read->delivered.size();
  const std::vector<StepAt>* per = work.units.size() == 1 && entries > 1 && work.writes.size() == entries ? &work.writes
                                   : work.units.size() <= entries                                        ? &work.units
                                                                                                           : nullptr;
  if (!per || i >= per->size()) return std::nullopt;
  const StepAt& w = (*per)[i];
  if (commitOf(h, d.process, w.op)) return w;
  return std::nullopt;
}

bool overlappingTransactions(const HistoryView& h, const std::string& process, int64_t after, int64_t before) {
  std::vector<const ops::Step*> steps;
  for (const auto& st : stepsOf(h, process, after, before)) steps.push_back(st.step);
  return detail::overlappingTransactions(steps);
}

bool committedBetween(const HistoryView& h, const std::string& process, int64_t after, int64_t before) {
  for (const auto& st : stepsOf(h, process, after, before))
    if (committed(*st.step)) return true;
  return false;
}

const KillRec* killOf(const HistoryView& h, const std::string& process, int64_t after) {
  return h.killAfter(process, after);
}

std::string eventIdOf(const HistoryView& h, int n) {
  auto sends = h.sendsOf(n);
  return sends.empty() ? "" : sends.front()->event_id;
}

std::string versionOf(const HistoryView& h, int n) {
  auto it = h.eventFields.find(n);
  if (it == h.eventFields.end()) return "";
  for (const auto& f : h.scenario.fields) {
    if (f.gen != "version") continue;
    auto v = it->second.find(f.name);
    if (v != it->second.end()) return v->second;
  }
  return "";
}

Pattern make(std::string id, std::string name, std::vector<int64_t> ops, std::string explanation, std::string fix) {
  if (idem::patternName(id) != name) throw std::logic_error("anti-pattern " + id + ": its name is not the table's");
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  return Pattern{std::move(id), std::move(name), std::move(ops), std::move(explanation), std::move(fix)};
}

Found classify(const HistoryView& h, const Violation& v) {
  // From the most specific: a race or a broken connection explains a duplicate before a plain missing dedup.
  for (auto* fn : {retentionShorterThanWindow, httpNoRequestHash, httpKeyOutsideTransaction, httpLeaseWithoutFence,
                   httpCheckThenInsert, httpAnswerBeforeCommit, httpSessionLockLeft, httpKeyInMemory,
                   revokedMemberWorks,
                   pausedMemberWorks, consumerDeletedWithPending, ackBeforeEffect, dedupOutsideTransaction, ackAfterFailure, checkThenAct, retryAfterAmbiguousCommit,
                   dedupOnBrokerId, effectWithoutDedup, unguardedVersion, poisonRetriedForever, poisonDropped,
                   sinkCallCommitOrder, sinkKeyOnly, sinkKeyPerAttempt, sinkCallWithoutKey}) {
    if (auto p = fn(h, v)) return p;
  }
  return std::nullopt;
}

} // namespace idem::detail::patterns

namespace idem {

std::string patternName(const std::string& id) {
  static const std::map<std::string, std::string> names{
      {"ack-before-effect", "acknowledge before the effect is durable"},
      {"ack-after-failure", "acknowledge what failed"},
      {"effect-without-dedup", "effect without dedup"},
      {"dedup-outside-transaction", "dedup mark outside the effect's transaction"},
      {"dedup-on-broker-id", "dedup on the broker's id"},
      {"check-then-act", "check-then-act"},
      {"unguarded-version", "unguarded version"},
      {"retry-after-ambiguous-commit", "retry without dedup after an ambiguous commit"},
      {"http-key-outside-transaction", "the key's state outside the effect's transaction"},
      {"http-no-request-hash", "no request hash"},
      {"http-check-then-insert", "check-then-insert on the key"},
      {"http-lease-without-fence", "a lock's lease trusted past its expiry"},
      {"http-answer-before-commit", "the answer before the COMMIT"},
      {"http-session-lock-left", "a session lock left held after an error"},
      {"http-unlock-on-other-connection", "an unlock sent on another connection"},
      {"http-key-in-memory", "the key kept in process memory"},
      {"revoked-member-works", "a revoked member keeps working"},
      {"paused-member-works", "a paused consumer wakes as a zombie"},
      {"retention-shorter-than-window", "dedup retention shorter than the retry window"},
      {"poison-retried-forever", "poison event retried forever"},
      {"poison-dropped", "poison event dropped"},
      {"consumer-deleted-with-pending", "a consumer deleted with its pending entries"},
      {"sink-call-commit-order", "call before commit / commit before call (sink)"},
      {"sink-key-only", "the provider's key as the only dedup (sink)"},
      {"sink-key-per-attempt", "a key per attempt, not per event (sink)"},
      {"sink-call-without-key", "a charge called again without a key (sink)"},
  };
  auto it = names.find(id);
  return it == names.end() ? "" : it->second;
}

} // namespace idem
