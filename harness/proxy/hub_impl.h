#pragma once
/// The hub's private parts, shared by its files: hub.cc (the Hub's own methods: listeners, owners,
/// refusing), and hub_conn.cc and hub_decisions.cc (one proxied connection, hub_conn.h: its decode loop, and
/// the decisions it carries out).
#include "proxy/hub.h"

#include <boost/asio.hpp>

#include <array>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

namespace idem::proxy {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace hub_detail { // named: Hub::Impl holds these (an anonymous namespace would warn in a unity build)

struct Conn;
using ConnPtr = std::shared_ptr<Conn>;

/// The listeners a process has, one per server, in this order (Hub::refuse finds them by it).
constexpr size_t kServers = 3;
inline size_t serverIndex(Server s) { return static_cast<size_t>(s); }

} // namespace hub_detail

using hub_detail::Conn;
using hub_detail::ConnPtr;

struct Hub::Impl {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  Upstream pg;
  BrokerSide broker;
  std::optional<SinkSide> sink;
  StepListener& listener;
  std::thread thread;

  struct Owner {
    std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
    std::set<ConnPtr> conns;
    int connections = 0;
    bool cut = false;
    std::array<int, hub_detail::kServers> ports{}; ///< per server: the listeners' ports while refuse() has them closed
    /// Per server, while refused: a socket bound to the listener's port and not listening. A connection to it
    /// is refused all the same, and the port is nobody else's meanwhile (an outgoing connection of any
    /// process would otherwise be handed it as its own port, and the listener could not bind it again).
    std::array<std::unique_ptr<tcp::socket>, hub_detail::kServers> held{};
  };
  std::map<int, Owner> owners;                 // I/O thread only
  std::map<int64_t, std::weak_ptr<Conn>> held; // token id -> the connection holding that step (I/O thread)
  mutable std::mutex countMu;
  std::map<int, int> connCounts; // read from any thread

  Impl(Upstream p, BrokerSide b, StepListener& l) : pg(std::move(p)), broker(std::move(b)), listener(l) {}

  void accept(int owner, Server server, tcp::acceptor& acc);
  void cut(int owner);
  void forget(const ConnPtr& c);
  void release(int64_t token);

  /// Runs `fn` on the I/O thread and waits for it.
  template <class F>
  auto sync(F fn) {
    if (std::this_thread::get_id() == thread.get_id()) return fn();
    std::packaged_task<decltype(fn())()> task(std::move(fn));
    auto fut = task.get_future();
    asio::post(io, [&task] { task(); });
    return fut.get();
  }
};

} // namespace idem::proxy
