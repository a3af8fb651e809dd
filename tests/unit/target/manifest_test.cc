#include "target/manifest.h"
#include "test_util.h" // tests/

#include <catch2/catch.hpp>

using idem::testing::ScratchDir;
using idem::testing::usageError;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

const char* kGood = R"({"name": "dedup", "command": ["./dedup", "--fast"], "env": {"NAME": "${CONSUMER}"},
                        "schema": "schema.sql", "scenarios": ["wallet"]})";

std::string manifestError(const std::string& json, bool withSchema = true) {
  ScratchDir d;
  d.write("t/target.json", json);
  if (withSchema) d.write("t/schema.sql", "CREATE TABLE processed (id text);");
  std::string msg = usageError([&] { idem::loadTarget(d.path / "t"); });
  // Make the message independent of the temp dir.
  auto pos = msg.find((d.path / "t").string());
  if (pos != std::string::npos) msg.replace(pos, (d.path / "t").string().size(), "targets/t");
  return msg;
}

} // namespace

TEST_CASE("a valid manifest loads with absolute paths", "[manifest]") {
  ScratchDir d;
  d.write("t/target.json", kGood);
  d.write("t/schema.sql", "CREATE TABLE processed (id text);");
  idem::Target t = idem::loadTarget(d.path / "t");
  CHECK(t.name == "dedup");
  CHECK(t.dir == (d.path / "t"));
  CHECK(t.manifest == (d.path / "t" / "target.json"));
  REQUIRE(t.command.size() == 2);
  CHECK(t.command[0] == (d.path / "t" / "dedup").string());
  CHECK(t.command[1] == "--fast");
  CHECK(t.env.at("NAME") == "${CONSUMER}");
  REQUIRE(t.schema);
  CHECK(*t.schema == d.path / "t" / "schema.sql");
  CHECK(t.implements("wallet"));
  CHECK_FALSE(t.implements("customer-city"));
  // naming the file itself works too
  CHECK(idem::loadTarget(d.path / "t" / "target.json").name == "dedup");
}

TEST_CASE("a bare program name is left for PATH lookup, env and schema are optional", "[manifest]") {
  ScratchDir d;
  d.write("t/target.json", R"({"name": "py", "command": ["python3", "consumer.py"], "scenarios": ["wallet"]})");
  idem::Target t = idem::loadTarget(d.path / "t");
  CHECK(t.command[0] == "python3");
  CHECK(t.env.empty());
  CHECK_FALSE(t.schema);
}

TEST_CASE("manifest: missing target.json", "[manifest]") {
  ScratchDir d;
  std::filesystem::create_directories(d.path / "x");
  CHECK_THAT(usageError([&] { idem::loadTarget(d.path / "x"); }), Contains("/x: no target.json"));
}

TEST_CASE("manifest: missing folder", "[manifest]") {
  CHECK_THAT(usageError([&] { idem::loadTarget("/nonexistent/targets/x"); }),
             Contains("/nonexistent/targets/x: no such target folder"));
}

TEST_CASE("manifest: invalid JSON names the position", "[manifest]") {
  CHECK_THAT(manifestError("{\"name\": \"x\",\n \"command\": [}"),
             StartsWith("targets/t/target.json: invalid JSON: parse error at line 2, column"));
}

TEST_CASE("manifest: the top level must be an object", "[manifest]") {
  CHECK_THAT(manifestError("[1, 2]"), Contains("target.json: must be a JSON object"));
}

TEST_CASE("manifest: unknown top-level field", "[manifest]") {
  CHECK_THAT(manifestError(R"({"name": "x", "comand": ["./x"], "command": ["./x"], "scenarios": ["wallet"]})"),
             Contains("targets/t/target.json: field 'comand': unknown field (known: name, kind, broker, health, command, "
                      "processes, outbox, env, schema, scenarios, expect, files_outside, dedup_ttl_ms)"));
}

TEST_CASE("manifest: a consumer declares its dedup retention, handed to it as DEDUP_TTL_MS", "[manifest]") {
  ScratchDir d;
  d.write("t/target.json", R"({"name": "ttl", "command": ["./x"], "scenarios": ["wallet"], "dedup_ttl_ms": 20000})");
  CHECK(idem::loadTarget(d.path / "t").dedupTtlMs == 20000);
  CHECK_FALSE(idem::loadTarget(d.path / "t").env.count("DEDUP_TTL_MS"));
  CHECK_THAT(manifestError(R"({"name": "x", "command": ["./x"], "scenarios": ["wallet"], "dedup_ttl_ms": 0})"),
             Contains("field 'dedup_ttl_ms': 0 is not a retention of at least 1 ms"));
  CHECK_THAT(manifestError(R"({"name": "x", "command": ["./x"], "scenarios": ["wallet"], "dedup_ttl_ms": "1d"})"),
             Contains("field 'dedup_ttl_ms': must be an integer"));
  CHECK_THAT(manifestError(R"({"name": "x", "command": ["./x"], "scenarios": ["wallet"],
                               "env": {"DEDUP_TTL_MS": "5"}})"),
             Contains("DEDUP_TTL_MS"));
}

TEST_CASE("manifest: a consumer's broker is valkey unless it says kafka", "[manifest]") {
  ScratchDir d;
  d.write("v/target.json", R"({"name": "v", "command": ["./v"], "scenarios": ["wallet"]})");
  d.write("k/target.json", R"({"name": "k", "broker": "kafka", "command": ["./k"], "scenarios": ["wallet"]})");
  CHECK(idem::loadTarget(d.path / "v").broker == "valkey");
  CHECK(idem::loadTarget(d.path / "k").broker == "kafka");
  CHECK_THAT(manifestError(R"({"name": "x", "broker": "mqtt", "command": ["./x"], "scenarios": ["wallet"]})"),
             Contains("field 'broker': 'mqtt' is not one of valkey, kafka, nats, rabbitmq"));
  CHECK_THAT(manifestError(R"({"name": "x", "kind": "http", "broker": "kafka", "command": ["./x"], "scenarios": ["orders"]})"),
             Contains("field 'broker': only a consumer reads from a broker; an HTTP target has none"));
}

TEST_CASE("manifest: name is required and must be a string", "[manifest]") {
  CHECK_THAT(manifestError(R"({"command": ["./x"], "scenarios": ["wallet"]})"),
             Contains("target.json: field 'name': is required"));
  CHECK_THAT(manifestError(R"({"name": 3, "command": ["./x"], "scenarios": ["wallet"]})"),
             Contains("field 'name': must be a non-empty string"));
}

TEST_CASE("manifest: command must be a non-empty array of strings", "[manifest]") {
  const std::string want = "targets/t/target.json: field 'command': must be a non-empty array of strings";
  CHECK(manifestError(R"({"name": "x", "scenarios": ["wallet"]})") == want);
  CHECK(manifestError(R"({"name": "x", "command": "./x", "scenarios": ["wallet"]})") == want);
  CHECK(manifestError(R"({"name": "x", "command": [], "scenarios": ["wallet"]})") == want);
  CHECK(manifestError(R"({"name": "x", "command": ["./x", 1], "scenarios": ["wallet"]})") == want);
  CHECK_THAT(manifestError(R"({"name": "x", "command": [""], "scenarios": ["wallet"]})"),
             Contains("field 'command[0]': the program must not be empty"));
}

TEST_CASE("manifest: env must be an object of strings with valid names", "[manifest]") {
  CHECK_THAT(manifestError(R"({"name": "x", "command": ["./x"], "env": ["A"], "scenarios": ["wallet"]})"),
             Contains("field 'env': must be an object of strings"));
  CHECK_THAT(manifestError(R"({"name": "x", "command": ["./x"], "env": {"A": 1}, "scenarios": ["wallet"]})"),
             Contains("field 'env.A': must be a string"));
  CHECK_THAT(manifestError(R"({"name": "x", "command": ["./x"], "env": {"A=B": "1"}, "scenarios": ["wallet"]})"),
             Contains("field 'env.A=B': is not a valid environment variable name"));
}

TEST_CASE("manifest: env may set no variable idemproof sets, nor the loader's", "[manifest]") {
  for (const char* name : {"IDEMPROOF_RUN", "IDEMPROOF_OWNER", "IDEMPROOF_PROCESS", "IDEMPROOF_TMPDIR", "PORT",
                           "DATABASE_URL", "VALKEY_URL", "REDIS_URL", "KAFKA_BOOTSTRAP", "STREAM", "TOPIC", "GROUP",
                           "CONSUMER", "CLAIM_IDLE_MS", "IDEMPOTENCY_LEASE_MS"}) {
    INFO(name);
    CHECK_THAT(manifestError(std::string(R"({"name": "x", "command": ["./x"], "env": {")") + name +
                             R"(": "1"}, "scenarios": ["wallet"]})"),
               Contains(std::string("targets/t/target.json: field 'env.") + name +
                        "': is set by idemproof (docs/target-contract.md) and cannot be overridden"));
  }
  for (const char* name : {"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT"})
    CHECK_THAT(manifestError(std::string(R"({"name": "x", "command": ["./x"], "env": {")") + name +
                             R"(": "/tmp/x.so"}, "scenarios": ["wallet"]})"),
               Contains(std::string("field 'env.") + name + "': the dynamic loader's variables (LD_*)"));
  // Reading them is fine: ${PORT} in a variable of the target's own.
  ScratchDir d;
  d.write("t/target.json", R"({"name": "x", "command": ["./x"], "env": {"LISTEN": "127.0.0.1:${PORT}"}, "scenarios": ["wallet"]})");
  CHECK(idem::loadTarget(d.path / "t").env.at("LISTEN") == "127.0.0.1:${PORT}");
}

TEST_CASE("manifest: schema must name an existing file", "[manifest]") {
  CHECK_THAT(manifestError(kGood, false), Contains("field 'schema': no such file '"));
  CHECK_THAT(manifestError(R"({"name": "x", "command": ["./x"], "schema": 1, "scenarios": ["wallet"]})"),
             Contains("field 'schema': must be a non-empty string"));
}

TEST_CASE("manifest: scenarios must be a non-empty array of names", "[manifest]") {
  CHECK_THAT(manifestError(R"({"name": "x", "command": ["./x"]})"),
             Contains("field 'scenarios': must be a non-empty array of scenario names"));
  CHECK_THAT(manifestError(R"({"name": "x", "command": ["./x"], "scenarios": "wallet"})"),
             Contains("field 'scenarios': must be a non-empty array of scenario names"));
  CHECK_THAT(manifestError(R"({"name": "x", "command": ["./x"], "scenarios": [7]})"),
             Contains("field 'scenarios[0]': must be a string"));
  CHECK_THAT(manifestError(R"({"name": "x", "command": ["./x"], "scenarios": [""]})"),
             Contains("field 'scenarios[0]': must be a non-empty string"));
}

TEST_CASE("expandVars expands ${VAR}, keeps $$ as $ and rejects unknown variables", "[manifest]") {
  std::map<std::string, std::string> vars = {{"CONSUMER", "c1"}, {"PORT", "5432"}};
  CHECK(idem::expandVars("name-${CONSUMER}", vars, "env.NAME") == "name-c1");
  CHECK(idem::expandVars("${CONSUMER}:${PORT}", vars, "env.NAME") == "c1:5432");
  CHECK(idem::expandVars("cost $$5", vars, "env.NAME") == "cost $5");
  CHECK(idem::expandVars("$$${PORT}", vars, "env.NAME") == "$5432");
  CHECK(idem::expandVars("a $b", vars, "env.NAME") == "a $b");
  CHECK(idem::expandVars("trailing $", vars, "env.NAME") == "trailing $");
  CHECK(idem::expandVars("", vars, "env.NAME") == "");
  CHECK_THAT(usageError([&] { idem::expandVars("${NOPE}", vars, "targets/t/target.json: field 'env.X'"); }),
             Contains("targets/t/target.json: field 'env.X': unknown variable '${NOPE}'"));
  CHECK_THAT(usageError([&] { idem::expandVars("${PORT", vars, "env.X"); }), Contains("unterminated"));
}

TEST_CASE("manifest: a variable in env is one idemproof sets or has, checked as the manifest is read", "[manifest]") {
  const std::string head = R"({"name": "x", "command": ["./x"], "schema": "schema.sql", "scenarios": ["wallet"], "env": )";
  CHECK_THAT(manifestError(head + R"({"A": "${NOPE_NOT_SET}"}})"),
             Contains("field 'env.A': unknown variable '${NOPE_NOT_SET}'"));
  CHECK_THAT(manifestError(head + R"({"A": "x${CONSUMER"}})"), Contains("field 'env.A': 'x${CONSUMER': unterminated"));
  // idemproof's own variables, and its environment's, are fine.
  ::setenv("IDEM_MANIFEST_TEST_VAR", "1", 1);
  ScratchDir d;
  d.write("t/target.json", head + R"({"A": "${CONSUMER}-${DATABASE_URL}", "B": "${IDEM_MANIFEST_TEST_VAR}", "C": "$$5"}})");
  d.write("t/schema.sql", "CREATE TABLE processed (id text);");
  CHECK_NOTHROW(idem::loadTarget(d.path / "t"));
  ::unsetenv("IDEM_MANIFEST_TEST_VAR");
}

TEST_CASE("manifest: a failing expectation may name its anti-pattern, a passing one may not", "[manifest]") {
  ScratchDir d;
  d.write("f/target.json", R"({"name": "f", "command": ["./f"], "scenarios": ["wallet"], "expect": {"wallet":
    {"verdict": "fail", "kinds": ["lost"], "why": "w", "pattern": "dedup-outside-transaction"}}})");
  CHECK(idem::loadTarget(d.path / "f").expect.at("wallet").pattern == "dedup-outside-transaction");
  CHECK_THAT(manifestError(R"({"name": "x", "command": ["./x"], "scenarios": ["wallet"], "expect": {"wallet":
    {"verdict": "pass", "why": "w", "pattern": "effect-without-dedup"}}})"),
             Contains("pattern"));
}

TEST_CASE("manifest: an expectation may differ under one sink policy, the others keep the scenario's", "[manifest]") {
  ScratchDir d;
  d.write("k/target.json", R"({"name": "k", "command": ["./k"], "scenarios": ["payments"], "expect": {"payments":
    {"verdict": "pass", "why": "keyed", "sink_policy": {"ignore": {"verdict": "fail", "kinds": ["charged-twice"],
     "why": "keys ignored"}}}}})");
  const idem::Target t = idem::loadTarget(d.path / "k");
  CHECK(t.expected("payments", "").verdict == "pass");
  CHECK(t.expected("payments", "honour").verdict == "pass"); // none of its own: the scenario's
  CHECK(t.expected("payments", "ignore").verdict == "fail");
  CHECK(t.expected("payments", "ignore").kinds == std::vector<std::string>{"charged-twice"});
  CHECK_THAT(manifestError(R"({"name": "x", "command": ["./x"], "scenarios": ["payments"], "expect": {"payments":
    {"verdict": "pass", "why": "w", "sink_policy": {"maybe": {"verdict": "pass", "why": "w"}}}}})"),
             Contains("field 'expect.payments.sink_policy.maybe': is not a sink policy"));
  CHECK_THAT(manifestError(R"({"name": "x", "command": ["./x"], "scenarios": ["payments"], "expect": {"payments":
    {"verdict": "pass", "why": "w", "sink_policy": {"ignore": {"verdict": "fail", "why": "w"}}}}})"),
             Contains("expect.payments.sink_policy.ignore.kinds"));
  CHECK_THAT(manifestError(R"({"name": "x", "command": ["./x"], "scenarios": ["payments"], "expect": {"payments":
    {"verdict": "pass", "why": "w", "sink_policy": []}}})"),
             Contains("field 'expect.payments.sink_policy': must be an object"));
}

TEST_CASE("manifest: processes names the consumer and its outbox relay, outbox how to count unsent rows",
          "[manifest]") {
  ScratchDir d;
  d.write("t/target.json", R"j({"name": "o", "processes": {"consumer": ["./c", "-v"], "relay": ["python3", "r.py"]},
                                "outbox": {"pending": ["SELECT count(*)", "FROM outbox WHERE sent_at IS NULL"]},
                                "scenarios": ["wallet"]})j");
  idem::Target t = idem::loadTarget(d.path / "t");
  CHECK(t.command == std::vector<std::string>{(d.path / "t" / "c").string(), "-v"});
  CHECK(t.relay == std::vector<std::string>{"python3", "r.py"});
  CHECK(t.outboxPending == "SELECT count(*)\nFROM outbox WHERE sent_at IS NULL");
  // A consumer alone under "processes" is a target without a relay.
  d.write("t/target.json", R"({"name": "o", "processes": {"consumer": ["./c"]}, "scenarios": ["wallet"]})");
  t = idem::loadTarget(d.path / "t");
  CHECK(t.relay.empty());
  CHECK(t.outboxPending.empty());
  CHECK(idem::loadTarget(d.path / "t").command == std::vector<std::string>{(d.path / "t" / "c").string()});
}

TEST_CASE("manifest: processes and outbox errors name the field", "[manifest]") {
  const std::string out = R"("outbox": {"pending": "SELECT 0"}, "scenarios": ["wallet"]})";
  CHECK(manifestError(R"({"name": "x", "command": ["./x"], "processes": {"consumer": ["./x"]}, )" + out) ==
        "targets/t/target.json: field 'processes': give either \"command\" or \"processes\", not both");
  CHECK(manifestError(R"({"name": "x", "processes": {"consumer": ["./x"], "sidecar": ["./y"]}, )" + out) ==
        "targets/t/target.json: field 'processes.sidecar': is not a process role (known: consumer, relay)");
  CHECK(manifestError(R"({"name": "x", "processes": {"relay": ["./y"]}, )" + out) ==
        "targets/t/target.json: field 'processes.consumer': is required: the consumer's argv");
  CHECK(manifestError(R"({"name": "x", "processes": {"consumer": ["./x"], "relay": []}, )" + out) ==
        "targets/t/target.json: field 'processes.relay': must be a non-empty array of strings");
  CHECK(manifestError(R"({"name": "x", "processes": ["./x"], )" + out).find("field 'processes': must be an object") !=
        std::string::npos);
  CHECK_THAT(manifestError(R"({"name": "x", "processes": {"consumer": ["./x"], "relay": ["./y"]}, "scenarios": ["wallet"]})"),
             Contains("field 'outbox': a target with a relay declares"));
  CHECK_THAT(manifestError(R"({"name": "x", "command": ["./x"], )" + out),
             Contains("field 'outbox': only a target with a relay"));
  const std::string relay = R"({"name": "x", "processes": {"consumer": ["./x"], "relay": ["./y"]}, )";
  CHECK(manifestError(relay + R"("outbox": {"pending": " "}, "scenarios": ["wallet"]})") ==
        "targets/t/target.json: field 'outbox.pending': must be SQL returning one row with the count of unsent "
        "outbox rows");
  CHECK_THAT(manifestError(relay + R"("outbox": {"pending": "SELECT 0", "sent": "x"}, "scenarios": ["wallet"]})"),
             Contains("field 'outbox.sent'"));
  CHECK_THAT(manifestError(relay + R"("outbox": "SELECT 0", "scenarios": ["wallet"]})"),
             Contains("field 'outbox': must be an object"));
  CHECK_THAT(manifestError(R"({"name": "x", "kind": "http", "processes": {"consumer": ["./x"]}, "scenarios": ["wallet"]})"),
             Contains("field 'processes': only a consumer target"));
}
