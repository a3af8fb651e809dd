/// One proxied connection of the hub (Conn, hub_conn.h): client <-> proxy <-> server, how it starts, its
/// decode loop, and the bytes it moves each way; and the Hub::Impl methods that make and cut connections.
/// The decisions of the StepListener it carries out are in hub_decisions.cc.
#include "proxy/hub_conn.h"
#include "proxy/pg_codec.h"

namespace idem::proxy {

namespace hub_detail {

/// Bytes queued for one side beyond which the proxy stops reading the other (backpressure).
constexpr size_t kMaxWaiting = 4 << 20;
/// Bytes held for one step (a request group, a reply) beyond which its connection passes through
/// unobserved: a reply must be held whole until its step is decided, so this bounds what one costs.
constexpr size_t kMaxHeld = 32 << 20;

Conn::Conn(Hub::Impl& h, int o, int i, Server s, tcp::socket sock, int port)
    : hub(h), owner(o), id(i), server(s), client(std::move(sock)), upstream(h.io),
      tracker(s == Server::Pg     ? makePgTracker()
              : s == Server::Sink ? makeHttpTracker(h.sink ? h.sink->call : HttpCall{})
                                  : h.broker.tracker(port)) {}

void Conn::start() {
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

void Conn::refuseStartup(std::string answer) {
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

void Conn::readFrom(bool fromClient) {
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

void Conn::processClient() { process<ClientMsg>(); }

void Conn::processServer() { process<ServerMsg>(); }

template <class Msg>
void Conn::process() {
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
  // The server's side also waits while a one-way request is held after it was handed on (holdSent).
  while (!dead && !hold && (fromClient || holdSent.empty()) && off < in.size()) {
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
      std::string refused = d == Decode::Invalid ? tracker->refusal() : std::string();
      unobserved(refused.empty() ? undecodable(rest) : std::move(refused));
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

void Conn::passHeld(bool request) {
  std::string& held = request ? heldReq : heldRep;
  request ? sendUpstream(std::move(held)) : sendClient(std::move(held));
  held.clear();
}

bool Conn::onMessage(const ClientMsg& m, std::string bytes) {
  if (m.kind == ClientMsg::Kind::LocalReply) { // answered here, never sent on
    sendClient(m.local_reply);
    return true;
  }
  // A replacement of another length would shift the offsets the steps' ends are counted in (upHanded).
  heldReq += m.replacement.size() == bytes.size() ? m.replacement : bytes;
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

bool Conn::onMessage(const ServerMsg& m, std::string bytes) {
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

std::string Conn::undecodable(std::string_view rest) const {
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

void Conn::sendUpstream(std::string bytes) {
  if (bytes.empty()) return;
  upQueued += bytes.size();
  waitingUp += bytes.size();
  outUpstream.push_back(std::move(bytes));
  if (!writingUpstream) writeUpstream();
}

void Conn::sendClient(std::string bytes) {
  if (bytes.empty()) return;
  waitingClient += bytes.size();
  outClient.push_back(std::move(bytes));
  if (!writingClient) writeClient();
}

void Conn::writeTo(bool toClient) {
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

void Conn::maybeClose() {
  if (dead) return;
  if (closeAfterAnswer) {
    if (!writingClient && outClient.empty()) finish();
    return;
  }
  if (clientEof && !writingUpstream && outUpstream.empty() && !holdReq) return finish();
  if (upstreamEof && !writingClient && outClient.empty() && !holdRep && holdSent.empty()) return finish();
}

void Conn::drop() {
  boost::system::error_code ignore;
  client.set_option(asio::socket_base::linger(true, 0), ignore);
  upstream.set_option(asio::socket_base::linger(true, 0), ignore);
  finish();
}

std::optional<CutKind> Conn::cutKindOf(int64_t token) const {
  if (dead) return std::nullopt;
  if (holdReq && holdReq->token.id == token) return CutKind::Withheld;
  if ((holdRep && holdRep->token.id == token) || holdSent.count(token)) return CutKind::Forwarded;
  for (const auto& t : inflight)
    if (t.token.id == token) return upHanded >= t.end ? CutKind::Forwarded : CutKind::Withheld;
  return std::nullopt;
}

void Conn::finish() {
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
  auto sentHolds = std::move(holdSent);
  holdSent.clear();
  for (auto& [id, h] : sentHolds) { // handed on before the connection ended
    hub.held.erase(id);
    if (h.timer) h.timer->cancel();
    hub.listener.onCut(owner, h.token, CutKind::Forwarded);
  }
  auto pending = std::move(inflight);
  inflight.clear();
  for (const auto& t : pending)
    hub.listener.onCut(owner, t.token, upHanded >= t.end ? CutKind::Forwarded : CutKind::Withheld);
  if (tracker)
    if (auto back = tracker->returnedAtEnd(); !back.empty()) hub.listener.onReturnedAtEnd(owner, back);
  hub.forget(shared_from_this());
}

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

std::optional<CutKind> Hub::cutKind(int owner, const StepToken& token) const {
  auto it = impl_->owners.find(owner);
  if (it == impl_->owners.end()) return std::nullopt;
  for (const auto& c : it->second.conns)
    if (auto how = c->cutKindOf(token.id)) return how;
  return std::nullopt;
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

} // namespace idem::proxy
