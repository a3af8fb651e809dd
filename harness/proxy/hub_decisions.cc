/// The decisions of the StepListener that a proxied connection (Conn, hub_conn.h) carries out on a step's
/// request or reply: pass it, kill, drop, hold it (until Hub::release or its timer), answer in the server's
/// name, or replace it; and the listener's view of a one-way request and of a server push.
#include "proxy/hub_conn.h"

namespace idem::proxy {

namespace hub_detail {

bool Conn::endsConnection(const Decision& d) const {
  return !d.brokerError.empty() && server == Server::Broker && hub.broker.errorEndsConnection;
}

bool Conn::decide(const Decision& d, const StepToken& token, bool request) {
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
    if (!d.close && !endsConnection(d)) return true;
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

void Conn::forward(bool request, const StepToken& token, std::string bytes) {
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

void Conn::sent(const StepToken& token) {
  ReplyInfo r;
  r.summary = "sent";
  Decision d = hub.listener.onReply(owner, token, r);
  if (dead) return;
  if (d.kind == Decision::Kind::Hold) { // apart from holdRep, which a push the server sent may hold already
    Held& h = holdSent.insert_or_assign(token.id, Held{token, {}, nullptr, std::nullopt}).first->second;
    arm(h, d.hold);
    return;
  }
  std::string other = std::move(heldRep);
  heldRep.clear();
  decide(d, token, false);
  heldRep = std::move(other);
}

bool Conn::onPush(const ServerMsg& m) {
  StepToken token;
  StepInfo step = m.step;
  step.pushed = true;
  Decision d = hub.listener.onRequest(owner, server, id, step, token);
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
    if (!endsConnection(d)) return true;
    closeAfterAnswer = true; // nothing more from the broker after its connection.close
    clientEof = true;
    maybeClose();
    return false;
  }
  if (d.kind == Decision::Kind::Hold) { // before the listener sees what it delivered: on release
    holdRep = Held{token, std::move(heldRep), nullptr, m.reply};
    heldRep.clear();
    arm(*holdRep, d.hold);
    return true;
  }
  return pushed(token, m.reply);
}

bool Conn::pushed(const StepToken& token, const ReplyInfo& reply) {
  Decision d = hub.listener.onReply(owner, token, reply);
  if (dead) return false;
  return decide(d, token, false) || holdRep;
}

void Conn::arm(Held& h, std::chrono::milliseconds after) {
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

void Conn::release(int64_t token) {
  if (dead) return;
  if (auto sentHold = holdSent.find(token); sentHold != holdSent.end()) {
    const StepToken t = sentHold->second.token;
    holdSent.erase(sentHold);
    hub.held.erase(token);
    hub.listener.onReleased(owner, t);
    if (dead) return;
    if (!holdRep && holdSent.empty()) processServer();
    maybeClose();
  } else if (holdReq && holdReq->token.id == token) {
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

} // namespace hub_detail

void Hub::Impl::release(int64_t token) {
  auto it = held.find(token);
  if (it == held.end()) return;
  if (auto c = it->second.lock()) c->release(token);
  else held.erase(it);
}

} // namespace idem::proxy
