// sink-commit-then-call (payments): books the event (processed_events dedup, the wallet's debit and the
// payments row in one transaction), XACKs it, and then charges it at the provider (POST /charges, no key) —
// only when this delivery booked it: a duplicate is neither booked nor charged again. Killed after COMMIT and
// before the charge, the redelivered event is a duplicate: booked, never charged (kill:after:COMMIT#1).
#include "payments.h"

using namespace idem::targets;

int main() {
  return paymentsMain("sink-commit-then-call", [](Payments& p) {
    return [&p, sink = sinkUrlFromEnv()](const Entry& e) {
      if (!bookOnce(p.db, e)) return Outcome::Ack; // a duplicate: booked (and charged, or not) before
      p.valkey.command({"XACK", p.config.stream, p.config.group, e.id});
      chargeOnce(sink, e);
      return Outcome::LeavePending; // acknowledged above already: the loop sends no second XACK
    };
  });
}
