// Acknowledge what failed: the process's transaction failed (PostgreSQL answered an error, or a fault
// dropped its connection, answered an error or restarted the server), and it acknowledged an entry it held
// all the same, with no COMMIT since: an acknowledgement in a `finally`, on an error path, a reject without
// requeue (aio-pika's message.process() default), or a client's close() that commits the position it
// consumed to (kafka-python's with auto-commit on, its default). The broker never hands the entry again;
// the event is lost.
#include "checkers/patterns/patterns.h"
#include "checkers/request_faults.h"

#include <fmt/format.h>

namespace idem::detail::patterns {

namespace {

/// A statement of `process` that took effect by itself or a COMMIT that took effect: work done since.
bool tookEffect(const HistoryView& h, const std::string& process, const StepAt& s, int64_t before) {
  if (isCommit(*s.step)) return committed(*s.step);
  if (!isWrite(*s.step)) return false;
  auto c = commitOf(h, process, s.op, before);
  return c && c->op == s.op; // autocommit: the write is its own commit
}

/// A PostgreSQL step whose transaction failed while its process lived on: answered with an error (by the
/// server, or by an error fault in its name), or its connection dropped or cut under it.
bool failedOnPg(const ops::Step& s) {
  using O = ops::StepOutcome;
  return s.server == "pg" && !s.setUp &&
         (s.error || s.outcome == O::DroppedBefore || s.outcome == O::DroppedAfter || s.outcome == O::Forwarded ||
          s.outcome == O::Withheld || s.outcome == O::Answered);
}

/// A restart of PostgreSQL at a step of `process`: every connection drops, its open transaction with it.
bool restartsPg(const Fault& f) { return f.kind == "restart" && !f.args.empty() && f.args[0] == "pg"; }

} // namespace

Found ackAfterFailure(const HistoryView& h, const Violation& v) {
  if (v.kind != "lost") return std::nullopt;
  for (int n : v.events) {
    for (const AckRec* rec : h.acksOf(n)) {
      const AckRec& a = *rec;
      // The delivery to the process that acknowledged it: its last before the acknowledgement.
      const DeliveryRec* d = nullptr;
      for (const DeliveryRec* x : h.deliveriesOf(n))
        if (x->process == a.process && x->entry == a.entry && x->op < a.op) d = x;
      if (!d || writeFor(h, *d)) continue;
      // The process lived on from the delivery to the acknowledgement (a process replaced under the same name
      // starts over).
      bool lived = true;
      for (const ExitRec& x : h.exits) lived = lived && !(x.process == a.process && x.op > d->op && x.op < a.op);
      if (!lived) continue;
      // The last failure of its transaction while it held the entry, with nothing committed after it on that
      // transaction's connection. A process working several entries at once (a prefetch of 10 on a pool)
      // commits other entries' work on its other connections meanwhile: that work is no retry of this one.
      // A restart drops every connection: any work that took effect after it counts.
      int64_t failure = -1;
      int failedConn = 0; // 1-based; 0 after a restart: any connection
      std::string cause;
      for (const Op& op : h.ops) {
        if (op.index <= d->op || op.index >= a.op || op.process != a.process) continue;
        if (const auto* st = op.as<ops::Step>()) {
          if (failedOnPg(*st)) {
            failure = op.index;
            failedConn = st->conn;
            cause = st->error ? fmt::format("PostgreSQL answered {} with an error", st->name())
                              : fmt::format("its connection to PostgreSQL was cut at {}", st->name());
          } else if (failure >= 0 && (st->server != "pg" || failedConn == 0 || st->conn == failedConn) &&
                     tookEffect(h, a.process, {op.index, st}, a.op)) {
            failure = -1;
          }
        } else if (const auto* f = op.as<ops::FaultOp>(); f && restartsPg(f->fault)) {
          failure = op.index;
          failedConn = 0;
          cause = faultEvent(f->fault, op.process);
        }
      }
      if (failure < 0) continue;
      // On its way out: its next exit is its own, with no PostgreSQL step between.
      std::string out;
      for (const ExitRec& x : h.exits) {
        if (x.process != a.process || x.op < a.op) continue;
        bool quiet = x.by != "harness";
        for (const auto& s : stepsOf(h, a.process, a.op, x.op)) quiet = quiet && s.step->server != "pg";
        if (quiet) out = " as it shut down";
        break;
      }
      const ops::Step* ack = stepAt(h, a.op);
      // A discard (a reject without requeue: aio-pika's message.process() on an exception) settles it alike.
      const char* settled = ack && ack->discards ? "discarded" : "acknowledged";
      return make("ack-after-failure", "acknowledge what failed", {d->op, failure, a.op},
                  fmt::format("{} held entry {} of event {} ({}); then {}, and {} {} the entry ({}){} with no COMMIT "
                              "since: {}, it was never handed over again, event {} lost",
                              a.process, a.entry, n, d->label, cause, a.process, settled,
                              ack ? ack->name() : "its acknowledgement", out, settled, n),
                  std::string("acknowledge an entry only once its effect committed: when its transaction fails, "
                              "retry it, or leave the entry unacknowledged (exit, or hand it back) so that the broker "
                              "hands it again") +
                      (ack && ack->discards
                           ? "; hand a failed message back with a requeue (aio-pika: message.process(requeue=True); "
                             "rascal: ackOrNack(err, {strategy: 'nack', requeue: true}), since its ackOrNack(err) nacks "
                             "without requeue), or to a dead letter once it can never pass"
                           : ack && patternUpper(ack->verb).find("OFFSET") != std::string::npos
                                 ? "; a client that commits the position it consumed to as it closes (kafka-python's "
                                   "close() with auto-commit on, its default; confluent-kafka's close(), which commits "
                                   "the offsets poll() stored) must not close so after a failure: "
                                   "close(autocommit=False), or store or commit an offset only after its COMMIT "
                                   "(confluent-kafka: enable.auto.offset.store=False and store_offsets(msg) after it)"
                                 : ""));
    }
  }
  return std::nullopt;
}

} // namespace idem::detail::patterns
