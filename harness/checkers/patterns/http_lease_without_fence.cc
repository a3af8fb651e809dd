// HTTP: a lock's lease trusted past its expiry. The server takes a lock on the key with a lease (SET
// lock:<key> <token> NX PX <ms>) and trusts it for as long as its request runs. When the holder's work
// outlasts the lease (a delay, a pause, a slow statement), the client's retry takes the expired lock, finds
// no stored answer and executes again, while the first holder goes on and commits too. A server's step does
// not say which request it served, so this is named only when the steps show it: the same lock taken twice
// (both answered OK), the lease's time gone between them with no release of the first, and a fault that held
// back the first holder's process (a delay, a hold, a pause) while the key's request was the one in flight,
// at a step of a transaction begun after the first take and committed after the second.
#include "checkers/patterns/patterns.h"
#include "checkers/tx_statement.h"
#include "checkers/request_faults.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace idem::detail::patterns {

namespace {

/// A Valkey lock taken: SET <key> <token> NX with PX, EX, PXAT or EXAT, answered OK.
struct Take {
  StepAt at;
  std::string key;
  std::optional<int64_t> leaseMs; ///< PX or EX; none for PXAT, EXAT
};

std::optional<Take> takeOf(const StepAt& st) {
  const ops::Step& s = *st.step;
  if (s.server != "valkey" || patternUpper(s.verb) != "SET" || s.error || !s.replied() || s.summary != "+OK")
    return std::nullopt;
  std::istringstream in(s.detail);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  if (words.size() < 4) return std::nullopt;
  bool nx = false, lease = false;
  std::optional<int64_t> ms;
  for (size_t i = 3; i < words.size(); ++i) {
    const std::string w = patternUpper(words[i]);
    nx = nx || w == "NX";
    if (w == "PX" || w == "EX" || w == "PXAT" || w == "EXAT") {
      lease = true;
      if ((w == "PX" || w == "EX") && i + 1 < words.size()) {
        try {
          ms = std::stoll(words[i + 1]) * (w == "EX" ? 1000 : 1);
        } catch (const std::exception&) {
          ms.reset();
        }
      }
    }
  }
  if (!nx || !lease) return std::nullopt;
  return Take{st, words[1], ms};
}

/// A command that may release a lock: DEL, UNLINK, GETDEL, or a script (a compare-and-delete).
bool mayRelease(const ops::Step& s) {
  static const std::set<std::string> verbs{"DEL", "UNLINK", "GETDEL", "EVAL", "EVALSHA", "FCALL"};
  return s.server == "valkey" && verbs.count(patternUpper(s.verb)) > 0;
}

/// A release that found nothing of its own to delete: "(integer) 0" or nil.
bool releasedNothing(const ops::Step& s) { return s.summary == "(integer) 0" || s.summary == "(nil)"; }

/// A committed PostgreSQL transaction: its BEGIN and its COMMIT.
struct Tx {
  StepAt begin, commit;
};

/// The committed transactions of `process` on PostgreSQL.
std::vector<Tx> transactionsOf(const HistoryView& h, const std::string& process) {
  std::vector<Tx> out;
  std::map<int, Tx> open; // per connection
  for (const auto& st : stepsOf(h, process)) {
    const ops::Step& s = *st.step;
    if (s.server != "pg") continue;
    if (isBegin(s) || (opensWithBegin(s) && !endsTransaction(s))) { // "BEGIN; INSERT …" opens it too
      open[s.conn] = Tx{st, {}};
    } else if (auto it = open.find(s.conn); it != open.end()) {
      if (endsTransaction(s)) {
        if (committed(s)) {
          it->second.commit = st;
          out.push_back(it->second);
        }
        open.erase(it);
      }
    }
  }
  return out;
}

} // namespace

Found httpLeaseWithoutFence(const HistoryView& h, const Violation& v) {
  const bool doubled = v.invariant == "http:exactly-once" && v.kind == "double-effect";
  if (!doubled && !(v.invariant == "http:replay" && v.kind == "replay-mismatch")) return std::nullopt;
  // The key's number and its values as its requests sent them (a structured-field string: its quotes are
  // not the key's).
  std::set<int> keys;
  std::set<std::string> values;
  int64_t from = kNoOp;
  for (int64_t i : v.ops) {
    if (i < 0 || static_cast<size_t>(i) >= h.ops.size()) continue;
    if (const auto* r = h.ops[static_cast<size_t>(i)].as<ops::Request>()) {
      std::string value = r->keyValue;
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
      if (!value.empty()) values.insert(value);
      if (r->key > 0) keys.insert(r->key);
      from = std::min(from, i);
    }
  }
  if (values.empty() || keys.size() != 1) return std::nullopt;
  auto ofKey = [&](const std::string& lock) {
    return std::any_of(values.begin(), values.end(), [&](const std::string& k) { return lock.find(k) != std::string::npos; });
  };
  // The locks on the key taken after its first request, in history order.
  std::vector<Take> takes;
  for (const Op& op : h.ops) {
    if (op.index <= from) continue;
    if (const auto* s = op.as<ops::Step>(); s && !s->setUp)
      if (auto t = takeOf({op.index, s}); t && ofKey(t->key)) takes.push_back(*t);
  }
  const auto faults = requestFaults(h.ops);
  for (size_t i = 0; i + 1 < takes.size(); ++i) {
    const Take& first = takes[i];
    const Take& second = takes[i + 1];
    if (second.key != first.key) continue;
    const std::string& holder = h.ops[static_cast<size_t>(first.at.op)].process;
    const std::string& taker = h.ops[static_cast<size_t>(second.at.op)].process;
    // The first lock was not given back before the second was taken: no release between them on its
    // connection, or naming its key, that deleted anything.
    bool released = false;
    for (int64_t j = first.at.op + 1; j < second.at.op; ++j) {
      const auto* s = h.ops[static_cast<size_t>(j)].as<ops::Step>();
      if (!s || !mayRelease(*s) || !s->reachedServer() || releasedNothing(*s)) continue;
      const bool itsConn = h.ops[static_cast<size_t>(j)].process == holder && s->conn == first.at.step->conn;
      if (itsConn || s->detail.find(first.key) != std::string::npos) released = true;
    }
    if (released) continue;
    // The lease ran out: as much time passed as it lasts (a lock deleted by something else is no lease's).
    // The times are the proxy's, when each command was complete: their forwarding may differ by a little.
    const int64_t elapsedUs = second.at.step->tReqUs - first.at.step->tReqUs;
    if (!first.leaseMs) continue;
    const int64_t leaseUs = *first.leaseMs * 1000;
    if (elapsedUs + std::min<int64_t>(50000, leaseUs / 10) < leaseUs) continue;
    // What held the holder back: a fault of its process between the takes, with the key's request the one
    // in flight, at a step of a transaction begun after the first take that committed after the second.
    const auto txs = transactionsOf(h, holder);
    for (const RequestFault& f : faults) {
      if (f.op < first.at.op || f.op > second.at.op || f.process != holder || f.fault.isKill()) continue;
      if (!f.request || !keys.count(f.request->key)) continue;
      std::optional<StepAt> held;
      for (const auto& st : stepsOf(h, holder, first.at.op))
        if (st.step->verb == f.fault.verb && st.step->k == f.fault.k) held = st;
      if (!held || held->step->server != "pg") continue;
      const auto tx = std::find_if(txs.begin(), txs.end(), [&](const Tx& t) {
        return t.begin.step->conn == held->step->conn && t.begin.op >= first.at.op && t.begin.op <= held->op &&
               t.commit.op >= held->op && t.commit.op > second.at.op;
      });
      if (tx == txs.end()) continue;
      std::vector<int64_t> cited{first.at.op, f.op, second.at.op, tx->begin.op, tx->commit.op};
      // Its release, when it came, finding the lock gone.
      std::string stale;
      for (const auto& st : stepsOf(h, holder, tx->commit.op)) {
        if (st.step->server == "valkey" && st.step->conn == first.at.step->conn && mayRelease(*st.step)) {
          if (releasedNothing(*st.step)) {
            stale = fmt::format("; its release ({}) then found the lock no longer its own", st.name());
            cited.push_back(st.op);
          }
          break;
        }
      }
      return make("http-lease-without-fence", "a lock's lease trusted past its expiry", cited,
                  fmt::format("{} took the lock {} with a lease of {} ms ({}) for {}, whose work outlasted it ({}): {} "
                              "took the same lock again {:.1f} s later ({}), before the first holder's transaction ({} "
                              "… {}) committed, and both executed{}",
                              holder, first.key, *first.leaseMs, first.at.name(), requestName(*f.request),
                              faultEvent(f.fault, f.process), taker, static_cast<double>(elapsedUs) / 1e6,
                              second.at.name(), tx->begin.name(), tx->commit.name(), stale),
                  "a lease is no fence: take a fencing token with the lock (INCR fence:<key>) and, first in the "
                  "order's transaction, write it into the key's row only when no larger token is there (no row "
                  "updated: a newer holder took over, so replay its answer); or keep the key in PostgreSQL: a unique "
                  "key and INSERT … ON CONFLICT DO NOTHING in the request's transaction, whose row lock lasts as "
                  "long as the work");
    }
  }
  return std::nullopt;
}

} // namespace idem::detail::patterns
