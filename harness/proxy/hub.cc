#include "proxy/hub.h"

#include <boost/asio.hpp>

#include <deque>
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

const char* toString(Server s) { return s == Server::Pg ? "pg" : "valkey"; }

const char* toString(CutKind k) {
  switch (k) {
  case CutKind::Withheld: return "withheld";
  case CutKind::Forwarded: return "forwarded";
  case CutKind::Unobserved: return "unobserved";
  }
  return "withheld";
}

namespace {

struct Conn;
using ConnPtr = std::shared_ptr<Conn>;

} // namespace

struct Hub::Impl {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  Upstream pg, valkey;
  StepListener& listener;
  std::thread thread;

  struct Owner {
    std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
    std::set<ConnPtr> conns;
    int connections = 0;
    bool cut = false;
  };
  std::map<int, Owner> owners;                 // I/O thread only
  std::map<int64_t, std::weak_ptr<Conn>> held; // token id -> the connection holding that step (I/O thread)
  mutable std::mutex countMu;
  std::map<int, int> connCounts; // read from any thread

  Impl(Upstream p, Upstream v, StepListener& l) : pg(std::move(p)), valkey(std::move(v)), listener(l) {}

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

namespace {

/// One proxied connection: client <-> proxy <-> server. Holds the bytes of a step until the listener has
/// decided; forwards them in order. A held step (Decision::Hold) pauses its direction: nothing behind it
/// is decoded or forwarded until it is released.
struct Conn : std::enable_shared_from_this<Conn> {
  Hub::Impl& hub;
  int owner;
  int id;
  Server server;
  tcp::socket client;
  tcp::socket upstream;
  TrackerPtr tracker;
  std::string cin, sin;            // unconsumed input of each direction
  std::string heldReq, heldRep;    // bytes of the current step request / reply, withheld until decided
  struct Sent {
    StepToken token;
    uint64_t end = 0; // upstream byte offset just past its request
  };
  std::deque<Sent> inflight;       // requests sent upstream, awaiting replies (FIFO)
  // Bytes queued for the server, and handed to the socket: Asio sends at once when a write starts (its
  // handler runs later), so a request is counted as possibly sent from the moment its bytes are handed on.
  uint64_t upQueued = 0, upHanded = 0;
  uint64_t cinOffset = 0, sinOffset = 0; // bytes of each direction consumed by the tracker so far
  std::deque<std::string> outClient, outUpstream;
  bool writingClient = false, writingUpstream = false;
  bool clientEof = false, upstreamEof = false;
  bool clientOpaque = false, serverOpaque = false; // undecodable: pass through unobserved
  bool dead = false;
  /// A step held by a Hold decision: its token, its bytes, and its timer.
  struct Held {
    StepToken token;
    std::string bytes;
    std::unique_ptr<asio::steady_timer> timer;
  };
  std::optional<Held> holdReq, holdRep;
  std::array<char, 65536> bufC{}, bufU{};

  Conn(Hub::Impl& h, int o, int i, Server s, tcp::socket sock)
      : hub(h), owner(o), id(i), server(s), client(std::move(sock)), upstream(h.io),
        tracker(s == Server::Pg ? makePgTracker() : makeRespTracker()) {}

  void start() {
    auto self = shared_from_this();
    const Upstream& up = server == Server::Pg ? hub.pg : hub.valkey;
    boost::system::error_code ec;
    tcp::endpoint ep(asio::ip::make_address(up.host == "localhost" ? "127.0.0.1" : up.host, ec),
                     static_cast<unsigned short>(up.port));
    if (ec) {
      // A host name: resolve synchronously (rare: external servers by name).
      tcp::resolver r(hub.io);
      auto res = r.resolve(up.host, std::to_string(up.port), ec);
      if (ec || res.empty()) return finish();
      ep = *res.begin();
    }
    upstream.async_connect(ep, [self](const boost::system::error_code& e) {
      if (self->dead) return;
      if (e) return self->finish();
      boost::system::error_code ignore;
      self->client.set_option(tcp::no_delay(true), ignore);
      self->upstream.set_option(tcp::no_delay(true), ignore);
      self->readClient();
      self->readUpstream();
    });
  }

  void readClient() {
    auto self = shared_from_this();
    client.async_read_some(asio::buffer(bufC), [self](const boost::system::error_code& e, size_t n) {
      if (self->dead) return;
      if (e) {
        self->clientEof = true;
        return self->maybeClose();
      }
      self->cin.append(self->bufC.data(), n);
      self->processClient();
      if (!self->dead) self->readClient();
    });
  }

  void readUpstream() {
    auto self = shared_from_this();
    upstream.async_read_some(asio::buffer(bufU), [self](const boost::system::error_code& e, size_t n) {
      if (self->dead) return;
      if (e) {
        self->upstreamEof = true;
        return self->maybeClose();
      }
      self->sin.append(self->bufU.data(), n);
      self->processServer();
      if (!self->dead) self->readUpstream();
    });
  }

  /// Carries out a decision on a complete request (held in heldReq). Returns false when the connection
  /// must stop processing (killed, dropped, or held: paused).
  bool decideRequest(const Decision& d, const StepToken& token) {
    switch (d.kind) {
    case Decision::Kind::Pass:
      inflight.push_back({token, upQueued + heldReq.size()});
      sendUpstream(std::move(heldReq));
      heldReq.clear();
      return true;
    case Decision::Kind::Kill: // the listener killed the process and cut the owner already
      return false;
    case Decision::Kind::Drop:
      heldReq.clear();
      drop();
      return false;
    case Decision::Kind::Hold:
      holdReq = Held{token, std::move(heldReq), nullptr};
      heldReq.clear();
      arm(*holdReq, d.hold);
      return false;
    case Decision::Kind::Answer:
      heldReq.clear();
      tracker->withdrawLast(); // the server owes no reply for it
      sendClient(d.answer);
      return true;
    }
    return true;
  }

  /// Carries out a decision on a complete reply (held in heldRep) of `token`.
  bool decideReply(const Decision& d, const StepToken& token) {
    switch (d.kind) {
    case Decision::Kind::Pass:
      sendClient(std::move(heldRep));
      heldRep.clear();
      return true;
    case Decision::Kind::Kill:
      return false;
    case Decision::Kind::Drop:
      heldRep.clear();
      drop();
      return false;
    case Decision::Kind::Hold:
      holdRep = Held{token, std::move(heldRep), nullptr};
      heldRep.clear();
      arm(*holdRep, d.hold);
      return false;
    case Decision::Kind::Answer:
      heldRep.clear();
      sendClient(d.answer);
      return true;
    }
    return true;
  }

  /// Registers a held step for Hub::release, and its timer when it releases itself.
  void arm(Held& h, std::chrono::milliseconds after) {
    hub.held[h.token.id] = weak_from_this();
    if (after.count() <= 0) return;
    h.timer = std::make_unique<asio::steady_timer>(hub.io, after);
    int64_t token = h.token.id;
    std::weak_ptr<Conn> weak = weak_from_this();
    h.timer->async_wait([weak, token](const boost::system::error_code& e) {
      if (e) return; // cancelled
      if (auto self = weak.lock()) self->release(token);
    });
  }

  /// Lets a held step through and resumes its direction.
  void release(int64_t token) {
    if (dead) return;
    if (holdReq && holdReq->token.id == token) {
      Held h = std::move(*holdReq);
      holdReq.reset();
      hub.held.erase(token);
      inflight.push_back({h.token, upQueued + h.bytes.size()});
      sendUpstream(std::move(h.bytes));
      processClient();
    } else if (holdRep && holdRep->token.id == token) {
      Held h = std::move(*holdRep);
      holdRep.reset();
      hub.held.erase(token);
      sendClient(std::move(h.bytes));
      hub.listener.onReleased(owner, h.token);
      processServer();
    }
  }

  void processClient() {
    size_t off = 0;
    while (!dead && !holdReq && off < cin.size()) {
      if (clientOpaque) {
        heldReq.append(cin, off, std::string::npos);
        off = cin.size();
        sendUpstream(std::move(heldReq));
        heldReq.clear();
        break;
      }
      ClientMsg m;
      std::string_view rest(cin.data() + off, cin.size() - off);
      Decode d = tracker->onClient(rest, m);
      if (d == Decode::NeedMoreData) break;
      if (d == Decode::Invalid || m.size == 0 || m.size > rest.size()) {
        clientOpaque = true;
        hub.listener.onOpaque(owner, server, id, "client", cinOffset + off, undecodable(rest));
        continue;
      }
      std::string bytes(rest.substr(0, m.size));
      off += m.size;
      switch (m.kind) {
      case ClientMsg::Kind::Pass: // not part of a step: whatever is held goes first, in order
        heldReq += bytes;
        sendUpstream(std::move(heldReq));
        heldReq.clear();
        break;
      case ClientMsg::Kind::Part:
        heldReq += bytes;
        break;
      case ClientMsg::Kind::LocalReply:
        sendClient(m.local_reply);
        break;
      case ClientMsg::Kind::RequestEnd: {
        heldReq += bytes;
        StepToken token;
        Decision dec = hub.listener.onRequest(owner, server, id, m.step, token);
        if (dead) {
          cin.clear();
          return;
        }
        if (!decideRequest(dec, token) && !holdReq) {
          cin.clear(); // killed or dropped: nothing more of this connection moves
          return;
        }
        break;
      }
      }
    }
    if (!dead) {
      cin.erase(0, off);
      cinOffset += off;
    }
  }

  void processServer() {
    size_t off = 0;
    while (!dead && !holdRep && off < sin.size()) {
      if (serverOpaque) {
        heldRep.append(sin, off, std::string::npos);
        off = sin.size();
        sendClient(std::move(heldRep));
        heldRep.clear();
        break;
      }
      ServerMsg m;
      std::string_view rest(sin.data() + off, sin.size() - off);
      Decode d = tracker->onServer(rest, m);
      if (d == Decode::NeedMoreData) break;
      if (d == Decode::Invalid || m.size == 0 || m.size > rest.size()) {
        serverOpaque = true;
        hub.listener.onOpaque(owner, server, id, "server", sinOffset + off, undecodable(rest));
        // The replies of the steps in flight pass through from here on, unobserved.
        for (const auto& t : inflight) hub.listener.onCut(owner, t.token, CutKind::Unobserved);
        inflight.clear();
        continue;
      }
      std::string bytes(rest.substr(0, m.size));
      off += m.size;
      switch (m.kind) {
      case ServerMsg::Kind::Pass: // e.g. CopyInResponse: the client waits for it, so release what is held
        heldRep += bytes;
        sendClient(std::move(heldRep));
        heldRep.clear();
        break;
      case ServerMsg::Kind::Part:
        heldRep += bytes;
        break;
      case ServerMsg::Kind::ReplyEnd: {
        heldRep += bytes;
        // Steps the server skipped (an error in a Flush pipeline skips to the next Sync) get no reply.
        for (size_t i = 0; i < m.skipped && !inflight.empty(); ++i) {
          hub.listener.onCut(owner, inflight.front().token, CutKind::Forwarded);
          inflight.pop_front();
        }
        if (inflight.empty()) { // a reply no step waits for: pass it
          sendClient(std::move(heldRep));
          heldRep.clear();
          break;
        }
        StepToken token = inflight.front().token;
        inflight.pop_front();
        Decision dec = hub.listener.onReply(owner, token, m.reply);
        if (dead) {
          sin.clear();
          return;
        }
        if (!decideReply(dec, token) && !holdRep) {
          sin.clear();
          return;
        }
        break;
      }
      }
    }
    if (!dead) {
      sin.erase(0, off);
      sinOffset += off;
    }
  }

  /// Why bytes could not be decoded, with the first of them in hex.
  std::string undecodable(std::string_view rest) const {
    std::string hex;
    for (size_t i = 0; i < rest.size() && i < 16; ++i) {
      static const char* digits = "0123456789abcdef";
      auto c = static_cast<unsigned char>(rest[i]);
      hex += digits[c >> 4];
      hex += digits[c & 15];
    }
    return std::string("not the ") + (server == Server::Pg ? "PostgreSQL v3 protocol" : "RESP protocol") +
           " (first bytes: " + hex + (rest.size() > 16 ? "…" : "") + ")";
  }

  void sendUpstream(std::string bytes) {
    if (bytes.empty()) return;
    upQueued += bytes.size();
    outUpstream.push_back(std::move(bytes));
    if (!writingUpstream) writeUpstream();
  }
  void sendClient(std::string bytes) {
    if (bytes.empty()) return;
    outClient.push_back(std::move(bytes));
    if (!writingClient) writeClient();
  }

  void writeUpstream() {
    writingUpstream = true;
    upHanded += outUpstream.front().size();
    auto self = shared_from_this();
    asio::async_write(upstream, asio::buffer(outUpstream.front()), [self](const boost::system::error_code& e, size_t) {
      if (self->dead) return;
      if (e) return self->finish();
      self->outUpstream.pop_front();
      self->writingUpstream = false;
      if (!self->outUpstream.empty()) self->writeUpstream();
      else self->maybeClose();
    });
  }
  void writeClient() {
    writingClient = true;
    auto self = shared_from_this();
    asio::async_write(client, asio::buffer(outClient.front()), [self](const boost::system::error_code& e, size_t) {
      if (self->dead) return;
      if (e) return self->finish();
      self->outClient.pop_front();
      self->writingClient = false;
      if (!self->outClient.empty()) self->writeClient();
      else self->maybeClose();
    });
  }

  /// A side closed: once what it sent has been written to the other side, close both.
  void maybeClose() {
    if (dead) return;
    if (clientEof && !writingUpstream && outUpstream.empty() && !holdReq) return finish();
    if (upstreamEof && !writingClient && outClient.empty() && !holdRep) return finish();
  }

  /// Resets both sides (RST, not FIN: the client sees a connection error, the server ends the session).
  void drop() {
    boost::system::error_code ignore;
    client.set_option(asio::socket_base::linger(true, 0), ignore);
    upstream.set_option(asio::socket_base::linger(true, 0), ignore);
    finish();
  }

  /// Closes both sockets; steps still in flight are reported cut.
  void finish() {
    if (dead) return;
    dead = true;
    boost::system::error_code ignore;
    client.close(ignore);
    upstream.close(ignore);
    for (auto* h : {&holdReq, &holdRep}) {
      if (!*h) continue;
      hub.held.erase((*h)->token.id);
      if ((*h)->timer) (*h)->timer->cancel();
    }
    if (holdReq) hub.listener.onCut(owner, holdReq->token, CutKind::Withheld);
    if (holdRep) hub.listener.onCut(owner, holdRep->token, CutKind::Forwarded);
    holdReq.reset();
    holdRep.reset();
    auto pending = std::move(inflight);
    inflight.clear();
    for (const auto& t : pending)
      hub.listener.onCut(owner, t.token, upHanded >= t.end ? CutKind::Forwarded : CutKind::Withheld);
    hub.forget(shared_from_this());
  }
};

} // namespace

void Hub::Impl::accept(int owner, Server server, tcp::acceptor& acc) {
  acc.async_accept([this, owner, server, &acc](const boost::system::error_code& e, tcp::socket sock) {
    if (e) return; // closed
    auto it = owners.find(owner);
    if (it == owners.end() || it->second.cut) return;
    int id = ++it->second.connections;
    {
      std::lock_guard<std::mutex> lock(countMu);
      connCounts[owner] = id;
    }
    auto c = std::make_shared<Conn>(*this, owner, id, server, std::move(sock));
    it->second.conns.insert(c);
    c->start();
    accept(owner, server, acc);
  });
}

void Hub::Impl::forget(const ConnPtr& c) {
  auto it = owners.find(c->owner);
  if (it != owners.end()) it->second.conns.erase(c);
}

void Hub::Impl::cut(int owner) {
  auto it = owners.find(owner);
  if (it == owners.end()) return;
  it->second.cut = true;
  boost::system::error_code ignore;
  for (auto& a : it->second.acceptors) a->close(ignore);
  auto conns = it->second.conns; // finish() erases from the set
  for (const auto& c : conns) c->finish();
}

void Hub::Impl::release(int64_t token) {
  auto it = held.find(token);
  if (it == held.end()) return;
  if (auto c = it->second.lock()) c->release(token);
  else held.erase(it);
}

Hub::Hub(Upstream pg, Upstream valkey, StepListener& listener)
    : impl_(std::make_unique<Impl>(std::move(pg), std::move(valkey), listener)) {
  impl_->thread = std::thread([this] { impl_->io.run(); });
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
    for (Server s : {Server::Pg, Server::Valkey}) {
      auto acc = std::make_unique<tcp::acceptor>(impl_->io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
      int port = acc->local_endpoint().port();
      (s == Server::Pg ? ports.pg : ports.valkey) = port;
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
  if (std::this_thread::get_id() == impl_->thread.get_id()) return impl_->release(id);
  asio::post(impl_->io, [this, id] { impl_->release(id); });
}

int Hub::connections(int owner) const {
  std::lock_guard<std::mutex> lock(impl_->countMu);
  auto it = impl_->connCounts.find(owner);
  return it == impl_->connCounts.end() ? 0 : it->second;
}

} // namespace idem::proxy
