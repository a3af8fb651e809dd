// idemproof-kafka-server, the embedded Kafka broker: its ready line, a Kafka answer on its port, its line
// commands, its exit on SIGTERM, its refusal of bad flags; and kcat producing to it and consuming from
// it in a consumer group whose committed offsets a second run honours.
#include "bodies.h"

#include "brokers/kafka/rewrite.h"
#include "skip.h"

#include <boost/asio.hpp>
#include <boost/process.hpp>
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>

namespace bp = boost::process;
namespace asio = boost::asio;
using namespace idem::kafka;
using namespace idem::kafka::test;

namespace {

const std::string kServer = std::string(IDEM_BINARY_DIR) + "/idemproof-kafka-server";

/// The server as a child with its stdin and stdout piped.
struct Server {
  bp::opstream in;
  bp::ipstream out;
  bp::child child;
  std::string bootstrap;
  int port = 0;

  explicit Server(std::vector<std::string> args)
      : child(kServer, bp::args(std::move(args)), bp::std_in < in, bp::std_out > out) {
    REQUIRE(std::getline(out, bootstrap));
    port = std::stoi(bootstrap.substr(bootstrap.rfind(':') + 1));
  }
  std::string command(const std::string& line) {
    in << line << std::endl;
    std::string reply;
    REQUIRE(std::getline(out, reply));
    return reply;
  }
  /// SIGTERM; the exit status.
  int terminate() {
    ::kill(child.id(), SIGTERM);
    child.wait();
    return child.native_exit_code();
  }
};

/// One request to 127.0.0.1:`port`, its response frame.
std::string roundTrip(int port, const std::string& frame) {
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  s.connect({asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
  asio::write(s, asio::buffer(frame));
  std::string head(4, '\0');
  asio::read(s, asio::buffer(head.data(), 4));
  Reader r(head);
  std::string body(static_cast<size_t>(r.int32()), '\0');
  asio::read(s, asio::buffer(body.data(), body.size()));
  return head + body;
}

std::filesystem::path tempPath(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("idemproof-kafka-test-" + std::to_string(::getpid()) + "-" + name);
}

/// Runs a shell command line; its stdout.
std::string shell(const std::string& line) {
  bp::ipstream out;
  bp::child c("/bin/sh", "-c", line, bp::std_out > out, bp::std_err > bp::null);
  std::string all, l;
  while (std::getline(out, l)) all += l + "\n";
  c.wait();
  return all;
}

} // namespace

TEST_CASE("kafka server: ready line and file, Metadata on its port, commands, SIGTERM exits 0 and cleans up") {
  const auto ready = tempPath("ready");
  Server s({"--topic", "payments:3", "--ready-file", ready.string()});
  CHECK(s.bootstrap.rfind("127.0.0.1:", 0) == 0);
  std::string line;
  std::getline(std::ifstream(ready), line);
  CHECK(line == s.bootstrap);

  // Metadata v1 for every topic (a null array), answered by broker 1 on the port it printed.
  const std::string answer = roundTrip(s.port, request(api::kMetadata, 1, 9, std::string("\xff\xff\xff\xff", 4)));
  Reader r(answer);
  r.int32();
  CHECK(r.int32() == 9);
  TopicNames names;
  const RewriteResult meta = rewriteResponse(api::kMetadata, 1, r.rest(), nullptr, false, names);
  REQUIRE(meta.ok);
  REQUIRE(meta.brokers.size() == 1);
  CHECK(meta.brokers[0].id == 1);
  CHECK(meta.brokers[0].host == "127.0.0.1");
  CHECK(meta.brokers[0].port == s.port);
  CHECK(answer.find("payments") != std::string::npos);

  CHECK(s.command("topic outbox 2") == "ok");
  CHECK(s.command("errors 8 REBALANCE_IN_PROGRESS 27") == "ok");
  CHECK(s.command("errors 8 NO_SUCH_ERROR") == "error: 'NO_SUCH_ERROR' is not a Kafka error name or code");
  CHECK(s.command("rtt 1 0") == "ok");
  CHECK(s.command("down 1") == "ok");
  CHECK(s.command("up 1") == "ok");
  CHECK(s.command("bogus") == "error: unknown command or arguments: bogus");
  CHECK(s.terminate() == 0);
  CHECK(!std::filesystem::exists(ready));
}

TEST_CASE("kafka server: a bad flag is one line naming it and exit 2") {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--brokers", "0"}, {"--topic", "payments"}, {"--topic", "payments:x"}, {"--nope", "1"}, {"--brokers"}}) {
    INFO(args[0]);
    bp::ipstream err;
    bp::child c(kServer, bp::args(args), bp::std_out > bp::null, bp::std_err > err, bp::std_in < bp::null);
    std::string first;
    std::getline(err, first);
    c.wait();
    CHECK(c.exit_code() == 2);
    CHECK(first.find(args[0]) != std::string::npos);
  }
}

TEST_CASE("kafka server: kcat produces, a group consumes and commits, a second run starts from the commit") {
  if (shell("command -v kcat").empty()) idem::testing::skipTest("kcat is not installed (apt-get install kcat)");
  Server s({"--topic", "payments:3"});
  const std::string b = s.bootstrap;
  shell("printf 'w1:{\"n\":\"1\"}\\nw2:{\"n\":\"2\"}\\nw3:{\"n\":\"3\"}\\n' | kcat -P -b " + b + " -t payments -K: -H event_id=e");
  // A new group reads from the earliest offset; 6 s sessions: the embedded broker keeps a group its last
  // member left rebalancing for session.timeout.ms - 1 s before a new member can join it.
  const std::string consume =
      "kcat -b " + b + " -G grp -X auto.offset.reset=earliest -X session.timeout.ms=6000 -e -f '%k %s\\n' payments";
  const std::string first = shell(consume);
  CHECK(first.find("w1 {\"n\":\"1\"}") != std::string::npos);
  CHECK(first.find("w3 {\"n\":\"3\"}") != std::string::npos);
  shell("printf 'w4:{\"n\":\"4\"}\\n' | kcat -P -b " + b + " -t payments -K:");
  CHECK(shell(consume) == "w4 {\"n\":\"4\"}\n"); // the first run's offsets were committed
  CHECK(s.terminate() == 0);
}
