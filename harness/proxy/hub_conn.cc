/// One proxied connection of the hub: client <-> proxy <-> server, its decode loop, and the decisions of the
/// StepListener it carries out; and the Hub::Impl methods that make and cut connections.
#include "proxy/hub_impl.h"
#include "proxy/pg_codec.h"

#include <deque>

namespace idem::proxy {

namespace hub_detail {

/// Bytes queued for one side beyond which the proxy stops reading the other (backpressure).
constexpr size_t kMaxWaiting = 4 << 20;
/// Bytes held for one step (a request group, a reply) beyond which its connection passes through
/// unobserved: a reply must be held whole until its step is decided, so this bounds what one costs.
constexpr size_t kMaxHeld = 32 << 20;

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
  std::set<int64_t> oneWay;        // decided requests the server never answers (StepInfo::oneWay)
  // Bytes queued for the server, and handed to the socket: Asio sends at once when a write starts (its
  // handler runs later), so a request is counted as possibly sent from the moment its bytes are handed on.
  uint64_t upQueued = 0, upHanded = 0;
  uint64_t cinOffset = 0, sinOffset = 0; // bytes of each direction consumed by the tracker so far
  std::deque<std::string> outClient, outUpstream;
  size_t waitingClient = 0, waitingUp = 0; // bytes queued for each side, not written yet
  bool clientReadPaused = false, upstreamReadPaused = false; // backpressure (readFrom)
  bool writingClient = false, writingUpstream = false;
  bool clientEof = false, upstreamEof = false;
  bool clientOpaque = false, serverOpaque = false; // undecodable: pass through unobserved
  bool dead = false;
  bool closeAfterAnswer = false; // an Answer that ends the session: close once the client has it
  /// A step held by a Hold decision: its token, its bytes, and its timer.
  struct Held {
    StepToken token;
    std::string bytes;
    std::unique_ptr<asio::steady_timer> timer;
    /// A server push held before the listener saw it as a reply: that reply, asked for on release.
    std::optional<ReplyInfo> push;
  };
  std::optional<Held> holdReq, holdRep;
  std::array<char, 65536> bufC{}, bufU{};

  /// `port`: the listener that accepted it (a broker's tracker may need it: Kafka's rewrites the broker
  /// addresses its answers carry to it).
  Conn(Hub::Impl& h, int o, int i, Server s, tcp::socket sock, int port)
      : hub(h), owner(o), id(i), server(s), client(std::move(sock)), upstream(h.io),
        tracker(s == Server::Pg     ? makePgTracker()
                : s == Server::Sink ? makeHttpTracker(h.sink ? h.sink->call : HttpCall{})
                                    : h.broker.tracker(port)) {}

  void start() {
    auto self = shared_from_this();
    if (server == Server::Pg) { // a fault may refuse the connection itself (CONNECT#k)
      Decision d = hub.listener.onConnect(owner, server, id);
      if (dead || d.kind == Decision::Kind::Kill) return; // the listener cut the owner
      if (d.kind == Decision::Kind::Drop) return drop();
      if (d.kind == Decision::Kind::Answer) return refuseStartup(std::move(d.answer));
    }
    const Upstream& up = server == Server::Pg ? hub.pg : server == Server::Sink ? hub.sink->upstream : hub.broker.upstream;
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
      self->readFrom(true);
      self->readFrom(false);
    });
  }

  /// A connection refused at startup: answers SSL and GSS requests 'N' (as the tracker does), then the
  /// StartupMessage with `answer` (a FATAL ErrorResponse), and closes once the client has it. Nothing
  /// reaches the server.
  void refuseStartup(std::string answer) {
    auto self = shared_from_this();
    client.async_read_some(asio::buffer(bufC), [self, answer = std::move(answer)](const boost::system::error_code& e,
                                                                                   size_t n) mutable {
      if (self->dead) return;
      if (e) return self->finish();
      self->cin.append(self->bufC.data(), n);
      while (true) {
        PgMessage m;
        Decode d = framePgStartup(self->cin, m);
        if (d == Decode::NeedMoreData) return self->refuseStartup(std::move(answer));
        if (d == Decode::Invalid) return self->finish();
        const uint32_t code = readBe32(m.body);
        self->cin.erase(0, m.size);
        if (code == kPgSslRequestCode || code == kPgGssEncRequestCode) {
          self->sendClient("N");
          continue;
        }
        self->sendClient(std::move(answer));
        self->closeAfterAnswer = true;
        return self->maybeClose();
      }
    });
  }

  /// Reads what the client (or the server) sent, decodes it, and reads again; EOF or an error marks that
  /// side ended.
  void readFrom(bool fromClient) {
    auto self = shared_from_this();
    tcp::socket& sock = fromClient ? client : upstream;
    auto& buf = fromClient ? bufC : bufU;
    sock.async_read_some(asio::buffer(buf), [self, fromClient, &buf](const boost::system::error_code& e, size_t n) {
      if (self->dead) return;
      if (e) {
        (fromClient ? self->clientEof : self->upstreamEof) = true;
        return self->maybeClose();
      }
      (fromClient ? self->cin : self->sin).append(buf.data(), n);
      if (fromClient)
        self->processClient();
      else
        self->processServer();
      if (self->dead) return;
      // Backpressure: while the other side has not taken what this one sent, stop reading it (writeTo
      // resumes), so that a side faster than the other costs no memory.
      if ((fromClient ? self->waitingUp : self->waitingClient) > kMaxWaiting)
        (fromClient ? self->clientReadPaused : self->upstreamReadPaused) = true;
      else
        self->readFrom(fromClient);
    });
  }

  /// Carries out a decision on a complete request (its bytes in heldReq) or reply (in heldRep) of
  /// `token`. Returns false when the connection must stop processing (killed, dropped, or held: paused).
  bool decide(const Decision& d, const StepToken& token, bool request) {
    std::string& held = request ? heldReq : heldRep;
    std::optional<Held>& hold = request ? holdReq : holdRep;
    switch (d.kind) {
    case Decision::Kind::Pass:
      forward(request, token, std::move(held));
      held.clear();
      return !dead;
    case Decision::Kind::Kill: // the listener killed the process and cut the owner already
      return false;
    case Decision::Kind::Drop:
      held.clear();
      drop();
      return false;
    case Decision::Kind::Hold:
      hold = Held{token, std::move(held), nullptr, std::nullopt};
      held.clear();
      arm(*hold, d.hold);
      return false;
    case Decision::Kind::Answer: {
      std::string answer = d.answer;
      if (!d.brokerError.empty() && request && server == Server::Broker && hub.broker.errorAnswer) {
        auto built = hub.broker.errorAnswer(held, d.brokerError);
        // None (a request its layouts do not fit, which the tracker decoded all the same): the listener
        // already recorded it answered, so the server must never see it; the connection is reset instead.
        if (!built) {
          Decision drop;
          drop.kind = Decision::Kind::Drop;
          return decide(drop, token, request);
        }
        answer = std::move(*built);
      }
      held.clear();
      if (request) {
        tracker->withdrawLast(); // the server owes no reply for it
        oneWay.erase(token.id);
      }
      sendClient(std::move(answer));
      if (!d.close) return true;
      closeAfterAnswer = true; // maybeClose: once the client has it, close (FIN) both sides
      clientEof = true;
      maybeClose();
      return false;
    }
    case Decision::Kind::Replace:
      held.clear();
      forward(request, token, d.answer);
      return true;
    }
    return true;
  }

  /// Sends a decided request on to the server (awaiting its reply), or a decided reply to the client.
  void forward(bool request, const StepToken& token, std::string bytes) {
    if (request && oneWay.erase(token.id)) {
      sendUpstream(std::move(bytes));
      return sent(token);
    }
    if (request) {
      inflight.push_back({token, upQueued + bytes.size()});
      sendUpstream(std::move(bytes));
    } else {
      sendClient(std::move(bytes));
    }
  }

  /// A one-way request was handed on: its step ends here, with an empty reply that the listener may still
  /// kill, drop or hold at (what the server sends next then waits). What is held of another step's reply
  /// stays held.
  void sent(const StepToken& token) {
    std::string other = std::move(heldRep);
    heldRep.clear();
    ReplyInfo r;
    r.summary = "sent";
    Decision d = hub.listener.onReply(owner, token, r);
    if (dead) return;
    decide(d, token, false);
    heldRep = std::move(other);
  }

  /// A server push (ServerMsg::Push), its bytes in heldRep: the listener sees it as a step's request, then
  /// as its reply; false when the connection stopped moving.
  bool onPush(const ServerMsg& m) {
    StepToken token;
    Decision d = hub.listener.onRequest(owner, server, id, m.step, token);
    if (dead || d.kind == Decision::Kind::Kill) return false;
    if (d.kind == Decision::Kind::Drop) {
      heldRep.clear();
      drop();
      return false;
    }
    if (d.kind == Decision::Kind::Answer) { // an error in the server's name instead of the push
      std::string answer = d.answer;
      if (!d.brokerError.empty() && hub.broker.errorAnswer) {
        auto built = hub.broker.errorAnswer(heldRep, d.brokerError);
        if (!built) {
          heldRep.clear();
          drop();
          return false;
        }
        answer = std::move(*built);
      }
      heldRep.clear();
      sendClient(std::move(answer));
      return true;
    }
    if (d.kind == Decision::Kind::Hold) { // before the listener sees what it delivered: on release
      holdRep = Held{token, std::move(heldRep), nullptr, m.reply};
      heldRep.clear();
      arm(*holdRep, d.hold);
      return true;
    }
    return pushed(token, m.reply);
  }

  /// The reply half of a server push.
  bool pushed(const StepToken& token, const ReplyInfo& reply) {
    Decision d = hub.listener.onReply(owner, token, reply);
    if (dead) return false;
    return decide(d, token, false) || holdRep;
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
      forward(true, h.token, std::move(h.bytes));
      processClient();
    } else if (holdRep && holdRep->token.id == token && holdRep->push) {
      Held h = std::move(*holdRep);
      holdRep.reset();
      hub.held.erase(token);
      heldRep = std::move(h.bytes);
      if (pushed(h.token, *h.push) && !holdRep) processServer();
    } else if (holdRep && holdRep->token.id == token) {
      Held h = std::move(*holdRep);
      holdRep.reset();
      hub.held.erase(token);
      forward(false, h.token, std::move(h.bytes));
      hub.listener.onReleased(owner, h.token);
      processServer();
    }
  }

  void processClient() { process<ClientMsg>(); }
  void processServer() { process<ServerMsg>(); }

  /// The decode loop of one direction (ClientMsg: requests; ServerMsg: replies): takes whole messages off
  /// the front of its input and handles each (onMessage); stops when the direction is held or the
  /// connection stopped moving (the rest of the input is then dropped). Once a byte can't be decoded,
  /// everything from it on passes through unobserved.
  template <class Msg>
  void process() {
    constexpr bool fromClient = std::is_same_v<Msg, ClientMsg>;
    std::string& in = fromClient ? cin : sin;
    uint64_t& consumed = fromClient ? cinOffset : sinOffset;
    bool& opaque = fromClient ? clientOpaque : serverOpaque;
    std::string& held = fromClient ? heldReq : heldRep;
    const std::optional<Held>& hold = fromClient ? holdReq : holdRep;
    if (closeAfterAnswer) { // the session is over: nothing more is read from either side
      in.clear();
      return;
    }
    size_t off = 0;
    while (!dead && !hold && off < in.size()) {
      if (opaque) {
        held.append(in, off, std::string::npos);
        off = in.size();
        passHeld(fromClient);
        break;
      }
      Msg m;
      std::string_view rest(in.data() + off, in.size() - off);
      Decode d = decode(rest, m);
      if (d == Decode::NeedMoreData) break;
      // What can't be decoded, and what passes the bound of bytes held for one step (a result of
      // gigabytes), passes through unobserved from here on: the run is then judged without it (docs/steps.md).
      auto unobserved = [&](std::string why) {
        opaque = true;
        hub.listener.onOpaque(owner, server, id, fromClient ? "client" : "server", consumed + off, std::move(why));
        if (!fromClient) { // the replies of the steps in flight are not seen
          for (const auto& t : inflight) hub.listener.onCut(owner, t.token, CutKind::Unobserved);
          inflight.clear();
        }
      };
      if (d == Decode::Invalid || m.size == 0 || m.size > rest.size()) {
        unobserved(undecodable(rest));
        continue;
      }
      std::string bytes(rest.substr(0, m.size));
      off += m.size;
      if (!onMessage(m, std::move(bytes))) {
        in.clear();
        return;
      }
      if (held.size() > kMaxHeld)
        unobserved(std::to_string(held.size()) + " bytes held for one step, more than the " +
                   std::to_string(kMaxHeld >> 20) + " MiB the proxy holds");
    }
    if (!dead) {
      in.erase(0, off);
      consumed += off;
    }
  }

  /// Sends the bytes held of the current request (or reply) on, outside any step.
  void passHeld(bool request) {
    std::string& held = request ? heldReq : heldRep;
    request ? sendUpstream(std::move(held)) : sendClient(std::move(held));
    held.clear();
  }

  Decode decode(std::string_view bytes, ClientMsg& m) { return tracker->onClient(bytes, m); }
  Decode decode(std::string_view bytes, ServerMsg& m) { return tracker->onServer(bytes, m); }

  /// One decoded client message; false when the connection stopped moving (killed, dropped).
  bool onMessage(const ClientMsg& m, std::string bytes) {
    if (m.kind == ClientMsg::Kind::LocalReply) { // answered here, never sent on
      sendClient(m.local_reply);
      return true;
    }
    heldReq += bytes;
    // Not part of a step, or a piece of one too large to hold that the server can't act on before its
    // last byte: whatever is held goes first, in order.
    if (m.kind == ClientMsg::Kind::Pass || m.kind == ClientMsg::Kind::Stream) passHeld(true);
    if (m.kind != ClientMsg::Kind::RequestEnd) return true;
    StepToken token;
    Decision dec = hub.listener.onRequest(owner, server, id, m.step, token);
    if (dead) return false;
    if (m.step.oneWay) oneWay.insert(token.id);
    return decide(dec, token, true) || holdReq; // killed or dropped: nothing more of it moves
  }

  /// One decoded server message; false when the connection stopped moving.
  bool onMessage(const ServerMsg& m, std::string bytes) {
    heldRep += m.replacement.empty() ? bytes : m.replacement;
    // Pass, e.g. CopyInResponse: the client waits for it, so release what is held. Stream: a piece of a
    // reply too large to hold, which the client can't act on before its last byte.
    if (m.kind == ServerMsg::Kind::Pass || m.kind == ServerMsg::Kind::Stream) passHeld(false);
    if (m.kind == ServerMsg::Kind::Push) return onPush(m);
    if (m.kind != ServerMsg::Kind::ReplyEnd) return true;
    // Steps the server skipped (an error in a Flush pipeline skips to the next Sync) get no reply.
    for (size_t i = 0; i < m.skipped && !inflight.empty(); ++i) {
      hub.listener.onCut(owner, inflight.front().token, CutKind::Forwarded);
      inflight.pop_front();
    }
    if (inflight.empty()) { // a reply no step waits for: pass it
      passHeld(false);
      return true;
    }
    StepToken token = inflight.front().token;
    inflight.pop_front();
    Decision dec = hub.listener.onReply(owner, token, m.reply);
    if (dead) return false;
    return decide(dec, token, false) || holdRep;
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
    const std::string protocol = server == Server::Pg     ? std::string("PostgreSQL v3")
                                 : server == Server::Sink ? std::string("HTTP/1.1")
                                                          : hub.broker.protocol;
    return std::string("not the ") + protocol + " protocol" +
           " (first bytes: " + hex + (rest.size() > 16 ? "…" : "") + ")";
  }

  void sendUpstream(std::string bytes) {
    if (bytes.empty()) return;
    upQueued += bytes.size();
    waitingUp += bytes.size();
    outUpstream.push_back(std::move(bytes));
    if (!writingUpstream) writeUpstream();
  }
  void sendClient(std::string bytes) {
    if (bytes.empty()) return;
    waitingClient += bytes.size();
    outClient.push_back(std::move(bytes));
    if (!writingClient) writeClient();
  }

  void writeUpstream() { writeTo(false); }
  void writeClient() { writeTo(true); }

  /// Writes the queued bytes for the client (or the server), one chunk after the other.
  void writeTo(bool toClient) {
    auto& queue = toClient ? outClient : outUpstream;
    (toClient ? writingClient : writingUpstream) = true;
    if (!toClient) upHanded += queue.front().size();
    auto self = shared_from_this();
    asio::async_write(toClient ? client : upstream, asio::buffer(queue.front()),
                      [self, toClient, &queue](const boost::system::error_code& e, size_t) {
                        if (self->dead) return;
                        if (e) return self->finish();
                        (toClient ? self->waitingClient : self->waitingUp) -= queue.front().size();
                        queue.pop_front();
                        (toClient ? self->writingClient : self->writingUpstream) = false;
                        // The side whose bytes these were may be read again once most are through.
                        bool& paused = toClient ? self->upstreamReadPaused : self->clientReadPaused;
                        if (paused && (toClient ? self->waitingClient : self->waitingUp) <= kMaxWaiting / 2) {
                          paused = false;
                          self->readFrom(!toClient);
                        }
                        if (!queue.empty()) self->writeTo(toClient);
                        else self->maybeClose();
                      });
  }

  /// A side closed: once what it sent has been written to the other side, close both.
  void maybeClose() {
    if (dead) return;
    if (closeAfterAnswer) {
      if (!writingClient && outClient.empty()) finish();
      return;
    }
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

} // namespace hub_detail

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
    auto c = std::make_shared<Conn>(*this, owner, id, server, std::move(sock), acc.local_endpoint().port());
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

} // namespace idem::proxy
