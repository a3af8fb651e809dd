/// Bad input, as a user writes it: every case exits 2 with one line on stderr naming the flag, the file
/// or the field — and does so before any server starts. Each case runs with --database-url and
/// --valkey-url pointing at a port nothing listens on: a check that ran only after connecting would
/// report the connection instead of the input, and the case would fail on its message.
#include "support.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

using namespace itest;
namespace fs = std::filesystem;

namespace {

/// A scratch folder for the files of one case, removed at scope end.
struct Files {
  fs::path dir = fs::temp_directory_path() / ("itest-malformed-" + std::to_string(::getpid()));
  Files() { fs::create_directories(dir); }
  ~Files() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string write(const std::string& rel, const std::string& text) const {
    fs::path p = dir / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  std::string manifest(const std::string& name, const std::string& json) const {
    write(name + "/target.json", json);
    return (dir / name).string();
  }
};

struct Case {
  std::string what;
  std::vector<std::string> args;
  std::string expect; ///< a substring of the one line on stderr
};

const std::vector<std::string> kNoServers = {"--database-url", "postgresql://u@127.0.0.1:9/none", "--valkey-url",
                                             "redis://127.0.0.1:9/0"};

std::string schedule(const std::string& body) {
  return R"({"version": 2, "scenario": "wallet", "target": "simple", )" + body + "}";
}

/// An orders schedule file's text: two payloads, and `body` (its "client", and more).
std::string ordersSchedule(const std::string& body) {
  return R"({"version": 2, "scenario": "orders", "target": "http-correct", "events": [
    {"n": 1, "fields": {"customer": "alice", "sku": "sku-1", "qty": "2", "amount": "4500"}},
    {"n": 2, "fields": {"customer": "bob", "sku": "sku-2", "qty": "1", "amount": "1200"}}], )" + body + "}";
}

/// scenarios/orders.json with the policy member `member` set to `value` (JSON text).
std::string ordersWith(const std::string& pointer, const std::string& value) {
  std::ifstream in(repo() / "scenarios" / "orders.json");
  nlohmann::json s = nlohmann::json::parse(in);
  s[nlohmann::json::json_pointer(pointer)] = nlohmann::json::parse(value);
  return s.dump(2);
}

} // namespace

TEST_CASE("malformed input: exit 2, one line naming the flag, file or field, before any server starts") {
  Files f;
  const std::string simple = target("simple");
  const std::string http = target("http-correct");
  const std::string ok = R"("command": ["true"], "scenarios": ["wallet"])";
  std::vector<Case> cases = {
      {"zero deadline", {"run", "--target", simple, "--deadline", "0"}, "--deadline"},
      {"deadline in seconds without a unit", {"run", "--target", simple, "--deadline", "45"},
       "--deadline: 45 ms is shorter than any run (a number without a unit is milliseconds: 45s is 45 seconds)"},
      {"zero stall timeout", {"run", "--target", simple, "--stall-timeout", "0"}, "--stall-timeout"},
      {"negative grace", {"run", "--target", simple, "--grace", "-1"}, "--grace"},
      {"zero time budget", {"check", "--target", simple, "--time-budget", "0"}, "--time-budget"},
      {"seed beyond 64 bits", {"run", "--target", simple, "--seed", "18446744073709551616"}, "--seed"},
      {"negative seed", {"run", "--target", simple, "--seed", "-1"}, "--seed"},
      {"empty report path", {"run", "--target", simple, "--report", ""}, "--report: an empty path"},
      {"report folder that can't be made", {"run", "--target", simple, "--report", "/proc/none/report"}, "--report"},
      {"junit in a folder that can't be made", {"run", "--target", simple, "--junit", "/proc/none/j.xml"}, "--junit"},
      {"junit that is a folder", {"run", "--target", simple, "--junit", f.dir.string()}, "is a folder"},
      {"bad crash point", {"run", "--target", simple, "--crash", "after:COMMIT"}, "--crash"},
      {"schedule path that is a folder", {"replay", f.dir.string(), "--target", simple}, "is a folder"},
      {"schedule version 3",
       {"replay", f.write("v3.json", R"({"version": 3, "scenario": "wallet", "events": [{"n": 1}], "stream": [1]})")},
       "field 'version'"},
      {"schedule version as a string",
       {"replay", f.write("v1s.json", R"({"version": "1", "scenario": "wallet", "events": [{"n": 1}], "stream": [1]})")},
       "field 'version'"},
      {"schedule without a version",
       {"replay", f.write("v0.json", R"({"scenario": "wallet", "events": [{"n": 1}], "stream": [1]})")},
       "field 'version'"},
      {"stream entry beyond 32 bits",
       {"replay", f.write("s1.json", schedule(R"("events": [{"n": 2}], "stream": [4294967298])")), "--target", simple},
       "field 'stream[0]'"},
      {"event number beyond 32 bits",
       {"replay", f.write("s2.json", schedule(R"("events": [{"n": 4294967297}], "stream": [1])")), "--target", simple},
       "field 'events[0].n'"},
      {"seed that is not a whole number",
       {"replay", f.write("s3.json", schedule(R"("seed": 1e30, "events": [{"n": 1}], "stream": [1])")), "--target",
        simple},
       "field 'seed'"},
      {"phase beyond the bound",
       {"replay", f.write("s4.json", schedule(R"("events": [{"n": 1}], "stream": [{"event": 1, "phase": 2147483647}])")),
        "--target", simple},
       "field 'stream[0].phase'"},
      {"schedule of another scenario",
       {"replay", f.write("s5.json", R"({"version": 2, "scenario": "customer-city", "events": [{"n": 1}], "stream": [1]})"),
        "--target", simple, "--scenario", "wallet"},
       "field 'scenario'"},
      {"schedule key twice",
       {"replay", f.write("s6.json", schedule(R"("events": [{"n": 1}], "events": [{"n": 2}], "stream": [1])")),
        "--target", simple},
       "key 'events' appears twice"},
      {"manifest key twice", {"run", "--target", f.manifest("dup", R"({"name": "a", "name": "b", )" + ok + "}")},
       "key 'name' appears twice"},
      {"NUL byte in the name", {"run", "--target", f.manifest("nul", R"({"name": "a\u0000b", )" + ok + "}")},
       "NUL byte"},
      {"control character in the name", {"run", "--target", f.manifest("bel", R"({"name": "a\u0007", )" + ok + "}")},
       "field 'name'"},
      {"name of 300 bytes", {"run", "--target", f.manifest("long", R"({"name": ")" + std::string(300, 'x') + "\", " + ok + "}")},
       "field 'name'"},
      {"manifest of 2 MiB", {"run", "--target", f.manifest("big", R"({"name": ")" + std::string(2 << 20, 'x') + "\", " + ok + "}")},
       "more than the 1048576"},
      {"schema outside the folder",
       {"run", "--target", f.manifest("esc", R"({"name": "a", "schema": "../../../../../etc/passwd", )" + ok + "}")},
       "field 'schema'"},
      {"program outside the folder",
       {"run", "--target", f.manifest("esc2", R"({"name": "a", "command": ["../../bin/true"], "scenarios": ["wallet"]})")},
       "field 'command[0]'"},
      {"manifest env overriding IDEMPROOF_RUN",
       {"run", "--target", f.manifest("run", R"({"name": "a", "env": {"IDEMPROOF_RUN": "x"}, )" + ok + "}")},
       "field 'env.IDEMPROOF_RUN': is set by idemproof"},
      {"manifest env overriding IDEMPROOF_OWNER",
       {"run", "--target", f.manifest("owner", R"({"name": "a", "env": {"IDEMPROOF_OWNER": "1.1"}, )" + ok + "}")},
       "field 'env.IDEMPROOF_OWNER': is set by idemproof"},
      {"manifest env overriding PORT",
       {"run", "--target", f.manifest("port", R"({"name": "a", "env": {"PORT": "80"}, )" + ok + "}")},
       "field 'env.PORT': is set by idemproof"},
      {"manifest env overriding DATABASE_URL",
       {"run", "--target", f.manifest("db", R"({"name": "a", "env": {"DATABASE_URL": "postgresql://x/y"}, )" + ok + "}")},
       "field 'env.DATABASE_URL': is set by idemproof"},
      {"manifest env overriding VALKEY_URL",
       {"run", "--target", f.manifest("vk", R"({"name": "a", "env": {"VALKEY_URL": "redis://x:1/0"}, )" + ok + "}")},
       "field 'env.VALKEY_URL': is set by idemproof"},
      {"manifest env setting LD_PRELOAD",
       {"run", "--target", f.manifest("ld", R"({"name": "a", "env": {"LD_PRELOAD": "/tmp/x.so"}, )" + ok + "}")},
       "field 'env.LD_PRELOAD': the dynamic loader's variables"},
      {"a hold on c9 of a run with 2 consumers",
       {"run", "--target", simple, "--consumers", "2", "--crash", "hold:c9:before:COMMIT#1"},
       "--crash hold:c9:before:COMMIT#1: 'hold:c9:before:COMMIT#1' names process c9"},
      {"a kill of c5 of a run with 2 consumers",
       {"run", "--target", simple, "--consumers", "2", "--crash", "c5:after:COMMIT#1"}, "names process c5"},
      {"a schedule's fault on c5 with 2 consumers",
       {"replay", f.write("c5.json", schedule(R"("consumers": 2, "events": [{"n": 1}], "stream": [1], "faults": ["c5:after:COMMIT#1"])")),
        "--target", simple},
       "field 'faults[0]': 'c5:after:COMMIT#1' names process c5"},
      {"a fault kind named twice", {"sweep", "--target", simple, "--faults", "kill,kill"}, "--faults: 'kill' is named twice"},
      {"a fault kind named twice over two flags", {"check", "--target", simple, "--faults", "kill", "--faults", "drop,kill"},
       "--faults: 'kill' is named twice"},
      {"an empty fault kind", {"sweep", "--target", simple, "--faults", "kill,,drop"}, "--faults: 'kill,,drop' has an empty kind"},
      {"a trailing comma in the fault kinds", {"check", "--target", simple, "--faults", "kill,"}, "has an empty kind"},
      {"an unknown fault kind", {"sweep", "--target", simple, "--faults", "kill,explode"}, "'explode' is not a fault kind"},
      {"two compared targets with one name",
       {"compare", "--target", simple, "--target", f.manifest("simple2", R"({"name": "simple", )" + ok + "}")},
       "two targets are named 'simple'"},
      // HTTP: fault kinds an HTTP run has nothing to act on, and schedules and policies that can't be judged.
      {"HTTP sweep of forget faults", {"sweep", "--target", http, "--scenario", "orders", "--faults", "forget"},
       "--faults: an HTTP scenario runs kill, drop, delay, error, restart, pause faults at its server's steps, not forget"},
      {"HTTP check of age faults", {"check", "--target", http, "--scenario", "orders", "--faults", "kill,age"},
       "--faults: an HTTP scenario runs kill, drop, delay, error, restart, pause faults at its server's steps, not age"},
      {"HTTP compare of hold faults", {"compare", "--target", http, "--scenario", "orders", "--faults", "drop,hold"},
       "--faults: a hold needs a second server process to hold against"},
      {"HTTP sweep of hold faults", {"sweep", "--target", http, "--scenario", "orders", "--faults", "kill,hold"},
       "--faults: a hold needs a second server process to hold against"},
      {"HTTP run with a forget", {"run", "--target", http, "--scenario", "orders", "--crash", "forget:after:COMMIT#1"},
       "--crash: an HTTP scenario runs kill, drop, delay, error, restart, pause faults"},
      {"HTTP run with a pause until another process's point",
       {"run", "--target", http, "--scenario", "orders", "--crash", "pause:before:COMMIT#1:s2:after:COMMIT#1"},
       "--crash: pause:before:COMMIT#1:s2:after:COMMIT#1: an HTTP run with one replica has one server process"},
      {"HTTP run with a consumer's fault", {"run", "--target", http, "--scenario", "orders", "--crash", "kill:c1:after:COMMIT#1"},
       "an HTTP run's processes are its server's"},
      {"HTTP run with 4 replicas", {"run", "--target", http, "--scenario", "orders", "--replicas", "4"}, "--replicas"},
      {"HTTP check of replicas 0-2", {"check", "--target", http, "--scenario", "orders", "--replicas", "0-2"},
       "--replicas: '0-2' is not a number of replicas"},
      {"consumer run with 2 replicas", {"run", "--target", simple, "--replicas", "2"}, "--replicas: scenario"},
      {"HTTP schedule of 4 replicas",
       {"replay", f.write("h0.json", ordersSchedule(R"("client": [{"op": "send", "key": 1}], "replicas": 4)")), "--target", http},
       "field 'replicas'"},
      {"HTTP run with two consumers", {"run", "--target", http, "--scenario", "orders", "--consumers", "2"},
       "--consumers: scenario orders is an HTTP one"},
      {"HTTP check with two consumers", {"check", "--target", http, "--scenario", "orders", "--consumers", "2"},
       "--consumers: scenario orders is an HTTP one"},
      {"consumer check with replicas", {"check", "--target", simple, "--replicas", "2"},
       "--replicas: scenario wallet is a consumer one"},
      {"HTTP sweep of interleavings", {"sweep", "--target", http, "--scenario", "orders", "--interleave"},
       "--interleave: scenario orders is an HTTP one"},
      {"a rebalance on a NATS target", {"run", "--target", target("nats-dedup-table"), "--crash", "rebalance:after:COMMIT#1"},
       "--crash rebalance:after:COMMIT#1: a rebalance fault needs a broker"},
      {"a Kafka restart on a NATS target",
       {"run", "--target", target("nats-dedup-table"), "--crash", "restart:after:COMMIT#1:kafka"},
       "--crash restart:after:COMMIT#1:kafka: restart:after:COMMIT#1:kafka restarts Kafka, which target 'nats-dedup-table' "
       "does not run on (it has pg, valkey and nats)"},
      {"a schedule's RabbitMQ restart on a Valkey target",
       {"replay", f.write("rmq.json", schedule(R"("events": [{"n": 1}], "stream": [1], "faults": ["restart:after:COMMIT#1:rabbitmq"])")),
        "--target", simple},
       "field 'faults[0]': restart:after:COMMIT#1:rabbitmq restarts RabbitMQ, which target 'simple' does not run on (it has pg, valkey)"},
      {"a flag's value with a newline", {"run", "--target", simple, "--crash", "after:COMMIT#1\nX"}, "--crash"},
      {"a schedule whose faults are misspelt",
       {"replay", f.write("typo.json", schedule(R"("events": [{"n": 1}], "stream": [1], "fault": ["after:XACK#1"])")),
        "--target", simple},
       "field 'fault': unknown field"},
      {"a schedule's stream entry with a misspelt phase",
       {"replay", f.write("typo2.json", schedule(R"("events": [{"n": 1}], "stream": [{"event": 1, "phse": 2}])")),
        "--target", simple},
       "field 'stream[0].phse': unknown field"},
      {"HTTP run of generated events", {"run", "--target", http, "--scenario", "orders", "--events", "10"},
       "--events: scenario orders is an HTTP one (its client requests are not generated by count)"},
      {"HTTP sweep of generated events", {"sweep", "--target", http, "--scenario", "orders", "--events", "10"},
       "--events: scenario orders is an HTTP one (its client requests are not generated by count)"},
      {"HTTP schedule of 3 consumers",
       {"replay", f.write("h1.json", ordersSchedule(R"("client": [{"op": "send", "key": 1}], "consumers": 3)")), "--target", http},
       "field 'consumers'"},
      {"HTTP schedule with a forget fault",
       {"replay", f.write("h2.json", ordersSchedule(R"("client": [{"op": "send", "key": 1}], "faults": ["forget:after:COMMIT#1"])")),
        "--target", http},
       "field 'faults[0]': an HTTP scenario runs"},
      {"HTTP burst racing its own key",
       {"replay", f.write("h3.json", ordersSchedule(R"("client": [{"op": "burst", "key": 1, "copies": 3, "other": 1}])")),
        "--target", http},
       "field 'client[0].other'"},
      {"HTTP request after a retention of a day",
       {"replay", f.write("h4.json", ordersSchedule(R"("client": [{"op": "send", "key": 1}, {"op": "send", "key": 1, "after_retention": true}])")),
        "--target", http},
       "field 'client[1].after_retention'"},
      {"HTTP mismatch status 200",
       {"run", "--target", http, "--scenario", f.write("p1.json", ordersWith("/http/policy/mismatch", "200"))},
       "field 'http.policy.mismatch': 200 is not a client error (4xx)"},
      {"HTTP in-flight status equal to the mismatch status",
       {"run", "--target", http, "--scenario", f.write("p2.json", ordersWith("/http/policy/in_flight", "422"))},
       "field 'http.policy.in_flight': 422 is also the mismatch status"},
      {"HTTP key in the Host header",
       {"run", "--target", http, "--scenario", f.write("p3.json", ordersWith("/http/key_header", "\"Host\""))},
       "field 'http.key_header': 'Host' is a header the client itself writes"},
      {"HTTP key in the Content-Length header",
       {"run", "--target", http, "--scenario", f.write("p4.json", ordersWith("/http/key_header", "\"Content-Length\""))},
       "field 'http.key_header': 'Content-Length'"},
      {"HTTP replay equivalence misspelt",
       {"run", "--target", http, "--scenario", f.write("p5.json", ordersWith("/http/policy/replay_equivalence", "\"byte\""))},
       "field 'http.policy.replay_equivalence': 'byte' is not one of bytes, json"},
  };
  for (const auto& c : cases) {
    SECTION(c.what) {
      std::vector<std::string> args = c.args;
      args.insert(args.end(), kNoServers.begin(), kNoServers.end());
      const bool withReport = std::find(args.begin(), args.end(), "--report") == args.end();
      Result r = idemproof(args, 0, withReport);
      INFO("args: " << nlohmann::json(c.args).dump() << "\nstdout: " << r.out << "\nstderr: " << r.err);
      CHECK(r.status == 2);
      CHECK(r.err.find(c.expect) != std::string::npos);
      CHECK(r.err.find("cannot connect") == std::string::npos); // no server was asked for
      CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);  // one line
      CHECK(r.out.empty());
      if (withReport) CHECK(!fs::exists(r.reportDir)); // refused: not even an empty report folder
    }
  }
}

TEST_CASE("malformed scenario: shapes are checked against the tables and results it makes, in one line") {
  Files f;
  std::string wallet;
  {
    std::ifstream in(repo() / "scenarios" / "wallet.json");
    wallet.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  nlohmann::json base = nlohmann::json::parse(wallet);
  struct ScenarioCase {
    std::string what;
    std::function<void(nlohmann::json&)> edit;
    std::string expect;
  };
  std::vector<ScenarioCase> cases = {
      {"a table that doesn't exist", [](nlohmann::json& s) { s["tables"]["names"].push_back("no_such_table"); },
       "field 'tables.names[1]': no table 'no_such_table'"},
      {"an observed query with 3 columns",
       [](nlohmann::json& s) { s["invariants"][0]["observed"] = "SELECT id, balance_halala, 1 FROM wallets"; },
       "returns 3 columns, a sum-of-distinct invariant reads 2"},
      {"an observed query on a missing table",
       [](nlohmann::json& s) { s["invariants"][0]["observed"] = "SELECT id, balance_halala\nFROM no_such"; },
       "(SQLSTATE 42P01) in: SELECT id, balance_halala FROM no_such"},
  };
  for (const auto& c : cases) {
    SECTION(c.what) {
      nlohmann::json s = base;
      c.edit(s);
      std::string file = f.write("scenario.json", s.dump(2));
      Result r = clean({"run", "--target", target("dedup-table"), "--scenario", file});
      INFO("stdout: " << r.out << "\nstderr: " << r.err);
      CHECK(r.status == 2);
      CHECK(r.err.find(file) != std::string::npos);
      CHECK(r.err.find(c.expect) != std::string::npos);
      CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
  }
}

TEST_CASE("run --junit /dev/full: the write error exits 2 with one line, not a silent success") {
  Result r = clean({"run", "--target", target("dedup-table"), "--scenario", "wallet", "--junit", "/dev/full"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.status == 2);
  CHECK(r.err.find("--junit: cannot write /dev/full: No space left on device") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

TEST_CASE("malformed HTTP scenario: what its queries return is checked against the tables, in one line") {
  Files f;
  struct ScenarioCase {
    std::string what, pointer, value, expect;
  };
  std::vector<ScenarioCase> cases = {
      {"effects returning its columns in the wrong order", "/http/effects",
       R"("SELECT count(*), ref FROM orders GROUP BY ref")",
       "field 'http.effects': its second column is of type text, it must be a whole number (the payload's reference, its count"},
      {"a ledger whose value is text", "/http/ledger/observed", R"("SELECT sku, sku FROM stock")",
       "field 'http.ledger.observed': its second column is of type text"},
  };
  for (const auto& c : cases) {
    SECTION(c.what) {
      std::string file = f.write("orders-shape.json", ordersWith(c.pointer, c.value));
      Result r = clean({"run", "--target", target("http-correct"), "--scenario", file});
      INFO("stdout: " << r.out << "\nstderr: " << r.err);
      CHECK(r.status == 2);
      CHECK(r.err.find(file) != std::string::npos);
      CHECK(r.err.find(c.expect) != std::string::npos);
      CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
  }
}
