#include "replay.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <sstream>

namespace idem::proxy::test {
namespace {

const char* kindName(ClientMsg::Kind k) {
  switch (k) {
  case ClientMsg::Kind::Pass: return "Pass";
  case ClientMsg::Kind::Part: return "Part";
  case ClientMsg::Kind::Stream: return "Stream";
  case ClientMsg::Kind::RequestEnd: return "RequestEnd";
  case ClientMsg::Kind::LocalReply: return "LocalReply";
  }
  return "?";
}

const char* kindName(ServerMsg::Kind k) {
  switch (k) {
  case ServerMsg::Kind::Pass: return "Pass";
  case ServerMsg::Kind::Part: return "Part";
  case ServerMsg::Kind::Stream: return "Stream";
  case ServerMsg::Kind::ReplyEnd: return "ReplyEnd";
  case ServerMsg::Kind::Push: return "Push";
  }
  return "?";
}

/// Drains complete messages of `pending` through `call`, appending to `out`.
template <class Msg, class Call>
void drain(std::string& pending, std::vector<Msg>& out, bool& invalid, Call call) {
  while (!invalid && !pending.empty()) {
    Msg m;
    const Decode d = call(std::string_view(pending), m);
    if (d == Decode::NeedMoreData)
      return;
    if (d == Decode::Invalid) {
      invalid = true;
      return;
    }
    REQUIRE(m.size > 0);
    REQUIRE(m.size <= pending.size());
    pending.erase(0, m.size);
    out.push_back(std::move(m));
  }
}

} // namespace

std::vector<Chunk> loadCapture(const std::string& rel) {
  const std::string path = std::string(IDEM_SOURCE_DIR) + "/tests/captures/" + rel;
  std::ifstream in(path, std::ios::binary);
  INFO(path);
  REQUIRE(in.good());
  const std::string data{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::vector<Chunk> out;
  size_t pos = 0;
  while (pos + 5 <= data.size()) {
    const auto b = [&](size_t i) { return size_t(uint8_t(data[pos + i])); };
    const size_t n = (b(1) << 24) | (b(2) << 16) | (b(3) << 8) | b(4);
    REQUIRE(pos + 5 + n <= data.size());
    out.push_back(Chunk{data[pos] != 'S', data.substr(pos + 5, n)});
    pos += 5 + n;
  }
  REQUIRE(pos == data.size());
  return out;
}

std::string joinDirection(const std::vector<Chunk>& chunks, bool client) {
  std::string out;
  for (const Chunk& c : chunks)
    if (c.client == client)
      out += c.bytes;
  return out;
}

std::string describe(const ClientMsg& m) {
  std::ostringstream o;
  o << "C " << kindName(m.kind) << " " << m.size;
  if (m.kind == ClientMsg::Kind::RequestEnd) {
    o << " " << m.step.verb << " | " << m.step.detail << (m.step.blocking ? " | blocking" : "");
    for (const auto& id : m.step.acked)
      o << " ack=" << id;
  }
  if (m.kind == ClientMsg::Kind::LocalReply)
    o << " reply=" << m.local_reply;
  if (!m.replacement.empty()) { // in hex: a binary protocol's frame
    o << " replaced=";
    for (unsigned char c : m.replacement)
      o << "0123456789abcdef"[c >> 4] << "0123456789abcdef"[c & 15];
  }
  return o.str();
}

std::string describe(const ServerMsg& m) {
  std::ostringstream o;
  o << "S " << kindName(m.kind) << " " << m.size;
  if (m.kind == ServerMsg::Kind::ReplyEnd) {
    const ReplyInfo& r = m.reply;
    o << (r.error ? " error" : " ok") << (r.empty_read ? " empty_read" : "") << " skipped=" << m.skipped
      << " | " << r.summary;
    for (const auto& e : r.delivered) {
      o << " [" << e.id;
      for (const auto& [f, v] : e.fields)
        o << " " << f << "=" << v;
      o << "]";
    }
  }
  return o.str();
}

std::vector<std::string> Events::lines(bool c) const {
  std::vector<std::string> out;
  if (c)
    for (const auto& m : client)
      out.push_back(describe(m));
  else
    for (const auto& m : server)
      out.push_back(describe(m));
  out.push_back(std::string(c ? "C" : "S") + ((c ? client_invalid : server_invalid) ? " invalid" : " end") +
                " left=" + std::to_string(c ? client_left : server_left));
  return out;
}

void Feeder::client(std::string_view bytes) {
  client_pending_ += bytes;
  drain(client_pending_, events_.client, events_.client_invalid,
        [&](std::string_view b, ClientMsg& m) { return tracker_->onClient(b, m); });
}

void Feeder::server(std::string_view bytes) {
  server_pending_ += bytes;
  drain(server_pending_, events_.server, events_.server_invalid,
        [&](std::string_view b, ServerMsg& m) { return tracker_->onServer(b, m); });
}

Events Feeder::events() const {
  Events e = events_;
  e.client_left = client_pending_.size();
  e.server_left = server_pending_.size();
  return e;
}

Events feedWhole(const Factory& make, std::string_view client, std::string_view server) {
  return feedSplit(make, client, client.size(), server, server.size());
}

Events feedSplit(const Factory& make, std::string_view client, size_t client_at, std::string_view server,
                 size_t server_at) {
  Feeder f(make());
  f.client(client.substr(0, client_at));
  f.client(client.substr(client_at));
  f.server(server.substr(0, server_at));
  f.server(server.substr(server_at));
  return f.events();
}

Events feedPieces(const Factory& make, std::string_view client, std::string_view server, size_t piece) {
  Feeder f(make());
  for (size_t i = 0; i < client.size(); i += piece)
    f.client(client.substr(i, piece));
  for (size_t i = 0; i < server.size(); i += piece)
    f.server(server.substr(i, piece));
  return f.events();
}

Events feedSession(const Factory& make, const std::vector<Chunk>& chunks, size_t piece) {
  Feeder f(make());
  for (const Chunk& c : chunks) {
    const size_t step = piece == 0 ? c.bytes.size() : piece;
    for (size_t i = 0; i < c.bytes.size(); i += step)
      (c.client ? f.client(std::string_view(c.bytes).substr(i, step))
                : f.server(std::string_view(c.bytes).substr(i, step)));
  }
  return f.events();
}

void checkSplitInvariance(const Factory& make, const std::vector<Chunk>& chunks) {
  const std::string client = joinDirection(chunks, true), server = joinDirection(chunks, false);
  const Events whole = feedWhole(make, client, server);
  const auto wc = whole.lines(true), ws = whole.lines(false);
  const auto same = [&](const Events& e, const std::string& how) {
    INFO(how);
    REQUIRE(e.lines(true) == wc);
    REQUIRE(e.lines(false) == ws);
  };
  same(feedSession(make, chunks), "recorded interleaving");
  same(feedSession(make, chunks, 1), "recorded interleaving, byte by byte");
  same(feedPieces(make, client, server, 1), "byte by byte");
  same(feedPieces(make, client, server, 7), "pieces of 7");
  for (size_t at = 0; at <= client.size(); ++at)
    same(feedSplit(make, client, at, server, server.size()), "client split at " + std::to_string(at));
  for (size_t at = 0; at <= server.size(); ++at)
    same(feedSplit(make, client, client.size(), server, at), "server split at " + std::to_string(at));
  // Truncations: a prefix of the events, the rest pending; never a crash.
  for (size_t len = 0; len < client.size(); len += 1 + len / 64) {
    const Events e = feedWhole(make, client.substr(0, len), server);
    INFO("client truncated to " << len);
    REQUIRE(e.client.size() <= whole.client.size());
    for (size_t i = 0; i < e.client.size(); ++i)
      REQUIRE(describe(e.client[i]) == describe(whole.client[i]));
  }
  for (size_t len = 0; len < server.size(); len += 1 + len / 64) {
    const Events e = feedWhole(make, client, server.substr(0, len));
    INFO("server truncated to " << len);
    REQUIRE(e.server.size() <= whole.server.size());
    for (size_t i = 0; i < e.server.size(); ++i)
      REQUIRE(describe(e.server[i]) == describe(whole.server[i]));
    REQUIRE(!e.server_invalid);
  }
}

std::vector<StepInfo> steps(const Events& e) {
  std::vector<StepInfo> out;
  for (const auto& m : e.client)
    if (m.kind == ClientMsg::Kind::RequestEnd)
      out.push_back(m.step);
  return out;
}

std::vector<std::string> verbs(const Events& e) {
  std::vector<std::string> out;
  for (const auto& m : e.client)
    if (m.kind == ClientMsg::Kind::RequestEnd)
      out.push_back(m.step.verb);
  return out;
}

std::vector<ReplyInfo> replies(const Events& e) {
  std::vector<ReplyInfo> out;
  for (const auto& m : e.server)
    if (m.kind == ServerMsg::Kind::ReplyEnd)
      out.push_back(m.reply);
  return out;
}

Events wholeOf(const Factory& make, const std::vector<Chunk>& chunks) {
  return feedWhole(make, joinDirection(chunks, true), joinDirection(chunks, false));
}

std::vector<std::string> summaries(const Events& e) {
  std::vector<std::string> out;
  for (const auto& r : replies(e))
    out.push_back(std::string(r.error ? "error: " : "") + (r.empty_read ? "empty: " : "") + r.summary);
  return out;
}

std::vector<std::string> deliveredIds(const ReplyInfo& r) {
  std::vector<std::string> out;
  for (const auto& e : r.delivered)
    out.push_back(e.id);
  return out;
}

void requireBalanced(const Events& e) {
  size_t ends = 0;
  for (const auto& m : e.server)
    if (m.kind == ServerMsg::Kind::ReplyEnd)
      ends += 1 + m.skipped;
  size_t awaiting = 0; // a one-way step ends when it is sent, with no reply
  for (const auto& st : steps(e))
    if (!st.oneWay)
      ++awaiting;
  REQUIRE(ends == awaiting);
  REQUIRE(!e.client_invalid);
  REQUIRE(!e.server_invalid);
  REQUIRE(e.client_left == 0);
  REQUIRE(e.server_left == 0);
}

} // namespace idem::proxy::test
