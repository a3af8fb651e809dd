// sink-outbox (payments): the transactional outbox. Two processes of one binary:
//  - the consumer (`sink-outbox`) books each event (processed_events dedup, the debit and the payments row)
//    and writes its charge as an outbox row in the same transaction, then XACKs; it never calls the provider;
//  - the relay (`sink-outbox relay`, the target's second process) polls for an unsent row without a
//    transaction, then in one transaction takes the oldest (FOR UPDATE SKIP LOCKED), charges it with
//    `Idempotency-Key: outbox-<id>` (retrying a 5xx, a timeout or a broken connection with the same bytes and
//    key) and marks it sent.
// Killed between the charge and that COMMIT, the relay's replacement charges the row again with the same key:
// a provider that honours keys answers with the first charge (charged once); one that ignores them charges
// twice — the relay does not deduplicate the call itself, it relies on the provider's keys.
#include "payments.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

using namespace idem::targets;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) throw std::runtime_error(std::string(name) + " is not set");
  return v;
}

Handler consumer(Payments& p) {
  p.db.prepare("outbox", "INSERT INTO outbox(event_id, body) VALUES ($1, $2)");
  return [&p](const Entry& e) {
    bookOnce(p.db, e, [&](pqxx::work& tx) { tx.exec_prepared("outbox", e.field("event_id"), chargeBody(e)); });
    return Outcome::Ack;
  };
}

void relay() {
  pqxx::connection db(env("DATABASE_URL"));
  const std::string sink = sinkUrlFromEnv();
  db.prepare("unsent", "SELECT 1 FROM outbox WHERE sent_at IS NULL LIMIT 1");
  db.prepare("take", "SELECT id, body FROM outbox WHERE sent_at IS NULL ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED");
  db.prepare("sent", "UPDATE outbox SET sent_at = now() WHERE id = $1");
  while (!stopRequested()) {
    bool any = false;
    {
      pqxx::nontransaction poll(db); // no BEGIN/COMMIT for a poll that finds nothing
      any = !poll.exec_prepared("unsent").empty();
    }
    if (!any) {
      workFor(20);
      continue;
    }
    pqxx::work tx(db);
    const pqxx::result row = tx.exec_prepared("take");
    if (!row.empty()) {
      const std::string id = row[0][0].c_str();
      chargeKeyed(sink, row[0][1].c_str(), "outbox-" + id);
      tx.exec_prepared("sent", id);
    }
    tx.commit();
  }
}

} // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "relay") == 0) return consumerMain("sink-outbox relay", relay);
  return paymentsMain("sink-outbox", consumer);
}
