#pragma once
/// What a workspace makes on the user's broker (--amqp-url, --nats-url): a queue or a stream per run, named
/// after the workspace. Its broker deletes it when the workspace goes; on SIGINT or SIGTERM no destructor
/// runs, so Cleanup deletes the run's current one through `drop` (a connection of its own).
#include "core/cleanup.h"

#include <functional>
#include <memory>
#include <string>

namespace idem::brokers {

class OnUserBroker {
public:
  /// `what` names it in Cleanup ("RabbitMQ queue of <tag>"); `drop(name)` deletes one, its errors ignored.
  OnUserBroker(const std::string& what, std::function<void(const std::string&)> drop)
      : current_(std::make_shared<std::string>()) {
    auto current = current_;
    id_ = Cleanup::instance().add(what, [current, drop = std::move(drop)] {
      if (current->empty()) return;
      try {
        drop(*current);
      } catch (const std::exception&) {
      }
    });
  }
  ~OnUserBroker() { Cleanup::instance().remove(id_); }
  OnUserBroker(const OnUserBroker&) = delete;
  OnUserBroker& operator=(const OnUserBroker&) = delete;

  /// The run's queue or stream from now on, the one a signal deletes.
  void set(const std::string& name) { *current_ = name; }

private:
  std::shared_ptr<std::string> current_;
  int id_ = -1;
};

} // namespace idem::brokers
