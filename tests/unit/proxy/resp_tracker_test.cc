// The RESP tracker on hand-built commands and replies: framing, naming, blocking, XACK ids, reads.
#include "proxy/abbrev.h"
#include "proxy/resp_command.h"
#include "proxy/resp_value.h"
#include "resp_messages.h"

#include <catch2/catch.hpp>

#include <functional>
#include <numeric>

using namespace idem::proxy;
using namespace idem::proxy::test;

namespace {

using Strings = std::vector<std::string>;

} // namespace

TEST_CASE("resp commands: multibulk and inline, verb upper case, detail escaped and bounded") {
  ClientMsg m = oneCommand(cmd({"set", "k", std::string("a\0b\n", 4)}));
  CHECK(m.kind == ClientMsg::Kind::RequestEnd);
  CHECK(m.step.verb == "SET");
  CHECK(m.step.detail == "set k a\\x00b\\n");
  m = oneCommand("ping\r\n");
  CHECK(m.step.verb == "PING");
  CHECK(m.size == 6);
  m = oneCommand("set \"a b\" 'c d' \"\\x41\\n\"\n");
  CHECK(m.step.detail == "set a b c d A\\n");
  m = oneCommand(cmd({"SET", "k", std::string(5000, 'v')}));
  CHECK(m.step.detail.size() == 200);
  CHECK(m.step.detail.substr(197) == "...");
  CHECK(oneCommand("\r\n").kind == ClientMsg::Kind::Pass);   // empty line: ignored by the server
  CHECK(oneCommand("*0\r\n").kind == ClientMsg::Kind::Pass);
  oneCommand("*2\r\n$3\r\nGET\r\n", Decode::NeedMoreData);
  oneCommand("*2\r\n$3\r\nGET\r\n$1\r\nk", Decode::NeedMoreData);
  oneCommand("*1\r\n:1\r\n", Decode::Invalid);              // not a bulk string
  oneCommand("*1\r\n$3\r\nGETX\r\n", Decode::Invalid);      // no CRLF after the bulk
  oneCommand("*x\r\n", Decode::Invalid);
  oneCommand("*1\r\n$-1\r\n", Decode::Invalid);
  oneCommand("set \"a\r\n", Decode::Invalid);               // unbalanced quotes
  oneCommand(std::string(70000, 'a'), Decode::Invalid);    // inline line too long
}

TEST_CASE("resp commands: a password in a step's detail is masked, whatever command carries it") {
  CHECK(oneCommand(cmd({"AUTH", "s3cret"})).step.detail == "AUTH ***");
  CHECK(oneCommand(cmd({"auth", "default", "s3cret"})).step.detail == "auth default ***");
  CHECK(oneCommand(cmd({"HELLO", "3", "AUTH", "default", "s3cret", "SETNAME", "c1"})).step.detail ==
        "HELLO 3 AUTH default *** SETNAME c1");
  CHECK(oneCommand(cmd({"hello", "3", "setname", "c1", "auth", "u", "s3cret"})).step.detail == "hello 3 setname c1 auth u ***");
  CHECK(oneCommand(cmd({"MIGRATE", "h", "6379", "", "0", "5000", "AUTH", "s3cret", "KEYS", "k"})).step.detail ==
        "MIGRATE h 6379  0 5000 AUTH *** KEYS k");
  CHECK(oneCommand(cmd({"MIGRATE", "h", "6379", "k", "0", "5000", "AUTH2", "u", "s3cret"})).step.detail ==
        "MIGRATE h 6379 k 0 5000 AUTH2 u ***");
  CHECK(oneCommand(cmd({"CONFIG", "SET", "maxmemory", "1mb", "requirepass", "s3cret"})).step.detail ==
        "CONFIG SET maxmemory 1mb requirepass ***");
  CHECK(oneCommand(cmd({"HELLO", "3"})).step.detail == "HELLO 3");
  CHECK(oneCommand(cmd({"SET", "auth", "s3cret"})).step.detail == "SET auth s3cret"); // a value, no password
  CHECK(oneCommand("AUTH s3cret\r\n").step.detail == "AUTH ***");               // inline
}

TEST_CASE("resp commands: blocking reads and pops, XACK ids") {
  CHECK(oneCommand(cmd({"XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"})).step.blocking);
  CHECK(oneCommand(cmd({"xread", "count", "1", "block", "10", "streams", "s", "$"})).step.blocking);
  CHECK(!oneCommand(cmd({"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"})).step.blocking);
  CHECK(!oneCommand(cmd({"XREAD", "STREAMS", "BLOCK", "0"})).step.blocking); // a stream named BLOCK
  for (const char* v : {"BLPOP", "brpop", "BLMOVE", "BZPOPMIN", "BZMPOP", "WAIT"})
    CHECK(oneCommand(cmd({v, "k", "0"})).step.blocking);
  CHECK(!oneCommand(cmd({"LPOP", "k"})).step.blocking);
  CHECK(oneCommand(cmd({"XACK", "s", "g", "1-0", "2-0"})).step.acked == Strings{"1-0", "2-0"});
  CHECK(oneCommand(cmd({"XACK", "s", "g"})).step.acked.empty());
  CHECK(oneCommand(cmd({"xgroup", "delconsumer", "s", "g", "c1"})).step.deletesConsumer == "c1");
  CHECK(oneCommand(cmd({"XGROUP", "CREATECONSUMER", "s", "g", "c1"})).step.deletesConsumer.empty());
}

TEST_CASE("resp replies: RESP2 and RESP3 types summarized, errors flagged") {
  const Strings get = {"GET", "k"};
  CHECK(replyTo(get, "+OK\r\n").summary == "+OK");
  CHECK(replyTo(get, ":-12\r\n").summary == "(integer) -12");
  CHECK(replyTo(get, "$-1\r\n").summary == "(nil)");
  CHECK(replyTo(get, "*-1\r\n").summary == "(nil)");
  CHECK(replyTo(get, "_\r\n").summary == "(nil)");
  CHECK(replyTo(get, "$0\r\n\r\n").summary == "\"\"");
  CHECK(replyTo(get, "*0\r\n").summary == "(empty array)");
  CHECK(replyTo(get, "*2\r\n*1\r\n:1\r\n%1\r\n+a\r\n~1\r\n,1.5\r\n").summary == "(array) 2 elements");
  CHECK(replyTo(get, "#f\r\n").summary == "(boolean) false");
  const ReplyInfo err = replyTo(get, "-WRONGTYPE Operation against a key\r\n");
  CHECK(err.error);
  CHECK(err.summary == "-WRONGTYPE Operation against a key");
  const ReplyInfo blob = replyTo(get, "!9\r\nERR oops!\r\n");
  CHECK(blob.error);
  CHECK(blob.summary == "-ERR oops!");
  const ReplyInfo big = replyTo(get, "$1000\r\n" + std::string(1000, '\xff') + "\r\n");
  CHECK(big.summary.size() == 200);
}

TEST_CASE("resp replies: attributes are part of the next reply, pushes pass, strays pass") {
  const Events e = run(cmd({"GET", "k"}) + cmd({"GET", "j"}),
                       ">2\r\n+invalidate\r\n*1\r\n+k\r\n|1\r\n+ttl\r\n:3\r\n$1\r\nv\r\n"
                       "*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n+extra\r\n");
  std::vector<ServerMsg::Kind> kinds;
  for (const auto& m : e.server)
    kinds.push_back(m.kind);
  using K = ServerMsg::Kind;
  CHECK(kinds == std::vector<K>{K::Pass, K::Part, K::ReplyEnd, K::ReplyEnd, K::Pass});
  CHECK(replies(e)[1].summary == "(array) 2 elements"); // the nested attribute is not an element
}

TEST_CASE("resp reads: XREADGROUP RESP2 and RESP3, deleted entries, empty reads") {
  const Strings read = {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0"};
  const ReplyInfo r2 = replyTo(read, "*1\r\n*2\r\n$1\r\ns\r\n*2\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
                                     "*2\r\n$3\r\n2-0\r\n*-1\r\n");
  CHECK(deliveredIds(r2) == Strings{"1-0", "2-0"});
  CHECK(r2.delivered[0].fields == std::vector<std::pair<std::string, std::string>>{{"f", "v"}});
  CHECK(r2.delivered[1].fields.empty());
  CHECK(!r2.empty_read);
  CHECK(r2.summary == "2 entries");
  const ReplyInfo r3 = replyTo(read, "%2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n3-0\r\n*0\r\n$1\r\nt\r\n*1\r\n*2\r\n"
                                     "$3\r\n4-1\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n");
  CHECK(deliveredIds(r3) == Strings{"3-0", "4-1"});
  for (const char* none : {"*-1\r\n", "_\r\n", "*1\r\n*2\r\n$1\r\ns\r\n*0\r\n", "%0\r\n"}) {
    const ReplyInfo r = replyTo(read, none);
    CHECK(r.empty_read);
    CHECK(r.delivered.empty());
    CHECK(r.summary == "0 entries");
  }
  const ReplyInfo err = replyTo(read, "-NOGROUP No such key\r\n");
  CHECK(err.error);
  CHECK(!err.empty_read);
  CHECK(!replyTo({"GET", "k"}, "*-1\r\n").empty_read); // not a read
  CHECK(!r2.settles);
  // NOACK: what the read delivers is acknowledged by its delivery (never pending in the group); a stream
  // named NOACK is no option.
  const std::string one = "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n";
  CHECK(replyTo({"XREADGROUP", "GROUP", "g", "c", "COUNT", "10", "BLOCK", "100", "NOACK", "STREAMS", "s", ">"}, one).settles);
  CHECK(replyTo({"xreadgroup", "group", "g", "c", "noack", "streams", "s", ">"}, one).settles);
  CHECK(!replyTo({"XREADGROUP", "GROUP", "g", "c", "STREAMS", "NOACK", ">"}, one).settles);
}

TEST_CASE("resp reads: XAUTOCLAIM on Redis 7 and 6.2, XCLAIM, JUSTID") {
  const std::string entry = "*2\r\n$3\r\n5-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n";
  const Strings autoclaim = {"XAUTOCLAIM", "s", "g", "c", "0", "0-0"};
  CHECK(deliveredIds(replyTo(autoclaim, "*3\r\n$3\r\n0-0\r\n*1\r\n" + entry + "*1\r\n$3\r\n6-0\r\n")) == Strings{"5-0"});
  CHECK(deliveredIds(replyTo(autoclaim, "*2\r\n$3\r\n0-0\r\n*2\r\n" + entry + "*-1\r\n")) == Strings{"5-0"});
  CHECK(replyTo(autoclaim, "*3\r\n$3\r\n0-0\r\n*0\r\n*0\r\n").empty_read);
  CHECK(deliveredIds(replyTo({"XCLAIM", "s", "g", "c", "0", "5-0", "7-0"}, "*2\r\n" + entry + "*-1\r\n")) ==
        Strings{"5-0"});
  const ReplyInfo justid = replyTo({"XCLAIM", "s", "g", "c", "0", "5-0", "JUSTID"}, "*1\r\n$3\r\n5-0\r\n");
  CHECK(justid.delivered.empty());
  CHECK(!justid.empty_read);
  CHECK(justid.summary == "(array) 1 element");
  CHECK(justid.claimedIds == Strings{"5-0"}); // held by the claimant, nothing handed over yet
  const ReplyInfo autoJustid = replyTo({"XAUTOCLAIM", "s", "g", "c", "0", "0-0", "COUNT", "5", "JUSTID"},
                                       "*3\r\n$3\r\n0-0\r\n*2\r\n$3\r\n5-0\r\n$3\r\n7-0\r\n*0\r\n");
  CHECK(autoJustid.delivered.empty());
  CHECK(autoJustid.claimedIds == Strings{"5-0", "7-0"});
  // RESP3 sets the ids may come in; an error claims nothing.
  CHECK(replyTo({"XCLAIM", "s", "g", "c", "0", "5-0", "JUSTID"}, "~1\r\n$3\r\n5-0\r\n").claimedIds == Strings{"5-0"});
  CHECK(replyTo({"XCLAIM", "s", "g", "c", "0", "5-0", "JUSTID"}, "-NOGROUP no\r\n").claimedIds.empty());
}

TEST_CASE("resp reads: XRANGE and XREVRANGE return entries outside the group, never delivered") {
  const std::string entry = "*2\r\n$3\r\n5-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n";
  const ReplyInfo range = replyTo({"XRANGE", "s", "5-0", "5-0"}, "*1\r\n" + entry);
  CHECK(range.delivered.empty());
  CHECK(range.ranged == Strings{"5-0"});
  CHECK(range.claimedIds.empty());
  CHECK(replyTo({"xrevrange", "s", "+", "-", "COUNT", "1"}, "*1\r\n" + entry).ranged == Strings{"5-0"});
  CHECK(replyTo({"XRANGE", "s", "9-0", "9-0"}, "*0\r\n").ranged.empty());
  CHECK(!replyTo({"XRANGE", "s", "9-0", "9-0"}, "*0\r\n").empty_read); // no read of the group's
}

TEST_CASE("resp framing: NeedMoreData consumes nothing, what cannot be RESP is Invalid") {
  auto t = makeRespTracker();
  ServerMsg m;
  const std::string reply = "*2\r\n$3\r\nabc\r\n%1\r\n:1\r\n#t\r\n";
  for (size_t n = 0; n < reply.size(); ++n)
    REQUIRE(t->onServer(reply.substr(0, n), m) == Decode::NeedMoreData);
  REQUIRE(t->onServer(reply + "+x", m) == Decode::Message);
  CHECK(m.size == reply.size());
  for (const char* bad : {"?\r\n", "+OK\n", "$3\r\nabcd\r\n", "$?\r\n", "*?\r\n", ":x\r\n", "_x\r\n",
                          "$-2\r\n", "!-1\r\n", "~-1\r\n", "*1\r\n@\r\n"})
    CHECK(makeRespTracker()->onServer(bad, m) == Decode::Invalid);
  std::string deep;
  for (int i = 0; i < 100; ++i)
    deep += "*1\r\n";
  CHECK(makeRespTracker()->onServer(deep + ":1\r\n", m) == Decode::Invalid);
  CHECK(makeRespTracker()->onServer("$600000000\r\n", m) == Decode::Invalid);
  CHECK(makeRespTracker()->onServer("*4294967295\r\n:1\r\n", m) == Decode::NeedMoreData);
}

TEST_CASE("resp: a command too large to hold is framed in pieces the proxy may forward, ending in its last byte") {
  // A 3 MiB SET value and an XADD with a 2 MiB field, pipelined, then their replies.
  const std::string big(3 << 20, 'v'), field(2 << 20, 'f');
  const std::string client = cmd({"SET", "k", big}) + cmd({"XADD", "s", "*", "payload", field}) + cmd({"PING"});
  const std::string server = "+OK\r\n$15\r\n1700000000000-0\r\n+PONG\r\n";
  const Events whole = feedWhole(makeRespTracker, client, server);
  for (size_t piece : {size_t(65536), size_t(100000), size_t(1 << 20), size_t(7777777)}) {
    INFO("pieces of " << piece << " bytes");
    const Events e = feedPieces(makeRespTracker, client, server, piece);
    REQUIRE(!e.client_invalid);
    REQUIRE(e.client_left == 0);
    CHECK(verbs(e) == verbs(whole));
    CHECK(steps(e).at(0).detail == steps(whole).at(0).detail);
    CHECK(summaries(e) == summaries(whole));
    const Sizes sizes = sizesOf(e.client);
    // Bytes arriving as the proxy reads them (64 KiB at a time): nothing it must hold is larger than the
    // framing bound. (A command that arrives whole in one piece is already in memory, and is one message.)
    if (piece <= kRespStreamAbove) CHECK(sizes.largestHeld <= kRespStreamAbove + 100);
    CHECK(sizes.total == client.size());
    if (piece < client.size()) CHECK(sizes.streamed > big.size()); // the value went through, not held
    // Each streamed command ends in a RequestEnd of its last byte.
    for (size_t i = 1; i < e.client.size(); ++i)
      if (e.client[i - 1].kind == ClientMsg::Kind::Stream && e.client[i].kind == ClientMsg::Kind::RequestEnd)
        CHECK(e.client[i].size == 1);
  }
  const std::string detail = steps(whole).at(0).detail;
  CHECK(detail.rfind("SET k vvvv", 0) == 0);
  CHECK(detail.size() <= kAbbrevMax);
}

TEST_CASE("resp: a command framed in pieces whose bulk is not followed by CRLF is invalid") {
  std::string c = cmd({"SET", "k", std::string(3 << 20, 'v')});
  c[c.size() - 2] = 'X'; // the CR after the value
  const Events e = feedPieces(makeRespTracker, c, "", 65536);
  CHECK(e.client_invalid);
  CHECK(verbs(e).empty());
}

TEST_CASE("resp: a bulk reply too large to hold is framed in pieces, ending in its last byte") {
  const std::string big(3 << 20, 'w');
  const std::string client = cmd({"GET", "k"}) + cmd({"PING"});
  const std::string server = "$" + std::to_string(big.size()) + "\r\n" + big + "\r\n" + "+PONG\r\n";
  const Events whole = feedWhole(makeRespTracker, client, server);
  REQUIRE(summaries(whole).size() == 2);
  CHECK(summaries(whole)[0].rfind("\"wwww", 0) == 0);
  for (size_t piece : {size_t(65536), size_t(100000), size_t(1 << 20)}) {
    INFO("pieces of " << piece << " bytes");
    const Events e = feedPieces(makeRespTracker, client, server, piece);
    REQUIRE(!e.server_invalid);
    CHECK(e.server_left == 0);
    CHECK(summaries(e) == summaries(whole));
    const Sizes sizes = sizesOf(e.server);
    CHECK(sizes.largestHeld <= kRespStreamAbove + piece);
    CHECK(sizes.total == server.size());
    CHECK(sizes.streamed > big.size() - kRespStreamAbove);
    CHECK(e.server[e.server.size() - 2].kind == ServerMsg::Kind::ReplyEnd); // the GET's last byte
    CHECK(e.server[e.server.size() - 2].size == 1);
  }
  std::string broken = server;
  broken[broken.find("\r\n+PONG")] = 'X';
  CHECK(feedPieces(makeRespTracker, client, broken, 65536).server_invalid);
}

TEST_CASE("resp: a read reply too large to hold is framed in pieces, its entries are still seen") {
  const std::string big(3 << 20, 'f');
  const std::string client = cmd({"XREADGROUP", "GROUP", "g", "c1", "COUNT", "10", "STREAMS", "s", ">"}) + cmd({"PING"});
  // [[s, [[1-0, [payload, <3 MiB>, n, 1]], [2-0, [n, 2]]]]], then +PONG
  const std::string entries = "*2\r\n*2\r\n$3\r\n1-0\r\n*4\r\n$7\r\npayload\r\n$" + std::to_string(big.size()) + "\r\n" +
                              big + "\r\n$1\r\nn\r\n$1\r\n1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nn\r\n$1\r\n2\r\n";
  const std::string server = "*1\r\n*2\r\n$1\r\ns\r\n" + entries + "+PONG\r\n";
  const Events whole = feedWhole(makeRespTracker, client, server);
  REQUIRE(replies(whole).size() == 2);
  REQUIRE(deliveredIds(replies(whole)[0]) == Strings{"1-0", "2-0"});
  for (size_t piece : {size_t(65536), size_t(100000), size_t(1 << 20)}) {
    INFO("pieces of " << piece << " bytes");
    const Events e = feedPieces(makeRespTracker, client, server, piece);
    REQUIRE(!e.server_invalid);
    CHECK(e.server_left == 0);
    REQUIRE(replies(e).size() == 2);
    CHECK(deliveredIds(replies(e)[0]) == Strings{"1-0", "2-0"});
    CHECK(summaries(e) == summaries(whole));
    const auto fields = replies(e)[0].delivered.at(0).fields; // a copy: replies() returns a new vector
    REQUIRE(fields.size() == 2);
    CHECK(fields[0].first == "payload");
    CHECK(fields[0].second.size() == kRespSkeletonKeep); // cut, as a whole reply cuts it
    CHECK(replies(e)[0].delivered.at(0).fields == replies(whole)[0].delivered.at(0).fields);
    CHECK(fields[1] == std::make_pair(std::string("n"), std::string("1")));
    const Sizes sizes = sizesOf(e.server);
    CHECK(sizes.largestHeld <= kRespStreamAbove + piece);
    CHECK(sizes.total == server.size());
    CHECK(e.server[e.server.size() - 2].kind == ServerMsg::Kind::ReplyEnd);
    CHECK(e.server[e.server.size() - 2].size == 1);
  }
}

namespace {

/// Feeds `bytes` to a framer in two pieces split at `at`, the way the proxy does (unconsumed bytes kept,
/// the framer called until it needs more). Returns the piece sizes; `done` set when the last one ended it.
template <class Framer>
std::vector<size_t> frame(Framer& f, std::string_view bytes, size_t at, bool& done, bool& invalid) {
  std::vector<size_t> pieces;
  std::string pending;
  done = invalid = false;
  for (std::string_view part : {bytes.substr(0, at), bytes.substr(at)}) {
    pending += part;
    while (!done && !invalid) {
      size_t size = 0;
      const Decode d = f.next(pending, size, done);
      if (d == Decode::Invalid) invalid = true;
      if (d != Decode::Message) break;
      REQUIRE(size > 0);
      REQUIRE(size <= pending.size());
      pieces.push_back(size);
      pending.erase(0, size);
    }
  }
  return pieces;
}

/// Frames `bytes` split at every offset: each time it ends exactly at its end, its last byte alone;
/// `also` checks the framer afterwards.
template <class Framer>
void checkEverySplit(const std::string& bytes, const std::function<void(const Framer&)>& also = {}) {
  for (size_t at = 0; at <= bytes.size(); ++at) {
    INFO(nlohmann::json(bytes).dump() << " split at " << at);
    Framer f;
    bool done = false, invalid = false;
    auto pieces = frame(f, bytes, at, done, invalid);
    REQUIRE(!invalid);
    REQUIRE(done);
    CHECK(std::accumulate(pieces.begin(), pieces.end(), size_t(0)) == bytes.size());
    CHECK(pieces.back() == 1);
    if (also) also(f);
  }
}

} // namespace

TEST_CASE("resp framers: every value, split at every offset, ends at its last byte alone with its outline") {
  const std::vector<std::string> values = {
      "$5\r\nhello\r\n", "$0\r\n\r\n", "$-1\r\n", "+OK\r\n", ":42\r\n", "_\r\n", "*0\r\n", "*-1\r\n",
      "*2\r\n$1\r\na\r\n*2\r\n:1\r\n$3\r\nbcd\r\n", "%1\r\n+k\r\n*1\r\n$1\r\nv\r\n",
      "*2\r\n|1\r\n+ttl\r\n:3\r\n$1\r\nx\r\n$0\r\n\r\n", "*1\r\n*1\r\n*1\r\n$2\r\nzz\r\n", "~2\r\n#t\r\n,1.5\r\n",
      "=8\r\ntxt:abcd\r\n", "*3\r\n$-1\r\n*0\r\n_\r\n"};
  for (const auto& v : values) {
    size_t whole = 0;
    REQUIRE(parseResp(v, whole, nullptr) == Decode::Message);
    checkEverySplit<RespReplyStream>(v, [&](const RespReplyStream& f) {
      size_t size = 0;
      REQUIRE(parseResp(f.skeleton(), size, nullptr) == Decode::Message);
      CHECK(f.skeleton() == v); // short strings: the outline is the value itself
    });
  }
  // Commands: the same for RespCommandStream.
  for (const auto& c : {cmd({"SET", "k", "v"}), cmd({"XADD", "s", "*", "f", ""}), cmd({"PING"})})
    checkEverySplit<RespCommandStream>(c);
}

TEST_CASE("resp framers: bytes that are no RESP are invalid, never a value") {
  for (const std::string& bad : {std::string("$3\r\nabcX\r\n"), std::string("*1\r\n?x\r\n"), std::string("$-2\r\n"),
                                 std::string("!-1\r\n"), std::string("*a\r\n"),
                                 // found by tests/fuzz/resp_framers_fuzz.cc: a null with text, which parseResp
                                 // rejects, made an outline parseResp could not read
                                 std::string("_x\r\n"), std::string("|1\r\n+a\r\n+b\r\n+c\r\n")}) {
    INFO(nlohmann::json(bad).dump());
    RespReplyStream f;
    bool done = false, invalid = false;
    frame(f, bad, bad.size(), done, invalid);
    CHECK(invalid);
    CHECK(!done);
  }
}
