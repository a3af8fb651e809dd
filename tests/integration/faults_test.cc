/// Faults beyond SIGKILL end to end (docs/faults.md): dropped connections, error replies, delays, a broker
/// that forgets, server restarts — against the reference targets and Python consumers (psycopg, redis-py),
/// on real PostgreSQL and Valkey/Redis.
#include "support.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace itest;

namespace {

/// The report's history ops of run `id` (the first run when empty).
nlohmann::json historyOf(const nlohmann::json& report, const std::string& id = "") {
  for (const auto& r : report["runs"])
    if (id.empty() || r["id"] == id) return r["history"];
  return nlohmann::json::array();
}

/// The texts of the notes of a run.
std::vector<std::string> notesOf(const nlohmann::json& report) {
  std::vector<std::string> out;
  for (const auto& op : historyOf(report))
    if (op["type"] == "note") out.push_back(op["value"]["message"]);
  return out;
}

/// Every consumer log kept in a report folder, concatenated.
std::string logsOf(const Result& r) {
  std::string all;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(r.reportDir / "logs", ec)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path());
    std::stringstream s;
    s << in.rdbuf();
    all += s.str();
  }
  return all;
}

bool anyContains(const std::vector<std::string>& texts, const std::string& part) {
  for (const auto& t : texts)
    if (t.find(part) != std::string::npos) return true;
  return false;
}

/// A sweep's points cover each verb of a consumer's work, on a first delivery and on the producer's retry.
void requireEveryVerbAndRetry(const nlohmann::json& sweep) {
  std::set<std::string> verbs;
  bool retry = false;
  for (const auto& p : sweep["points"]) {
    std::string point = p["point"];
    point = point.substr(0, point.find('#'));
    verbs.insert(point.substr(point.rfind(':') + 1));
    retry = retry || p["class"].get<std::string>().find("role=retry") != std::string::npos;
  }
  for (const char* v : {"XREADGROUP", "BEGIN", "INSERT", "UPDATE", "COMMIT", "XACK"}) {
    INFO(v);
    CHECK(verbs.count(v) == 1);
  }
  CHECK(retry);
}

} // namespace

TEST_CASE("faults: sweep --faults drop finds retry-no-dedup duplicating at after:COMMIT points") {
  Result r = clean({"sweep", "--target", target("retry-no-dedup"), "--scenario", "wallet", "--faults", "drop"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  CHECK(r.report["sweep"]["fault_kinds"] == nlohmann::json::array({"drop"}));
  int afterCommit = 0;
  for (const auto& p : r.report["sweep"]["points"]) {
    std::string point = p["point"];
    CHECK(point.rfind("drop:", 0) == 0);
    CHECK(p["fired"] == true);
    if (point.rfind("drop:after:COMMIT#", 0) == 0 && p["verdict"] == "fail")
      for (const auto& k : p["kinds"]) afterCommit += k == "duplicate";
  }
  CHECK(afterCommit > 0);
}

TEST_CASE("faults: the ambiguous commit alone duplicates a retrying consumer, a drop before COMMIT does not") {
  // One event, no producer retry: only the lost reply of a COMMIT that took effect can apply it twice.
  for (const char* who : {"retry-no-dedup", "py-retry-naive"}) {
    std::string dir = std::string(who) == "py-retry-naive" ? testTarget(who) : target(who);
    Result after = clean({"run", "--target", dir, "--events", "1", "--crash", "drop:after:COMMIT#1"});
    INFO(who << "\n" << after.out << after.err);
    CHECK(after.status == 1);
    REQUIRE(violations(after.report, "duplicate").size() == 1);
    CHECK(violations(after.report, "crash").empty());
    Result before = clean({"run", "--target", dir, "--events", "1", "--crash", "drop:before:COMMIT#1"});
    INFO(before.out << before.err);
    CHECK(before.status == 0);
  }
}

TEST_CASE("faults: dedup-table passes a sweep of every fault kind, each of which fired") {
  // Two generated events and the retry of event 2 (sweep --events): every verb and both paths of the dedup
  // table (first delivery, duplicate), at half the points of the default schedule's sweep. The kill sweep of
  // the default schedule is sweep_test's.
  Result r = clean({"sweep", "--target", target("dedup-table"), "--scenario", "wallet", "--faults",
                    "kill,drop,delay,error,forget,restart", "--events", "2", "--seed", "1"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  std::map<std::string, int> byKind;
  for (const auto& p : r.report["sweep"]["points"]) {
    CHECK(p["fired"] == true);
    CHECK(p["verdict"] == "pass");
    byKind[p["kind"]]++;
  }
  for (const char* k : {"kill", "drop", "delay", "error", "forget", "restart"}) {
    INFO(k);
    CHECK(byKind[k] > 0);
  }
  CHECK(byKind["drop"] == byKind["kill"]);    // before and after every step
  CHECK(byKind["error"] * 2 == byKind["kill"]); // before every step
  CHECK(byKind["restart"] == byKind["kill"]);  // the step's own server, before and after every step
  requireEveryVerbAndRetry(r.report["sweep"]);
}

TEST_CASE("faults: a PostgreSQL and a Valkey restart mid-run, reconnecting and exiting told apart") {
  for (const char* fault : {"restart:after:COMMIT#2:pg", "restart:before:XACK#3:valkey"}) {
    // dedup-table exits on a broken connection and is restarted; py-resilient reconnects. Both pass.
    Result exits = clean({"run", "--target", target("dedup-table"), "--crash", fault});
    INFO(fault << "\n" << exits.out << exits.err);
    CHECK(exits.status == 0);
    CHECK(anyContains(notesOf(exits.report), "c1 exited (exit 1) and was replaced"));
    CHECK(violations(exits.report, "crash").empty());
    Result reconnects = clean({"run", "--target", testTarget("py-resilient"), "--crash", fault});
    INFO(reconnects.out << reconnects.err);
    CHECK(reconnects.status == 0);
    CHECK(anyContains(notesOf(reconnects.report), "c1 reconnected"));
  }
  // A restart needs servers idemproof owns.
  Result external = idemproof({"run", "--target", target("dedup-table"), "--crash", "restart:after:COMMIT#1:pg",
                               "--database-url", "postgresql://u@127.0.0.1:1/x", "--valkey-url", "redis://127.0.0.1:1"},
                              0, false);
  CHECK(external.status == 2);
  CHECK(external.err.find("--database-url: restart faults restart the servers") != std::string::npos);
}

TEST_CASE("faults: the targets of one worker share its servers, and a restart by one leaves the other's next "
          "schedules whole") {
  // One worker: dedup-table (Valkey) and nats-dedup-table take turns on the worker's PostgreSQL and Valkey.
  // Both run their default schedule first; then dedup-table's restart classes restart the servers that
  // nats-dedup-table's workspace is connected to, and its classes run after them.
  Result r = clean({"compare", "--target", target("dedup-table"), "--target", target("nats-dedup-table"), "--scenario",
                    "wallet", "--runs", "0", "--per-class", "1", "--faults", "restart", "--workers", "1"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  std::map<std::string, int> restarted;
  for (const auto& x : r.report["compare"]["cells"]) {
    INFO(x.dump());
    CHECK((x["verdict"] == "pass" || x["verdict"] == "n/a"));
    const std::string cls = x["class"];
    if (x["verdict"] == "pass" && cls.rfind("restart", 0) == 0) ++restarted[x["target"].get<std::string>()];
  }
  CHECK(restarted["dedup-table"] > 0);
  CHECK(restarted["nats-dedup-table"] > 0);
}

TEST_CASE("faults: check --faults forget catches simple, shrunk to one event and the forget") {
  Result r = clean({"check", "--target", target("simple"), "--scenario", "wallet", "--faults", "forget", "--seed", "1",
                    "--runs", "30"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  const auto& cx = r.report["check"]["counterexample"];
  REQUIRE(cx.is_object());
  const auto& s = cx["schedule"];
  CHECK(s["events"].size() == 1);
  CHECK(s["stream"].size() == 1); // no producer retry: the broker's forgetting alone duplicates it
  REQUIRE(s["faults"].size() == 1);
  CHECK(s["faults"][0].get<std::string>().rfind("forget:", 0) == 0);
  CHECK(r.report["check"]["coverage_by_kind"].contains("forget"));
}

TEST_CASE("faults: a forget after the last XACK and XDEL leaves nothing to deliver, and the run settles") {
  // py-ack-delete XDELs each entry with its XACK (MULTI/EXEC): once the group is set back past entries that
  // are gone, none can be delivered again. Nothing is left to deliver: settled, a pass, not the deadline.
  Result r = clean({"run", "--target", testTarget("py-ack-delete"), "--crash", "forget:after:EXEC#6", "--deadline", "60s"});
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK(r.report["verdict"] == "pass");
  const auto& final = r.report["runs"][0]["history"].back()["value"];
  CHECK(final["end"] == "settled");
  CHECK(final["stream"].empty());
}

TEST_CASE("faults: an error reply leaves the server's transaction aborted, as a real one does (psycopg)") {
  Result r = clean({"run", "--target", testTarget("py-resilient"), "--crash", "error:before:UPDATE#2:40001"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  std::string logs = logsOf(r);
  // The consumer asked the server inside its failed transaction: the server itself says it is aborted.
  CHECK(logs.find("40001 on a statement; client status INERROR; server: in failed transaction (25P02)") !=
        std::string::npos);
  bool answered = false;
  for (const auto& op : historyOf(r.report))
    if (op["type"] == "step" && op["value"]["verb"] == "UPDATE" && op["value"]["k"] == 2)
      answered = op["value"]["outcome"] == "answered" && op["value"]["error"] == true;
  CHECK(answered);
}

TEST_CASE("faults: an error reply at COMMIT leaves the server idle, the transaction rolled back (psycopg)") {
  Result r = clean({"run", "--target", testTarget("py-resilient"), "--crash", "error:before:COMMIT#2:40001"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  std::string logs = logsOf(r);
  CHECK(logs.find("SerializationFailure (40001); server idle; running the transaction again") != std::string::npos);
  CHECK(logs.find("still in a failed transaction") == std::string::npos);
}

TEST_CASE("faults: a Python consumer that handles errors passes drops and errors at every step, delays and forgets") {
  // Two generated events and the retry of event 2: every verb the consumer sends, on a first delivery and a
  // duplicate, at half the points of the default schedule.
  Result r = clean({"sweep", "--target", testTarget("py-resilient"), "--scenario", "wallet", "--faults", "drop,error",
                    "--events", "2", "--seed", "1"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.report["sweep"]["not_fired"] == 0);
  requireEveryVerbAndRetry(r.report["sweep"]);
  for (const char* fault : {"delay:after:COMMIT#2:100", "delay:before:XACK#3:100", "forget:after:XACK#3"}) {
    Result one = clean({"run", "--target", testTarget("py-resilient"), "--crash", fault});
    INFO(fault << "\n" << one.out << one.err);
    CHECK(one.status == 0);
  }
}

TEST_CASE("faults: a consumer that exits on an injected error is restarted, and that is not a crash") {
  Result r = clean({"run", "--target", target("crash-on-40001"), "--crash", "error:before:UPDATE#2:40001"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  bool exited75 = false;
  for (const auto& op : historyOf(r.report))
    if (op["type"] == "exit" && op["value"].value("status", 0) == 75) exited75 = true;
  CHECK(exited75);
  CHECK(violations(r.report, "crash").empty());
}

TEST_CASE("faults: a consumer that never reconnects is stuck after a drop, and passes every kill") {
  Result r = clean({"run", "--target", target("no-reconnect"), "--crash", "drop:after:COMMIT#2"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  CHECK(!violations(r.report, "stuck").empty());
  std::string reason;
  for (const auto& op : historyOf(r.report))
    if (op["type"] == "final") reason = op["value"].value("reason", "");
  CHECK(reason.find("did not recover from the fault by itself") != std::string::npos);
  Result kill = clean({"run", "--target", target("no-reconnect"), "--crash", "after:COMMIT#2"});
  INFO(kill.out << kill.err);
  CHECK(kill.status == 0);
}

TEST_CASE("faults: Valkey error replies leave the command unexecuted, a PostgreSQL code at a Valkey step never fires") {
  Result r = clean({"run", "--target", target("dedup-table"), "--crash", "error:before:XACK#1:NOGROUP"});
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  Result wrong = clean({"run", "--target", target("dedup-table"), "--crash", "error:before:XACK#1:40001"});
  INFO(wrong.out << wrong.err);
  CHECK(wrong.status == 2); // a fault that never fired: unknown, never a pass
  CHECK(anyContains(notesOf(wrong.report), "40001 is a PostgreSQL error and XACK is a Valkey step"));
}

TEST_CASE("faults: bad fault text and unknown kinds are one-line usage errors") {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"run", "--target", target("dedup-table"), "--crash", "error:after:COMMIT#1:40001"},
           {"run", "--target", target("dedup-table"), "--crash", "delay:before:COMMIT#1"},
           {"run", "--target", target("dedup-table"), "--crash", "restart:after:COMMIT#1:mysql"},
           {"sweep", "--target", target("dedup-table"), "--faults", "drop,explode"}}) {
    Result r = idemproof(args, 0, false);
    INFO(r.out << r.err);
    CHECK(r.status == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("faults: 53300 too_many_connections refuses a consumer's connection at CONNECT#1, and it is restarted") {
  Result r = clean({"run", "--target", target("dedup-table"), "--crash", "error:before:CONNECT#1:53300"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  bool refused = false;
  for (const auto& op : historyOf(r.report))
    if (op["type"] == "step" && op["value"]["verb"] == "CONNECT")
      refused = op["value"]["outcome"] == "answered" && op["value"]["summary"].get<std::string>().rfind("53300", 0) == 0;
  CHECK(refused);
  CHECK(violations(r.report, "crash").empty());
}
