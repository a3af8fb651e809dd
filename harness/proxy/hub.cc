/// The Hub's own methods: its I/O thread, the listeners of each process, refusing a server's connections.
/// A connection's work is in hub_conn.cc and hub_decisions.cc.
#include "proxy/hub_impl.h"

namespace idem::proxy {

const char* toString(CutKind k) {
  switch (k) {
  case CutKind::Withheld: return "withheld";
  case CutKind::Forwarded: return "forwarded";
  case CutKind::Unobserved: return "unobserved";
  }
  return "withheld";
}

Hub::Hub(Upstream pg, Upstream valkey, StepListener& listener)
    : Hub(std::move(pg), BrokerSide{"valkey", "RESP", std::move(valkey), [](int) { return makeRespTracker(); }, {}, false, {}}, listener) {}

Hub::Hub(Upstream pg, BrokerSide broker, StepListener& listener)
    : impl_(std::make_unique<Impl>(std::move(pg), std::move(broker), listener)) {
  impl_->thread = std::thread([this] { impl_->io.run(); });
}

const BrokerSide& Hub::broker() const { return impl_->broker; }

const std::string& Hub::name(Server s) const {
  static const std::string pg = "pg", sink = "sink";
  return s == Server::Pg ? pg : s == Server::Sink ? sink : impl_->broker.name;
}

void Hub::setSink(SinkSide sink) {
  impl_->sync([this, &sink] {
    impl_->sink = std::move(sink);
    return 0;
  });
}

Hub::~Hub() {
  impl_->sync([this] {
    std::vector<int> ids;
    for (auto& [id, o] : impl_->owners) ids.push_back(id);
    for (int id : ids) impl_->cut(id);
    impl_->owners.clear();
    return 0;
  });
  impl_->work.reset();
  impl_->io.stop();
  impl_->thread.join();
}

Hub::Ports Hub::open(int owner) {
  return impl_->sync([this, owner] {
    auto& o = impl_->owners[owner];
    Ports ports;
    for (Server s : {Server::Pg, Server::Broker, Server::Sink}) {
      if (s == Server::Sink && !impl_->sink) break;
      auto acc = std::make_unique<tcp::acceptor>(impl_->io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
      int port = acc->local_endpoint().port();
      (s == Server::Pg ? ports.pg : s == Server::Sink ? ports.sink : ports.broker) = port;
      impl_->accept(owner, s, *acc);
      o.acceptors.push_back(std::move(acc));
    }
    return ports;
  });
}

void Hub::close(int owner) {
  impl_->sync([this, owner] {
    impl_->cut(owner);
    impl_->owners.erase(owner);
    return 0;
  });
}

void Hub::cutNow(int owner) { impl_->cut(owner); }

void Hub::release(const StepToken& token) {
  int64_t id = token.id;
  // Always later, on the I/O thread: a listener may release from inside a callback of another connection.
  asio::post(impl_->io, [this, id] { impl_->release(id); });
}

void Hub::refuse(Server server, bool on) {
  impl_->sync([this, server, on] {
    const size_t i = hub_detail::serverIndex(server); // open() makes them in this order
    for (auto& [owner, o] : impl_->owners) {
      if (o.cut || o.acceptors.size() <= i) continue;
      tcp::acceptor& acc = *o.acceptors[i];
      if (on) {
        if (!acc.is_open()) continue;
        o.ports[i] = acc.local_endpoint().port();
        const tcp::endpoint ep(asio::ip::address_v4::loopback(), static_cast<unsigned short>(o.ports[i]));
        boost::system::error_code ignore, bound;
        acc.close(ignore); // the pending accept ends with operation_aborted
        auto hold = std::make_unique<tcp::socket>(impl_->io);
        hold->open(ep.protocol(), bound);
        if (!bound) hold->set_option(tcp::socket::reuse_address(true), bound);
        if (!bound) hold->bind(ep, bound);
        if (!bound) o.held[i] = std::move(hold); // else refused all the same, the port unheld
        continue;
      }
      if (acc.is_open() || o.ports[i] == 0) continue;
      const tcp::endpoint ep(asio::ip::address_v4::loopback(), static_cast<unsigned short>(o.ports[i]));
      if (o.held[i]) {
        boost::system::error_code ignore;
        o.held[i]->close(ignore);
        o.held[i].reset();
      }
      acc.open(ep.protocol());
      acc.set_option(tcp::acceptor::reuse_address(true));
      acc.bind(ep);
      acc.listen();
      impl_->accept(owner, server, acc);
    }
    return 0;
  });
}

int Hub::connections(int owner) const {
  std::lock_guard<std::mutex> lock(impl_->countMu);
  auto it = impl_->connCounts.find(owner);
  return it == impl_->connCounts.end() ? 0 : it->second;
}

} // namespace idem::proxy
