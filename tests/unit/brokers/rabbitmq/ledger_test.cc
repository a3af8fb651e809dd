// The RabbitMQ broker's ledger (brokers/rabbitmq/client/ledger.h): what counts as still to be acknowledged
// while messages handed back to the queue are on their way there.
#include "brokers/rabbitmq/client/ledger.h"

#include <catch2/catch.hpp>

using idem::rabbitmq::client::Ledger;

namespace {

/// A ledger of `n` messages published, none delivered yet.
void publish(Ledger& l, int n) {
  for (int i = 1; i <= n; ++i) {
    const std::string id = "events.1-" + std::to_string(i);
    l.order.push_back(id);
    l.published[id] = {"{}", "e" + std::to_string(i)};
    l.undelivered.insert(id);
  }
}

const Ledger::Clock::time_point t0{};

} // namespace

TEST_CASE("rabbitmq ledger: what an ended connection held counts pending until the queue has it again",
          "[rabbitmq]") {
  Ledger l;
  publish(l, 3);
  int conn = 0;
  l.update(&conn, {"events.1-1", "events.1-2", "events.1-3"}, {}, {"events.1-1", "events.1-2", "events.1-3"}, t0);
  l.update(&conn, {"events.1-2", "events.1-3"}, {"events.1-1"}, {}, t0); // the first acknowledged
  CHECK(l.pending(0, t0) == 2);
  l.ended(&conn, t0);
  // The node has not requeued them yet: the queue is empty and no connection holds them.
  CHECK(l.pending(0, t0 + std::chrono::milliseconds(5)) == 2);
  CHECK(l.returning.size() == 2);
  // Requeued: the queue counts them, and they stop counting twice.
  CHECK(l.pending(2, t0 + std::chrono::milliseconds(10)) == 2);
  CHECK(l.returning.empty());
  CHECK(l.pending(0, t0 + std::chrono::milliseconds(20)) == 0); // then acknowledged elsewhere, say
}

TEST_CASE("rabbitmq ledger: a nack with requeue or a closed channel hands back what leaves a live connection unacknowledged",
          "[rabbitmq]") {
  Ledger l;
  publish(l, 2);
  int conn = 0;
  l.update(&conn, {"events.1-1", "events.1-2"}, {}, {"events.1-1", "events.1-2"}, t0);
  // A reject without requeue settles (the tracker reports it acknowledged); a requeue hands back.
  l.update(&conn, {}, {"events.1-1"}, {}, t0);
  CHECK(l.returning.count("events.1-1") == 0);
  CHECK(l.returning.count("events.1-2") == 1);
  CHECK(l.pending(0, t0) == 1);
  // Delivered again, to this connection or another: held, and no longer on its way.
  int other = 0;
  l.update(&other, {"events.1-2"}, {}, {"events.1-2"}, t0);
  CHECK(l.returning.empty());
  CHECK(l.pending(0, t0) == 1);
}

TEST_CASE("rabbitmq ledger: a message that never comes back stops counting after a while, and a reset forgets",
          "[rabbitmq]") {
  Ledger l;
  publish(l, 1);
  int conn = 0;
  l.update(&conn, {"events.1-1"}, {}, {"events.1-1"}, t0);
  l.ended(&conn, t0);
  CHECK(l.pending(0, t0 + Ledger::kBackWithin) == 1);
  CHECK(l.pending(0, t0 + Ledger::kBackWithin + std::chrono::milliseconds(1)) == 0);
  // A tracker of the last run's queue that ends after the reset hands back nothing of this run.
  int old = 0;
  l.update(&old, {"events.1-1"}, {}, {"events.1-1"}, t0);
  l.clear();
  l.ended(&old, t0);
  CHECK(l.returning.empty());
}
