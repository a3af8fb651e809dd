// sink-keyed (payments): charges the event with `Idempotency-Key: <event_id>` (the same payload each time),
// retrying a 5xx answer, a timeout or a broken connection up to 5 times, then books it (processed_events
// dedup, the debit and the payments row in one transaction), then XACKs. Against a provider that honours
// keys, a repeated charge (a retry, a redelivery after a kill) is answered with the first charge's answer:
// charged and booked exactly once. Against one that ignores them (--sink-policy ignore) it is charged twice.
#include "payments.h"

#include <chrono>
#include <stdexcept>
#include <thread>

using namespace idem::targets;

namespace {

constexpr int kAttempts = 5;

void chargeWithRetries(const std::string& sink, const Entry& e) {
  const std::string key = e.field("event_id");
  for (int attempt = 1;; ++attempt) {
    SinkAnswer a;
    try {
      a = charge(sink, "POST", "/charges", chargeBody(e), key);
    } catch (const std::runtime_error&) { // no answer: timed out, or the connection broke
      if (attempt == kAttempts) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
      continue;
    }
    if (a.status >= 200 && a.status <= 299) return;
    if (a.status < 500 || attempt == kAttempts)
      throw std::runtime_error("the charge of " + key + " was answered " + std::to_string(a.status) + ": " +
                               oneLine(a.body));
    std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
  }
}

} // namespace

int main() {
  return consumerMain("sink-keyed", [] {
    Config config = configFromEnv();
    const std::string sink = sinkUrlFromEnv();
    pqxx::connection db(config.databaseUrl);
    Valkey valkey(config.valkeyUrl);
    preparePayments(db);
    runConsumer(valkey, config, [&](const Entry& e) {
      chargeWithRetries(sink, e);
      bookOnce(db, e);
      return Outcome::Ack;
    });
  });
}
