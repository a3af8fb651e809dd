/// HTTP verdicts against servers that get them wrong on purpose (tests/targets/http-hostile, one behaviour
/// per HOSTILE_MODE) and variants of the correct server: a run whose client got no final answer is never a
/// pass, the declared created status is the only success, replays are compared as the scenario declares,
/// and the scenario's own queries obey --deadline.
#include "support.h"

#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <future>
#include <thread>

using namespace itest;
namespace fs = std::filesystem;

namespace {

/// idemproof(args) with the hostile server's mode in its environment, checked to leave nothing behind.
Result hostile(const std::string& mode, const std::vector<std::string>& args) {
  Result r = idemproof(args, 0, true, {{"HOSTILE_MODE", mode}});
  INFO(mode << ": " << nlohmann::json(args).dump() << "\nstdout: " << r.out << "\nstderr: " << r.err);
  CHECK(leftovers(r.tag).empty());
  CHECK(tempDirsIn(r.tmpRoot).empty());
  return r;
}

std::set<std::string> kindsIn(const nlohmann::json& report) {
  std::set<std::string> out;
  for (const auto& v : report["violations"]) out.insert(v["kind"].get<std::string>());
  return out;
}

/// scenarios/orders.json with `edit` applied, written to a scratch file (removed at scope end).
struct OrdersVariant {
  fs::path file;
  explicit OrdersVariant(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    std::ifstream in(repo() / "scenarios" / "orders.json");
    nlohmann::json s = nlohmann::json::parse(in);
    edit(s);
    file = fs::temp_directory_path() / ("itest-" + name + "-" + std::to_string(::getpid()) + ".json");
    std::ofstream(file) << s.dump(2);
  }
  ~OrdersVariant() {
    std::error_code ec;
    fs::remove(file, ec);
  }
};

} // namespace

TEST_CASE("http: a server that never becomes ready is unknown, never a pass: run, sweep and compare") {
  // The verdict is what happens when the readiness wait ends, whatever its length: a second is ample for
  // the server (python3, no imports beyond the standard library) to listen where its mode says. The six
  // commands wait at once (each on servers of its own); their results are judged one after another.
  const std::string t = testTarget("http-hostile");
  const std::vector<std::string> modes{"never-listen", "ipv6", "wrong-port", "health-500"};
  auto start = [](std::string mode, std::vector<std::string> args) {
    return std::async(std::launch::async, [mode, args] { return idemproof(args, 0, true, {{"HOSTILE_MODE", mode}}); });
  };
  std::vector<std::future<Result>> runs;
  for (const auto& mode : modes) runs.push_back(start(mode, {"run", "--target", t, "--scenario", "orders", "--start-timeout", "1s"}));
  auto sweepRun = start("never-listen", {"sweep", "--target", t, "--scenario", "orders", "--start-timeout", "1s"});
  auto compareRun = start("never-listen", {"compare", "--target", t, "--scenario", "orders", "--start-timeout", "1s",
                                           "--runs", "1", "--per-class", "1", "--fail-on-violation"});
  auto leavesNothing = [](const Result& r) {
    CHECK(leftovers(r.tag).empty());
    CHECK(tempDirsIn(r.tmpRoot).empty());
  };
  for (size_t i = 0; i < modes.size(); ++i) {
    Result r = runs[i].get();
    INFO(modes[i] << "\nstdout: " << r.out << "\nstderr: " << r.err);
    leavesNothing(r);
    CHECK(r.status == 2);
    CHECK(r.report["verdict"] == "unknown");
    CHECK(r.err.find("did not answer GET /healthz with a 2xx") != std::string::npos);
    CHECK(r.err.find("raise --start-timeout") != std::string::npos);
  }
  Result sweep = sweepRun.get();
  INFO("sweep\nstdout: " << sweep.out << "\nstderr: " << sweep.err);
  leavesNothing(sweep);
  CHECK(sweep.status == 2);
  CHECK(sweep.out.find("pass") == std::string::npos);
  Result compare = compareRun.get();
  INFO("compare\nstdout: " << compare.out << "\nstderr: " << compare.err);
  leavesNothing(compare);
  CHECK(compare.status == 2);
  for (const auto& c : compare.report["compare"]["cells"]) CHECK(c["verdict"] != "pass");
}

TEST_CASE("http: a server whose manifest overrides PORT is never a pass") {
  fs::path dir = fs::temp_directory_path() / ("itest-port-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "target.json") << nlohmann::json{
      {"name", "port-override"}, {"kind", "http"}, {"files_outside", true}, {"scenarios", {"orders"}},
      {"command", {"/usr/bin/python3", (repo() / "tests" / "targets" / "http-hostile" / "server.py").string()}},
      {"env", {{"PORT", "1"}}}}.dump();
  Result r = hostile("404", {"run", "--target", dir.string(), "--scenario", "orders", "--start-timeout", "3s"});
  CHECK(r.status == 2); // refused, or a server that never served on the PORT it was given: unknown either way
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST_CASE("http: a server whose PORT another process took before it bound it is replaced on another port, never a crash") {
  // The test itself is the other process: the target's first process asks it (tests/targets/http-port-taken)
  // to listen on its PORT, answering 200 to everything, then cannot bind and exits 1.
  fs::path dir = scratchPath("port-taker");
  fs::create_directories(dir);
  REQUIRE(::mkfifo((dir / "ask").c_str(), 0600) == 0);
  REQUIRE(::mkfifo((dir / "done").c_str(), 0600) == 0);
  std::atomic<bool> over{false};
  std::atomic<int> taken{0};
  std::thread taker([&] {
    int port = 0;
    std::ifstream(dir / "ask") >> port;
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && ::listen(fd, 16) == 0) taken = port;
    std::ofstream(dir / "done") << "ok\n";
    while (!over) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) != 1) continue;
      int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      char buf[4096];
      (void)::recv(c, buf, sizeof buf, 0);
      const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
      (void)::send(c, ok, sizeof ok - 1, MSG_NOSIGNAL);
      ::close(c);
    }
    ::close(fd);
  });
  Result r = idemproof({"run", "--target", testTarget("http-port-taken"), "--scenario", "orders"}, 0, true,
                       {{"PORT_TAKER", dir.string()}});
  over = true;
  taker.join();
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(taken != 0);
  CHECK(r.status == 0);
  CHECK(kindsIn(r.report).count("crash") == 0);
  REQUIRE(r.report["processes"].size() >= 2);
  CHECK(r.report["processes"][0]["exit"]["by"] == "port-taken");
  bool noted = false;
  for (const auto& op : r.report["runs"][0]["history"])
    if (op["type"] == "note" && op["process"] == "s1" &&
        op["value"]["message"].get<std::string>().find(fmt::format("127.0.0.1:{} (its PORT) was taken", taken.load())) !=
            std::string::npos)
      noted = true;
  CHECK(noted);
  CHECK(leftovers(r.tag).empty());
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST_CASE("http: a server answering 404 to every POST fails unexpected-status, one sending only 102 gave no answer") {
  const std::string t = testTarget("http-hostile");
  Result r404 = hostile("404", {"run", "--target", t, "--scenario", "orders"});
  CHECK(r404.status == 1);
  CHECK(kindsIn(r404.report) == std::set<std::string>{"unexpected-status"});
  auto v = violations(r404.report, "unexpected-status");
  REQUIRE(!v.empty());
  CHECK(v[0]["invariant"] == "http:status");
  CHECK(v[0]["observed"] == 404);
  CHECK(v[0]["expected"] == 201);
  Result sweep = hostile("404", {"sweep", "--target", t, "--scenario", "orders"});
  CHECK(sweep.status == 1); // the fault-free run fails; and no fault point ran (the server makes no step)
  CHECK(!sweep.report["sweep"]["no_faults"].is_null());

  Result r102 = hostile("102", {"run", "--target", t, "--scenario", "orders"});
  CHECK(r102.status == 1);
  CHECK(kindsIn(r102.report) == std::set<std::string>{"no-answer"});
  for (const auto& op : r102.report["runs"][0]["history"])
    if (op["type"] == "response") CHECK(op["value"].value("status", 0) != 102);
}

TEST_CASE("http: a replay stored in jsonb passes with a note, one that replays another body fails") {
  Result jsonb = clean({"run", "--target", testTarget("http-correct-jsonb"), "--scenario", "orders"});
  CHECK(jsonb.status == 0);
  bool noted = false;
  for (const auto& c : jsonb.report["runs"][0]["checks"])
    if (c["checker"] == "http:replay")
      for (const auto& n : c.value("notes", nlohmann::json::array()))
        noted = noted || n.get<std::string>().find("as JSON, in other bytes") != std::string::npos;
  CHECK(noted);
  Result other = clean({"run", "--target", testTarget("http-replay-other"), "--scenario", "orders"});
  CHECK(other.status == 1);
  CHECK(kindsIn(other.report) == std::set<std::string>{"replay-mismatch"});
  // Declared byte for byte, the jsonb server's replay is a mismatch.
  OrdersVariant bytes("orders-bytes", [](nlohmann::json& s) { s["http"]["policy"]["replay_equivalence"] = "bytes"; });
  Result strict = clean({"run", "--target", testTarget("http-correct-jsonb"), "--scenario", bytes.file.string()});
  CHECK(strict.status == 1);
  CHECK(kindsIn(strict.report) == std::set<std::string>{"replay-mismatch"});
}

TEST_CASE("http: the scenario's own queries obey --deadline: a slow effects query is unknown, never a pass") {
  OrdersVariant slow("orders-slow", [](nlohmann::json& s) {
    s["http"]["effects"] = "SELECT ref, count(*) FROM orders, pg_sleep(4) GROUP BY ref";
  });
  Result r = clean({"run", "--target", target("http-correct"), "--scenario", slow.file.string(), "--deadline", "6s"});
  CHECK(r.status == 2);
  CHECK(r.err.find("field 'http.effects'") != std::string::npos);
  CHECK(r.err.find("did not finish within") != std::string::npos);
}

TEST_CASE("http: sweep and run carry out drop, delay and error at the server's steps, and the correct server passes") {
  // The orders scenario with a default schedule of one key sent twice: the server's first answer and its
  // replay, every step of each, at two thirds of the points of the scenario's own (two keys, one retried).
  OrdersVariant twice("orders-twice", [](nlohmann::json& s) {
    auto& d = s["default_schedule"];
    d["events"] = nlohmann::json::array({d["events"][0]});
    d["client"] = nlohmann::json::parse(R"([{"op": "send", "key": 1}, {"op": "send", "key": 1}])");
  });
  Result sweep = clean({"sweep", "--target", target("http-correct"), "--scenario", twice.file.string(), "--faults",
                        "drop,delay,error"});
  CHECK(sweep.status == 0);
  CHECK(sweep.out.find(" 0 not fired") != std::string::npos);
  std::set<std::string> kinds, verbs;
  for (const auto& p : sweep.report["sweep"]["points"]) {
    kinds.insert(p["kind"].get<std::string>());
    std::string point = p["point"];
    point = point.substr(0, point.find('#'));
    verbs.insert(point.substr(point.rfind(':') + 1));
  }
  CHECK(kinds == std::set<std::string>{"drop", "delay", "error"});
  CHECK(verbs == std::set<std::string>{"BEGIN", "SELECT", "INSERT", "UPDATE", "COMMIT"});
  // The ambiguous commit on the server that forgets its key outside the transaction: the key stays in
  // progress for good, as after a kill there.
  Result drop = clean({"run", "--target", target("http-key-outside-tx"), "--scenario", "orders", "--crash",
                       "drop:after:COMMIT#1"});
  CHECK(drop.status == 1);
}
