#pragma once
/// What the run's trackers and its producer share across the hub's I/O thread and the supervisor's: the
/// messages published (to publish again on `forget`), those no consumer has been delivered yet, those
/// acknowledged, what each live connection holds unacknowledged (RabbitMQ counts these only in its
/// management API, which the embedded node does not run), and what was handed back to the queue and is not
/// known to be there again.
///
/// Handed back: a connection that ended, a channel closed, a nack or a recover with requeue. The broker puts
/// those messages back in the queue after it has processed the close or the request (its queue process, after
/// the channel's), a little later than the proxy saw them leave the client: between the two the queue's ready
/// count does not have them and no connection holds them. Counted pending meanwhile, so that a run is not
/// taken for settled (and a consumer that exited on an error for idle) while they are on their way back.
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace idem::rabbitmq::client {

struct Ledger {
  using Clock = std::chrono::steady_clock;
  /// How long a message handed back counts as on its way when nothing shows it back: far longer than a
  /// node takes to requeue, so that only a message the broker never had again (a queue the consumer purged)
  /// stops counting.
  static constexpr std::chrono::seconds kBackWithin{10};

  struct Published {
    std::string body, eventId;
  };
  std::mutex mu;
  std::vector<std::string> order; ///< entry ids as published
  std::map<std::string, Published> published;
  std::set<std::string> undelivered, acked;
  std::map<const void*, std::set<std::string>> unacked; ///< by live connection (its tracker)
  std::map<std::string, Clock::time_point> returning;  ///< handed back, not yet seen in the queue again
  bool noAck = false; ///< a connection asked for deliveries the broker settles as it sends them

  std::set<std::string> allUnacked() const {
    std::set<std::string> out;
    for (const auto& [c, s] : unacked) out.insert(s.begin(), s.end());
    return out;
  }

  /// Connection `who` now holds `now` unacknowledged: what it held before and neither holds nor acknowledged
  /// was handed back. `acks` and `delivered` (what its last message settled and delivered) first.
  void update(const void* who, const std::set<std::string>& now, const std::vector<std::string>& acks,
              const std::vector<std::string>& delivered, Clock::time_point at) {
    for (const auto& id : acks) {
      acked.insert(id);
      returning.erase(id);
    }
    for (const auto& id : delivered) {
      undelivered.erase(id);
      returning.erase(id); // delivered again: held (or settled) from here on
    }
    auto& before = unacked[who];
    for (const auto& id : before)
      if (!now.count(id)) handBack(id, at);
    before = now;
  }

  /// Connection `who` ended: what it held unacknowledged is the broker's again.
  void ended(const void* who, Clock::time_point at) {
    auto it = unacked.find(who);
    if (it == unacked.end()) return;
    for (const auto& id : it->second) handBack(id, at);
    unacked.erase(it);
  }

  /// The messages still to be acknowledged, with `ready` the queue's ready count: ready, held by a live
  /// connection, or on their way back. Those on their way are back once every message not acknowledged is
  /// accounted for by the queue and the connections (the node requeues a channel's messages at once), or
  /// after kBackWithin.
  int64_t pending(int64_t ready, Clock::time_point at) {
    const auto held = allUnacked();
    for (auto it = returning.begin(); it != returning.end();)
      it = held.count(it->first) || at - it->second > kBackWithin ? returning.erase(it) : std::next(it);
    if (!returning.empty()) {
      int64_t open = 0;
      for (const auto& id : order) open += acked.count(id) ? 0 : 1;
      if (ready + static_cast<int64_t>(held.size()) >= open) returning.clear();
    }
    return ready + static_cast<int64_t>(held.size() + returning.size());
  }

  void clear() {
    order.clear();
    published.clear();
    undelivered.clear();
    acked.clear();
    returning.clear();
    noAck = false;
  }

private:
  void handBack(const std::string& id, Clock::time_point at) {
    // Of this run's queue and not acknowledged (a tracker of the last run's queue may end after a reset).
    if (!acked.count(id) && published.count(id)) returning.emplace(id, at);
  }
};

} // namespace idem::rabbitmq::client
