// sink-call-then-commit (payments): charges the event at the provider (POST /charges, no idempotency key),
// then books it (processed_events dedup, the wallet's debit and the payments row in one transaction), then
// XACKs. The booking is exactly once; the charge is not: killed after the charge and before COMMIT, the
// redelivered event is charged again (kill:after:CALL#1 — charged twice). An answer other than 2xx, or no
// answer, ends the process (exit 1): the event stays pending for the next one.
#include "payments.h"

using namespace idem::targets;

int main() {
  return paymentsMain("sink-call-then-commit", [](Payments& p) {
    return [&p, sink = sinkUrlFromEnv()](const Entry& e) {
      chargeOnce(sink, e);
      bookOnce(p.db, e);
      return Outcome::Ack;
    };
  });
}
