// sink-keyed (payments): charges the event with `Idempotency-Key: <event_id>` (the same payload each time),
// retrying a 5xx answer, a timeout or a broken connection up to 5 times, then books it (processed_events
// dedup, the debit and the payments row in one transaction), then XACKs. Against a provider that honours
// keys, a repeated charge (a retry, a redelivery after a kill) is answered with the first charge's answer:
// charged and booked exactly once. Against one that ignores them (--sink-policy ignore) it is charged twice.
#include "payments.h"

using namespace idem::targets;

int main() {
  return paymentsMain("sink-keyed", [](Payments& p) {
    return [&p, sink = sinkUrlFromEnv()](const Entry& e) {
      chargeKeyed(sink, chargeBody(e), e.field("event_id"));
      bookOnce(p.db, e);
      return Outcome::Ack;
    };
  });
}
