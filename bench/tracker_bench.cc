/// Decoding speed of the protocol trackers on recorded client traffic (tests/captures): each connection is
/// fed through a fresh tracker as the proxy feeds one connection — unconsumed bytes kept pending, whole
/// messages drained — in three ways: each direction whole (all requests pipelined, then all replies), in
/// the chunks the recording relay read (the recorded interleaving), and in pieces of 64 bytes (many
/// messages split across reads). Prints MB/s (both directions' bytes) and decoded messages/s per capture
/// set and per protocol, per second of the
/// bench thread's CPU time (not wall time: the machine may be busy); asserts nothing. Usage: tracker_bench [SECONDS_PER_MEASUREMENT]
#include "brokers/kafka/tracker.h"
#include "proxy/tracker.h"

#include <fmt/format.h>

#include <ctime>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

struct Chunk {
  bool client = true;
  std::string bytes;
};

/// tests/captures/`rel`: records of 'C'|'S', a big-endian uint32 length, the bytes (tests/captures/README.md).
std::vector<Chunk> loadCapture(const std::string& rel) {
  const std::string path = std::string(IDEM_SOURCE_DIR) + "/tests/captures/" + rel;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    fmt::print(stderr, "tracker_bench: cannot read {}\n", path);
    std::exit(2);
  }
  const std::string data{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::vector<Chunk> out;
  for (size_t pos = 0; pos + 5 <= data.size();) {
    const auto b = [&](size_t i) { return size_t(uint8_t(data[pos + i])); };
    const size_t n = (b(1) << 24) | (b(2) << 16) | (b(3) << 8) | b(4);
    out.push_back(Chunk{data[pos] != 'S', data.substr(pos + 5, n)});
    pos += 5 + n;
  }
  return out;
}

/// One direction of one connection, fed as the proxy feeds it: decoded where the bytes arrived while
/// nothing is pending, the unconsumed rest kept for the next read.
struct Direction {
  std::string pending;
  bool invalid = false;
  uint64_t messages = 0;

  template <class Msg, class Decode_>
  void feed(std::string_view got, Decode_ decode) {
    if (invalid) return;
    const bool kept = !pending.empty();
    if (kept) pending.append(got);
    const std::string_view data = kept ? std::string_view(pending) : got;
    size_t off = 0;
    Msg m;
    while (off < data.size()) {
      const idem::proxy::Decode d = decode(data.substr(off), m);
      if (d == idem::proxy::Decode::NeedMoreData) break;
      if (d == idem::proxy::Decode::Invalid || m.size == 0) {
        invalid = true;
        break;
      }
      off += m.size;
      ++messages;
    }
    if (kept) pending.erase(0, off);
    else pending.assign(data.substr(off));
  }
};

enum class Mode { Whole, Recorded, Pieces64 };
enum class Proto { Pg, Resp, Kafka };

struct Session {
  std::string name;
  Proto proto = Proto::Pg;
  std::vector<Chunk> recorded;
  std::string client, server; // each direction whole
  uint64_t bytes() const { return client.size() + server.size(); }
};

/// Feeds a recorded session through a fresh tracker; returns the messages decoded (both directions).
uint64_t replay(const Session& s, Mode mode) {
  idem::proxy::TrackerPtr t = s.proto == Proto::Pg     ? idem::proxy::makePgTracker()
                              : s.proto == Proto::Resp ? idem::proxy::makeRespTracker()
                                                       : idem::kafka::makeTracker();
  Direction c, v;
  auto onClient = [&](std::string_view b, idem::proxy::ClientMsg& m) { return t->onClient(b, m); };
  auto onServer = [&](std::string_view b, idem::proxy::ServerMsg& m) { return t->onServer(b, m); };
  auto feed = [&](bool client, std::string_view bytes, size_t piece) {
    for (size_t i = 0; i < bytes.size(); i += piece) {
      std::string_view p = bytes.substr(i, piece);
      client ? c.feed<idem::proxy::ClientMsg>(p, onClient) : v.feed<idem::proxy::ServerMsg>(p, onServer);
    }
  };
  switch (mode) {
  case Mode::Whole:
    feed(true, s.client, s.client.size());
    feed(false, s.server, s.server.size());
    break;
  case Mode::Recorded:
    for (const Chunk& ch : s.recorded) feed(ch.client, ch.bytes, ch.bytes.size());
    break;
  case Mode::Pieces64:
    for (const Chunk& ch : s.recorded) feed(ch.client, ch.bytes, 64);
    break;
  }
  if (c.invalid || v.invalid || !c.pending.empty() || !v.pending.empty()) {
    fmt::print(stderr, "tracker_bench: {} does not decode whole\n", s.name);
    std::exit(2);
  }
  return c.messages + v.messages;
}

struct Rate {
  double mbps = 0, msgps = 0;
};

/// This thread's CPU seconds: on a machine shared with builds, wall time would measure the others too.
double cpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

/// Replays the sessions over and over for about `seconds` of CPU time.
Rate measure(const std::vector<const Session*>& sessions, Mode mode, double seconds) {
  uint64_t bytes = 0, messages = 0;
  const double t0 = cpuSeconds();
  double elapsed = 0;
  do {
    for (int i = 0; i < 20; ++i)
      for (const Session* s : sessions) {
        messages += replay(*s, mode);
        bytes += s->bytes();
      }
    elapsed = cpuSeconds() - t0;
  } while (elapsed < seconds);
  return {double(bytes) / elapsed / 1e6, double(messages) / elapsed};
}

} // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 0.3;
  const std::vector<std::pair<std::string, Proto>> files = {
      {"libpq/session.cap", Proto::Pg},         {"psycopg/session.cap", Proto::Pg},
      {"node-pg/session.cap", Proto::Pg},       {"asyncpg/session.cap", Proto::Pg},
      {"pgx/session.cap", Proto::Pg},           {"hiredis/session.cap", Proto::Resp},
      {"redis-py/session.cap", Proto::Resp},    {"redis-py/session-2.cap", Proto::Resp},
      {"ioredis/session.cap", Proto::Resp},     {"resp3/session.cap", Proto::Resp},
      {"librdkafka/session.cap", Proto::Kafka}, {"librdkafka/session-2.cap", Proto::Kafka},
      {"librdkafka/session-3.cap", Proto::Kafka}, {"librdkafka/session-4.cap", Proto::Kafka},
      {"librdkafka/session-5.cap", Proto::Kafka}, {"librdkafka/session-6.cap", Proto::Kafka},
      {"kafkajs/session.cap", Proto::Kafka},    {"kafkajs/session-2.cap", Proto::Kafka},
      {"kafkajs/session-3.cap", Proto::Kafka}};
  std::vector<Session> sessions;
  for (const auto& [file, proto] : files) {
    const size_t dash = file.find("session-");
    Session s{file.substr(0, file.find('/')) + (dash != std::string::npos ? file.substr(dash + 7, 2) : ""), proto,
              loadCapture(file), {}, {}};
    for (const Chunk& ch : s.recorded) (ch.client ? s.client : s.server) += ch.bytes;
    sessions.push_back(std::move(s));
  }
  fmt::print("tracker decoding of recorded sessions, {} CPU s per measurement (MB/s of both directions; messages/s)\n",
             seconds);
  fmt::print("{:<16} {:>8} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}\n", "capture", "bytes", "whole MB/s",
             "msg/s", "recorded MB/s", "msg/s", "64 B MB/s", "msg/s");
  auto row = [&](const std::string& name, const std::vector<const Session*>& set) {
    uint64_t bytes = 0;
    for (const Session* s : set) bytes += s->bytes();
    const Rate w = measure(set, Mode::Whole, seconds), r = measure(set, Mode::Recorded, seconds),
               p = measure(set, Mode::Pieces64, seconds);
    fmt::print("{:<16} {:>8} {:>12.0f} {:>12.3g} {:>12.0f} {:>12.3g} {:>12.0f} {:>12.3g}\n", name, bytes, w.mbps,
               w.msgps, r.mbps, r.msgps, p.mbps, p.msgps);
  };
  std::vector<const Session*> pg, resp, kafka;
  for (const Session& s : sessions) {
    row(s.name, {&s});
    (s.proto == Proto::Pg ? pg : s.proto == Proto::Resp ? resp : kafka).push_back(&s);
  }
  row("PostgreSQL (all)", pg);
  row("RESP (all)", resp);
  row("Kafka (all)", kafka);
  return 0;
}
