// Untrusted bytes: thousands of rounds of random bytes and of random mutations of the recorded
// captures, fed in random pieces. No crash, no hang, every size within its buffer — and the events do
// not depend on how the bytes were split, whatever the bytes are.
#include "replay.h"

#include <catch2/catch.hpp>

#include <random>

using namespace idem::proxy;
using namespace idem::proxy::test;

namespace {

constexpr unsigned kSeed = 20240611;

std::string randomBytes(std::mt19937& rng, size_t n, bool ascii) {
  std::string out(n, '\0');
  std::uniform_int_distribution<int> byte(0, 255);
  static constexpr char kResp[] = "+-:$*_,#!=(%~|>\r\n0123456789-?abcQZSEPBDHXC \0";
  for (char& c : out)
    c = ascii ? kResp[size_t(byte(rng)) % (sizeof kResp - 1)] : char(byte(rng));
  return out;
}

/// A copy of `s` with a few random edits: byte flips, insertions, deletions, duplicated ranges.
std::string mutate(std::mt19937& rng, std::string s) {
  const int edits = 1 + int(rng() % 8);
  for (int i = 0; i < edits && !s.empty(); ++i) {
    const size_t at = rng() % s.size();
    switch (rng() % 5) {
    case 0: s[at] = char(rng()); break;
    case 1: s[at] ^= char(1u << (rng() % 8)); break;
    case 2: s.insert(at, randomBytes(rng, 1 + rng() % 8, rng() % 2)); break;
    case 3: s.erase(at, 1 + rng() % 16); break;
    default: s.insert(at, s.substr(rng() % s.size(), 1 + rng() % 64)); break;
    }
  }
  return s;
}

/// Feeds client then server bytes in random pieces; must equal whole feeding.
void checkRandomSplits(std::mt19937& rng, const Factory& make, const std::string& client,
                       const std::string& server) {
  const Events whole = feedWhole(make, client, server);
  Feeder f(make());
  for (size_t i = 0; i < client.size();) {
    const size_t n = 1 + rng() % 64;
    f.client(std::string_view(client).substr(i, n));
    i += n;
  }
  for (size_t i = 0; i < server.size();) {
    const size_t n = 1 + rng() % 64;
    f.server(std::string_view(server).substr(i, n));
    i += n;
  }
  const Events split = f.events();
  REQUIRE(split.lines(true) == whole.lines(true));
  REQUIRE(split.lines(false) == whole.lines(false));
}

/// Each capture and whether it is PostgreSQL.
const std::vector<std::pair<const char*, bool>> kCaptures = {
    {"libpq/session.cap", true},      {"psycopg/session.cap", true},     {"node-pg/session.cap", true},
    {"asyncpg/session.cap", true},    {"pgx/session.cap", true},         {"hiredis/session.cap", false},   {"redis-py/session.cap", false},
    {"redis-py/session-2.cap", false}, {"ioredis/session.cap", false},   {"resp3/session.cap", false},
};

} // namespace

TEST_CASE("random bytes: no crash, sizes within the buffer, split-independent") {
  std::mt19937 rng(kSeed);
  for (int round = 0; round < 4000; ++round) {
    INFO("seed " << kSeed << " round " << round);
    const bool ascii = round % 2;
    const std::string client = randomBytes(rng, rng() % 300, ascii), server = randomBytes(rng, rng() % 300, ascii);
    checkRandomSplits(rng, makeRespTracker, client, server);
    checkRandomSplits(rng, makePgTracker, client, server);
  }
}

TEST_CASE("random mutations of the captures: no crash, sizes within the buffer, split-independent") {
  std::mt19937 rng(kSeed + 1);
  for (const auto& [name, pg] : kCaptures) {
    const Factory make = pg ? Factory(makePgTracker) : Factory(makeRespTracker);
    const Factory other = pg ? Factory(makeRespTracker) : Factory(makePgTracker);
    const auto chunks = loadCapture(name);
    const std::string client = joinDirection(chunks, true), server = joinDirection(chunks, false);
    for (int round = 0; round < 400; ++round) {
      INFO(name << " seed " << kSeed + 1 << " round " << round);
      const bool which = rng() % 2;
      checkRandomSplits(rng, make, which ? mutate(rng, client) : client, which ? server : mutate(rng, server));
      // Each direction alone through the other tracker too: garbage for it.
      checkRandomSplits(rng, other, mutate(rng, client), mutate(rng, server));
    }
  }
}
