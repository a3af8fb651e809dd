#include "brokers/nats/tracker.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <deque>
#include <map>
#include <vector>

namespace idem::nats {
namespace {

/// The fields of a control line (split at spaces and tabs), its op upper-cased.
struct Line {
  std::string op;
  std::vector<std::string_view> args;
  size_t size = 0; ///< the line with its end
};

/// One control line at the start of `buf`: NeedMoreData before its end, Invalid past kMaxControlLine.
proxy::Decode readLine(std::string_view buf, Line& out) {
  const size_t nl = buf.find('\n');
  if (nl == std::string_view::npos)
    return buf.size() > kMaxControlLine ? proxy::Decode::Invalid : proxy::Decode::NeedMoreData;
  if (nl > kMaxControlLine)
    return proxy::Decode::Invalid;
  out.size = nl + 1;
  std::string_view text = buf.substr(0, nl);
  if (!text.empty() && text.back() == '\r')
    text.remove_suffix(1);
  size_t i = 0;
  auto space = [](char c) { return c == ' ' || c == '\t'; };
  while (i < text.size()) {
    while (i < text.size() && space(text[i]))
      ++i;
    size_t j = i;
    while (j < text.size() && !space(text[j]))
      ++j;
    if (j > i) {
      if (out.op.empty()) {
        for (size_t k = i; k < j; ++k)
          out.op += static_cast<char>(std::toupper(static_cast<unsigned char>(text[k])));
        // INFO, CONNECT and -ERR carry free text (JSON, a quoted message) after the op.
        if (out.op == "INFO" || out.op == "CONNECT" || out.op == "-ERR")
          break;
      } else {
        out.args.push_back(text.substr(i, j - i));
      }
    }
    i = j;
  }
  return out.op.empty() ? proxy::Decode::Invalid : proxy::Decode::Message;
}

std::optional<uint64_t> number(std::string_view s) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size())
    return std::nullopt;
  return v;
}

std::vector<std::string_view> tokens(std::string_view subject) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t dot = subject.find('.', start);
    out.push_back(subject.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos)
      return out;
    start = dot + 1;
  }
}

/// A server of a cluster names its peers in INFO (`connect_urls`, `ws_connect_urls`), and a client reconnects
/// to any of them, around the proxy (after a drop fault, say). `replacement` becomes the INFO line without
/// them when it has any; it stays empty otherwise (and for an INFO whose JSON does not parse).
void infoWithoutPeers(std::string_view line, std::string& replacement) {
  const size_t brace = line.find('{');
  if (brace == std::string_view::npos) return;
  std::string_view body = line.substr(brace);
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.remove_suffix(1);
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || (!j.contains("connect_urls") && !j.contains("ws_connect_urls"))) return;
  j.erase("connect_urls");
  j.erase("ws_connect_urls");
  replacement = "INFO " + j.dump() + "\r\n";
}

/// A message with a payload (PUB, HPUB, MSG, HMSG): where its parts are.
struct Framed {
  std::string_view subject, sid, reply, headers, payload;
  size_t size = 0;
};

/// The payload after a PUB/HPUB/MSG/HMSG control line: `sizes` are its last one (n) or two (headers,
/// total) arguments; `head` the arguments before them (subject, [sid,] [reply]).
proxy::Decode payloadOf(std::string_view buf, const Line& line, bool withHeaders, size_t head, Framed& out) {
  const size_t counts = withHeaders ? 2 : 1;
  if (line.args.size() < head + counts - 1 + 1 || line.args.size() > head + counts + 1)
    return proxy::Decode::Invalid;
  const auto total = number(line.args.back());
  const auto hdr = withHeaders ? number(line.args[line.args.size() - 2]) : std::optional<uint64_t>(0);
  if (!total || !hdr || *hdr > *total || *total > kMaxPayload)
    return proxy::Decode::Invalid;
  const size_t named = line.args.size() - counts; // subject, [sid], [reply]
  out.subject = line.args[0];
  out.sid = head > 1 ? line.args[1] : std::string_view{};
  out.reply = named > head ? line.args[named - 1] : std::string_view{};
  out.size = line.size + *total + 2;
  if (buf.size() < out.size)
    return proxy::Decode::NeedMoreData;
  if (buf.substr(line.size + *total, 2) != "\r\n")
    return proxy::Decode::Invalid;
  out.headers = buf.substr(line.size, *hdr);
  out.payload = buf.substr(line.size + *hdr, *total - *hdr);
  return proxy::Decode::Message;
}

/// A header block's status line ("NATS/1.0 404 No Messages") code, 0 without one, and its header values.
struct Headers {
  int status = 0;
  std::string description;
  std::vector<std::pair<std::string, std::string>> values;
};

Headers parseHeaders(std::string_view block) {
  Headers h;
  size_t pos = 0;
  bool first = true;
  while (pos < block.size()) {
    size_t nl = block.find("\r\n", pos);
    std::string_view l = block.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? block.size() : nl + 2;
    if (first) {
      first = false;
      // "NATS/1.0" [code [description]]
      if (l.size() > 9 && l.substr(0, 9) == "NATS/1.0 ") {
        std::string_view rest = l.substr(9);
        const size_t sp = rest.find(' ');
        if (auto c = number(rest.substr(0, sp)))
          h.status = static_cast<int>(*c);
        if (sp != std::string_view::npos)
          h.description = std::string(rest.substr(sp + 1));
      }
      continue;
    }
    const size_t colon = l.find(':');
    if (colon == std::string_view::npos)
      continue;
    std::string_view v = l.substr(colon + 1);
    while (!v.empty() && v.front() == ' ')
      v.remove_prefix(1);
    h.values.emplace_back(std::string(l.substr(0, colon)), std::string(v));
  }
  return h;
}

bool startsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

/// Whether `subject` is a pull request: $JS.API.CONSUMER.MSG.NEXT.<stream>.<durable>, or with a domain
/// ($JS.<domain>.API.CONSUMER.MSG.NEXT.…).
bool pullSubject(std::string_view subject) {
  auto t = tokens(subject);
  if (t.size() == 7 && t[0] == "$JS" && t[1] == "API")
    return t[2] == "CONSUMER" && t[3] == "MSG" && t[4] == "NEXT";
  if (t.size() == 8 && t[0] == "$JS" && t[2] == "API")
    return t[3] == "CONSUMER" && t[4] == "MSG" && t[5] == "NEXT";
  return false;
}

std::string shorten(std::string_view s, size_t n = 200) {
  std::string out(s.substr(0, n));
  for (auto& c : out)
    if (c == '\r' || c == '\n')
      c = ' ';
  if (s.size() > n)
    out += "…";
  return out;
}

/// Whether `subject` matches the subscription `pattern` (`*`: one token, `>`: the rest).
bool matches(std::string_view pattern, std::string_view subject) {
  const auto p = tokens(pattern), t = tokens(subject);
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == ">") return t.size() > i;
    if (i >= t.size() || (p[i] != "*" && p[i] != t[i])) return false;
  }
  return p.size() == t.size();
}

/// A pull request the server may still answer: the inbox its messages come to, and the subscriptions (sids)
/// that receive them — a delivery keeps its message's own subject and comes by the sid. Its FETCH step ends
/// with its first message or a status; the rest of a batch (nats.js consume(), a libnats Fetch of 10) come
/// as steps of their own, pushed by the server, until the batch is full or a status ends the pull.
struct Pull {
  std::string inbox;
  std::vector<std::string> sids;
  uint64_t batch = 1;
  uint64_t delivered = 0; ///< messages it brought
  bool answered = false;  ///< its FETCH step has ended
  /// The client unsubscribed every subscription its inbox had (nats.js's fetch() gives up after missed
  /// heartbeats, UNSUBs and pulls again on a new inbox): the server may answer a younger pull first.
  bool retired = false;
};

class NatsTracker final : public proxy::Tracker {
public:
  proxy::Decode onClient(std::string_view buf, proxy::ClientMsg& out) override {
    out = proxy::ClientMsg{};
    Line line;
    proxy::Decode d = readLine(buf, line);
    if (d != proxy::Decode::Message)
      return d;
    out.size = line.size;
    if (line.op == "PUB" || line.op == "HPUB") {
      Framed f;
      d = payloadOf(buf, line, line.op == "HPUB", 1, f);
      if (d != proxy::Decode::Message)
        return d;
      out.size = f.size;
      publish(f, out);
      return d;
    }
    if (line.op == "SUB" && (line.args.size() == 2 || line.args.size() == 3)) {
      subs_[std::string(line.args.back())] = std::string(line.args[0]);
      return d; // Pass
    }
    if (line.op == "UNSUB" && line.args.size() == 1) {
      const std::string sid(line.args[0]);
      subs_.erase(sid);
      // A pull keeps its sids: the server's messages to it name the stream's subject and the inbox's sid.
      for (auto& p : pulls_)
        p.retired = p.retired ||
                    (std::none_of(p.sids.begin(), p.sids.end(), [&](const std::string& s) { return subs_.count(s) > 0; }) &&
                     std::none_of(subs_.begin(), subs_.end(), [&](const auto& s) { return matches(s.second, p.inbox); }));
      return d;
    }
    if (line.op == "CONNECT" || line.op == "UNSUB" || line.op == "PING" || line.op == "PONG")
      return d; // Pass
    return proxy::Decode::Invalid;
  }

  proxy::Decode onServer(std::string_view buf, proxy::ServerMsg& out) override {
    out = proxy::ServerMsg{};
    Line line;
    proxy::Decode d = readLine(buf, line);
    if (d != proxy::Decode::Message)
      return d;
    out.size = line.size;
    if (line.op == "MSG" || line.op == "HMSG") {
      Framed f;
      d = payloadOf(buf, line, line.op == "HMSG", 2, f);
      if (d != proxy::Decode::Message)
        return d;
      out.size = f.size;
      return message(f, out) ? d : proxy::Decode::Invalid;
    }
    if (line.op == "INFO") {
      infoWithoutPeers(buf.substr(0, line.size), out.replacement);
      return d; // Pass, rewritten when the server named its cluster's peers
    }
    if (line.op == "PING" || line.op == "PONG" || line.op == "+OK" || line.op == "-ERR")
      return d; // Pass
    return proxy::Decode::Invalid;
  }

  std::string refusal() const override { return refusal_; }

  void withdrawLast() override {
    // Only a pull request awaits an answer; a one-way step left nothing to take back.
    if (lastWasPull_ && !pulls_.empty())
      pulls_.pop_back();
    lastWasPull_ = false;
  }

private:
  void publish(const Framed& f, proxy::ClientMsg& out) {
    lastWasPull_ = false;
    if (pullSubject(f.subject)) {
      if (f.reply.empty())
        return; // an answer no one could read: the server delivers nothing for it
      Pull p{std::string(f.reply), {}, 1, 0, false};
      for (const auto& [sid, pattern] : subs_)
        if (matches(pattern, f.reply)) p.sids.push_back(sid);
      bool noWait = false, expires = false;
      const auto j = nlohmann::json::parse(f.payload, nullptr, false);
      if (j.is_object()) {
        if (j.contains("batch") && j["batch"].is_number_unsigned()) p.batch = std::max<uint64_t>(1, j["batch"].get<uint64_t>());
        if (j.contains("no_wait") && j["no_wait"].is_boolean()) noWait = j["no_wait"].get<bool>();
        if (j.contains("expires") && j["expires"].is_number_unsigned()) expires = j["expires"].get<uint64_t>() > 0;
      } else if (j.is_number_unsigned()) {
        p.batch = std::max<uint64_t>(1, j.get<uint64_t>());
      }
      pulls_.push_back(std::move(p));
      lastWasPull_ = true;
      out.kind = proxy::ClientMsg::Kind::RequestEnd;
      out.step.verb = "FETCH";
      out.step.detail = shorten(std::string(f.subject) + " " + std::string(f.payload));
      out.step.read = true;
      // It waits for a message until it expires (or for ever). A no_wait pull with an expiry waits too: the
      // server (2.9) holds it until it expires, then answers 408 (nats.go's Fetch(n) for n > 1 pulls so).
      out.step.blocking = !noWait || expires;
      return;
    }
    if (auto ack = parseAckSubject(f.subject)) {
      std::string_view body = f.payload;
      while (!body.empty() && (body.back() == ' ' || body.back() == '\r' || body.back() == '\n'))
        body.remove_suffix(1);
      std::string verb;
      if (body.empty() || startsWith(body, "+ACK") || startsWith(body, "+NXT")) verb = "ACK";
      else if (startsWith(body, "-NAK")) verb = "NAK";
      else if (startsWith(body, "+WPI")) verb = "WPI";
      else if (startsWith(body, "+TERM")) verb = "TERM";
      if (!verb.empty()) {
        out.kind = proxy::ClientMsg::Kind::RequestEnd;
        out.step.verb = verb;
        out.step.detail = shorten(std::string(f.subject) + (body.empty() ? "" : " " + std::string(body)));
        out.step.oneWay = true;
        if (verb == "ACK" || verb == "TERM") out.step.acked = {std::to_string(ack->streamSeq)};
        out.step.discards = verb == "TERM";
        if (verb == "NAK") out.step.returned = {std::to_string(ack->streamSeq)};
        return;
      }
    }
    // The JetStream API and the server's own subjects (flow control) are set-up, no work of the consumer.
    if (startsWith(f.subject, "$JS.") || startsWith(f.subject, "$KV.") || startsWith(f.subject, "$O.") ||
        startsWith(f.subject, "$SYS."))
      return;
    out.kind = proxy::ClientMsg::Kind::RequestEnd;
    out.step.verb = "PUB";
    out.step.detail = shorten(std::string(f.subject) + " " + std::string(f.payload));
    out.step.oneWay = true;
  }

  /// A message the server sends; false when it is a delivery the steps cannot account for.
  bool message(const Framed& f, proxy::ServerMsg& out) {
    const auto ack = parseAckSubject(f.reply);
    // The server answers the pull requests waiting on a durable in the order they came: a message or a status
    // to an inbox is the oldest pull request's of those that wait there.
    auto pull = std::find_if(pulls_.begin(), pulls_.end(), [&](const Pull& p) {
      return f.subject == p.inbox || std::find(p.sids.begin(), p.sids.end(), f.sid) != p.sids.end();
    });
    // A FETCH step ends in the order the requests were sent: an answer to a request while an older one, to
    // another inbox, waits unanswered would end the wrong step. An older one whose inbox the client gave up
    // (retired) the server need not answer: its step ends with this answer, as one the server skipped. (What
    // the server does send to it is read as any answer: whether the client still read it, the bytes cannot
    // tell — a delivery seen in excess only widens what the checkers allow.)
    auto waiting = [](const Pull& p) { return !p.answered && !p.retired; };
    auto given_up = [](const Pull& p) { return !p.answered && p.retired; };
    const bool inOrder = pull == pulls_.end() || pull->answered || std::none_of(pulls_.begin(), pull, waiting);
    // What ends an unanswered pull's FETCH step: a message, or a status that is no heartbeat.
    const Headers hdr = parseHeaders(f.headers);
    const bool ends = ack || (hdr.status != 0 && hdr.status != 100);
    if (pull != pulls_.end() && !pull->answered && ends && inOrder) {
      const auto before = pull - pulls_.begin();
      const auto skipped = std::count_if(pulls_.begin(), pull, given_up);
      pulls_.erase(std::remove_if(pulls_.begin(), pull, given_up), pulls_.begin() + before);
      pull = pulls_.begin() + (before - skipped);
      out.skipped = static_cast<size_t>(skipped); // this message ends a step (ReplyEnd) below
    }
    if (pull == pulls_.end() || !inOrder) {
      // A push consumer's delivery, or an answer out of order: its entry would go unseen, and the connection
      // is unobserved from here on.
      if (ack)
        refusal_ = "a delivery of stream message " + std::to_string(ack->streamSeq) +
                   (pull == pulls_.end() ? " that answers no pull request (a push consumer)"
                                         : " to a pull request while an older one, to another inbox, waits unanswered") +
                   ": idemproof follows pull consumers (docs/target-contract.md, NATS)";
      return !ack;
    }
    const Headers h = parseHeaders(f.headers);
    if (!ack) {
      if (h.status == 0 || h.status == 100)
        return true; // a heartbeat, or a message that is no answer: Pass
      // A status ends the pull (404 No Messages, 408 Request Timeout, 409 …): its FETCH's reply if it brought
      // nothing yet. After messages, the end of a batch is no step, but an error is one the server pushes
      // (409 Consumer Deleted once a forget made the durable anew): the client was told, and may exit on it.
      const bool answered = pull->answered;
      const uint64_t delivered = pull->delivered, batch = pull->batch;
      pulls_.erase(pull);
      const bool error = h.status != 404 && h.status != 408;
      if (answered && !error) return true;
      out.kind = answered ? proxy::ServerMsg::Kind::Push : proxy::ServerMsg::Kind::ReplyEnd;
      out.reply.empty_read = true;
      out.reply.error = error;
      out.reply.summary = shorten(std::to_string(h.status) + (h.description.empty() ? "" : " " + h.description));
      out.reply.waiting = waitingOnBatch();
      if (answered) {
        out.step.verb = "FETCH";
        out.step.read = true;
        out.step.detail = shorten(out.reply.summary + ": ends a pull request for " + std::to_string(batch) + " after " +
                                  std::to_string(delivered) + " message" + (delivered == 1 ? "" : "s"));
      }
      return true;
    }
    proxy::EntryView e;
    e.id = std::to_string(ack->streamSeq);
    bool hasEventId = false;
    const auto j = nlohmann::ordered_json::parse(f.payload, nullptr, false);
    if (j.is_object()) {
      for (const auto& [k, v] : j.items()) {
        e.fields.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
        hasEventId = hasEventId || k == "event_id";
      }
    }
    if (!hasEventId)
      for (const auto& [k, v] : h.values)
        if (k == "event_id") {
          e.fields.emplace_back(k, v);
          break;
        }
    const bool first = !pull->answered;
    const uint64_t n = ++pull->delivered;
    const uint64_t batch = pull->batch;
    pull->answered = true;
    if (n >= batch) pulls_.erase(pull);
    out.reply.summary = "1 message (" + e.id + ")";
    out.reply.delivered.push_back(std::move(e));
    out.reply.waiting = waitingOnBatch();
    if (first) {
      out.kind = proxy::ServerMsg::Kind::ReplyEnd;
      return true;
    }
    // A later message of a batch: a step of its own, which the server pushes.
    out.kind = proxy::ServerMsg::Kind::Push;
    out.step.verb = "FETCH";
    out.step.read = true;
    out.step.detail = shorten("MSG " + std::string(f.subject) + " " + out.reply.delivered.front().id + ": message " +
                              std::to_string(n) + " of a pull request for " + std::to_string(batch));
    return true;
  }

  /// A pull request whose first message came is still open for more: the consumer waits for the server to
  /// push them (proxy::ReplyInfo::waiting), at rest whenever it holds none.
  bool waitingOnBatch() const {
    return std::any_of(pulls_.begin(), pulls_.end(), [](const Pull& p) { return p.answered; });
  }

  std::deque<Pull> pulls_;
  std::map<std::string, std::string> subs_; ///< sid -> subject (pattern)
  bool lastWasPull_ = false;
  std::string refusal_; ///< why the latest delivery was refused (refusal())
};

} // namespace

std::optional<AckSubject> parseAckSubject(std::string_view subject) {
  if (!startsWith(subject, "$JS.ACK."))
    return std::nullopt;
  const auto t = tokens(subject);
  size_t base = 0;
  if (t.size() == 9) base = 2;
  else if (t.size() == 11 || t.size() == 12) base = 4;
  else return std::nullopt;
  AckSubject a;
  a.stream = std::string(t[base]);
  a.consumer = std::string(t[base + 1]);
  auto delivered = number(t[base + 2]);
  auto sseq = number(t[base + 3]);
  if (a.stream.empty() || a.consumer.empty() || !delivered || !sseq)
    return std::nullopt;
  a.delivered = *delivered;
  a.streamSeq = *sseq;
  return a;
}

proxy::TrackerPtr makeTracker() { return std::make_unique<NatsTracker>(); }

std::optional<std::string> errorAnswer(std::string_view request, const std::string& code) {
  if (code != kPermissionsViolation)
    return std::nullopt;
  Line line;
  if (readLine(request, line) != proxy::Decode::Message || line.args.empty())
    return std::nullopt;
  if (line.op == "PUB" || line.op == "HPUB")
    return "-ERR 'Permissions Violation for Publish to \"" + std::string(line.args[0]) + "\"'\r\n";
  // A message of a batch the server pushes: refused on the subscription that would receive it.
  if (line.op == "MSG" || line.op == "HMSG")
    return "-ERR 'Permissions Violation for Subscription to \"" + std::string(line.args[0]) + "\"'\r\n";
  return std::nullopt;
}

} // namespace idem::nats
