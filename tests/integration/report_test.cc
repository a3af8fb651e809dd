/// report.html, JUnit XML, `compare` and `demo` end to end: the real binary on real servers, the page
/// opened in headless Chromium (rendered DOM, screenshot of the demo), the XML parsed by python3.
#include "support.h"

#include "../unit/report/golden.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <random>
#include <set>

using namespace itest;
namespace fs = std::filesystem;

namespace {

/// Headless Chromium on `page`: the DOM after rendering (`--dump-dom`), or a screenshot when `png` is set.
std::string chromium(const fs::path& page, const fs::path& png = {}) {
  static std::mt19937_64 rng(std::random_device{}());
  fs::path dir = fs::temp_directory_path() / ("itest-chromium-" + std::to_string(rng()));
  fs::create_directories(dir);
  std::string cmd = "timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-background-networking "
                    "--disable-component-update --disable-sync --no-first-run --user-data-dir='" + (dir / "profile").string() + "' " +
                    (png.empty() ? std::string("--dump-dom") : "--screenshot='" + png.string() + "' --window-size=1280,2000") +
                    " 'file://" + fs::absolute(page).string() + "' >'" + (dir / "out").string() + "' 2>'" + (dir / "err").string() + "'";
  int rc = std::system(cmd.c_str());
  std::string out = idem::testing::readFile(dir / "out");
  INFO("chromium: " << idem::testing::readFile(dir / "err"));
  REQUIRE(rc == 0);
  fs::remove_all(dir);
  return out;
}

/// "" when python3's xml.etree parses the file, else its error; `cases` gets the number of testcases.
std::string parseJunit(const fs::path& xml, int& cases, int& failures) {
  fs::path out = xml.string() + ".parsed";
  std::string cmd = "/usr/bin/python3 -c 'import sys, xml.etree.ElementTree as E\n"
                    "r = E.parse(sys.argv[1]).getroot()\n"
                    "print(len(r.findall(\".//testcase\")), len(r.findall(\".//failure\")))' '" +
                    xml.string() + "' >'" + out.string() + "' 2>&1";
  int rc = std::system(cmd.c_str());
  std::string text = idem::testing::readFile(out);
  if (rc != 0) return text;
  std::istringstream(text) >> cases >> failures;
  return "";
}

/// A violation's `ops` are indices into its run's history, which the golden comparison leaves out: its
/// timing varies, and a busy machine may add a note (a request the proxy held) that moves every index after
/// it. Each index becomes what it cites, "c2 step XAUTOCLAIM", which does not vary; so do its pattern's.
void citeOps(nlohmann::json& report) {
  auto citeAll = [](nlohmann::json& ops, const nlohmann::json& history) {
    for (auto& o : ops) {
      const auto& op = history.at(o.get<size_t>());
      std::string what = op["process"].get<std::string>() + " " + op["type"].get<std::string>();
      if (op["value"].contains("verb")) what += " " + op["value"]["verb"].get<std::string>();
      o = what;
    }
  };
  // The ops of the violation and of its anti-pattern alike.
  auto cite = [&](nlohmann::json& violation, const nlohmann::json& history) {
    citeAll(violation["ops"], history);
    if (violation.contains("pattern")) citeAll(violation["pattern"]["ops"], history);
  };
  for (auto& v : report["violations"])
    for (const auto& run : report["runs"])
      if (run["id"] == v["run"]) cite(v, run["history"]);
  for (auto& run : report["runs"]) {
    for (auto& v : run["violations"]) cite(v, run["history"]);
    for (auto& c : run["checks"])
      for (auto& v : c["violations"]) cite(v, run["history"]);
  }
}

/// The dumped DOM holds no element the data could have injected.
void requireNoInjectedElements(const std::string& dom) {
  CHECK(idem::testing::occurrences(dom, "<script") == 0);
  CHECK(idem::testing::occurrences(dom, "<img") == 0);
  CHECK(idem::testing::occurrences(dom, "<iframe") == 0);
}

} // namespace

TEST_CASE("report: run writes report.html and JUnit XML, the page shows the verdict, diagnosis and kill", "[report]") {
  Result r = idemproof({"run", "--target", target("dedup-valkey"), "--scenario", "wallet", "--crash", "after:SET#3", "--junit",
                        scratchPath("junit-run-dedup-valkey.xml").string()});
  INFO(r.out << r.err);
  REQUIRE(r.status == 1);
  REQUIRE(fs::exists(r.reportDir / "report.html"));
  // Golden report.json (times, pids, ports, ids and temp paths normalised; the history's timing varies).
  idem::testing::Normaliser norm(std::map<std::string, std::string>{{r.reportDir.string(), "report"}, {repo().string(), "repo"}});
  norm.drop("history").drop("stats");
  nlohmann::json cited = r.report;
  citeOps(cited);
  std::string diff = idem::testing::compareGolden("integration-run-dedup-valkey-after-SET3.report.json", norm(cited));
  INFO(diff);
  CHECK(diff.empty());

  std::string dom = chromium(r.reportDir / "report.html");
  requireNoInjectedElements(dom);
  CHECK(dom.find("<div class=\"badge\">Fail</div>") != std::string::npos);
  CHECK(dom.find("event 3 lost: delivered to c1 (XREADGROUP#2), c1 killed at after:SET#3") != std::string::npos);
  // The anti-pattern and its fix, above the timeline.
  CHECK(dom.find("dedup mark outside the effect's transaction") != std::string::npos);
  CHECK(dom.find("fix: write the mark in the effect's transaction") != std::string::npos);
  CHECK(dom.find("✕ c1 SIGKILLed at after:SET#3") != std::string::npos);
  CHECK(dom.find("href=\"logs/run/c1.log\"") != std::string::npos);
}

TEST_CASE("report: JUnit XML of run and sweep parses, one testcase per checker and per kill point", "[report]") {
  fs::path junit = scratchPath("junit-run.xml");
  Result run = idemproof({"run", "--target", target("dedup-valkey"), "--scenario", "wallet", "--crash", "after:SET#3",
                          "--junit", junit.string()});
  int cases = 0, failures = 0;
  std::string error = parseJunit(junit, cases, failures);
  INFO(error << idem::testing::readFile(junit));
  CHECK(error.empty());
  CHECK(cases == static_cast<int>(run.report["runs"][0]["checks"].size()));
  CHECK(failures == 1);

  fs::path sweepJunit = scratchPath("junit-sweep.xml");
  // Two generated events and the retry of event 2: failing and passing points at half the default sweep's.
  Result sweep = idemproof({"sweep", "--target", target("dedup-valkey"), "--scenario", "wallet", "--events", "2", "--seed",
                            "1", "--junit", sweepJunit.string()});
  REQUIRE(sweep.status == 1);
  error = parseJunit(sweepJunit, cases, failures);
  CHECK(error.empty());
  CHECK(cases == static_cast<int>(sweep.report["sweep"]["points"].size()) + 1);
  CHECK(failures == sweep.report["sweep"]["failed"].get<int>());
  std::string dom = chromium(sweep.reportDir / "report.html");
  CHECK(dom.find("<table class=\"grid\">") != std::string::npos);
  CHECK(dom.find("fail: lost") != std::string::npos);
}

TEST_CASE("report: a hostile target's markup (name, logs) is shown as text and never runs", "[report]") {
  Result r = idemproof({"run", "--target", (repo() / "tests" / "targets" / "hostile").string(), "--scenario", "wallet",
                        "--crash", "after:COMMIT#2"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  std::string html = idem::testing::readFile(r.reportDir / "report.html");
  CHECK(idem::testing::occurrences(html, "<script") == 0);
  CHECK(idem::testing::occurrences(html, "<img") == 0);
  std::string dom = chromium(r.reportDir / "report.html");
  requireNoInjectedElements(dom);
  CHECK(dom.find("<b>hostile</b>") == std::string::npos);
  // The name and the log lines are there, as text; the title is the page's own (no script changed it).
  CHECK(dom.find("&lt;b&gt;hostile&lt;/b&gt; &lt;script&gt;alert(3)&lt;/script&gt;") != std::string::npos);
  CHECK(dom.find("&lt;script&gt;alert(1)&lt;/script&gt; entry") != std::string::npos);
  CHECK(dom.find("\"&gt;&lt;img src=x onerror=alert(2)&gt;") != std::string::npos);
  CHECK(dom.find("<title>idemproof run: pass") != std::string::npos);
}

TEST_CASE("compare: a matrix of classes x targets, exit 0, or 1 with --fail-on-violation", "[report]") {
  fs::path junit = scratchPath("junit-compare.xml");
  // Kill classes only: the fault and race classes are the demo's (its test below names them); the generated
  // classes (--runs) are cells like these (shard_test's compare and the demo run them).
  Result r = idemproof({"compare", "--target", target("simple"), "--target", target("dedup-table"), "--scenario", "wallet",
                        "--runs", "0", "--per-class", "1", "--faults", "kill", "--junit", junit.string()});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  const auto& c = r.report["compare"];
  std::map<std::pair<std::string, std::string>, nlohmann::json> cells;
  for (const auto& x : c["cells"]) cells[{x["class"], x["target"]}] = x;
  CHECK(cells[{"default", "simple"}]["verdict"] == "fail");
  CHECK(cells[{"default", "simple"}]["kinds"] == nlohmann::json::array({"duplicate"}));
  CHECK(cells[{"kill:COMMIT>XACK", "simple"}]["verdict"] == "fail");
  CHECK(cells[{"kill:BEGIN>INSERT", "simple"}]["verdict"] == "n/a");
  for (const auto& x : c["cells"])
    if (x["target"] == "dedup-table") CHECK((x["verdict"] == "pass" || x["verdict"] == "n/a"));
  for (const auto& cost : c["costs"]) {
    CHECK(cost["entries"] == 6);
    CHECK(cost["msgs_per_s"].get<double>() > 0);
    CHECK(cost["round_trips_per_msg"].get<double>() >= 4);
  }
  CHECK(r.out.find("after COMMIT, before XACK") != std::string::npos);
  int cases = 0, failures = 0;
  CHECK(parseJunit(junit, cases, failures).empty());
  CHECK(failures > 0);
  std::string dom = chromium(r.reportDir / "report.html");
  CHECK(dom.find("<table class=\"matrix\">") != std::string::npos);

  Result strict = idemproof({"compare", "--target", target("simple"), "--scenario", "wallet", "--runs", "0", "--per-class", "1",
                             "--faults", "kill", "--fail-on-violation"});
  INFO(strict.out << strict.err);
  CHECK(strict.status == 1);
}

namespace {

/// The classes of the demo's wallet section that only `demo --full` runs (each shows a family another
/// class shows too).
const std::vector<std::string> kFamilyRepeats = {"drop:before", "delay:after", "restart:valkey", "late-retry",
                                                 "race:claim+kill", "race:dup+kill"};

/// The class ids of a demo's section.
std::set<std::string> classesOf(const nlohmann::json& section) {
  std::set<std::string> out;
  for (const auto& c : section["compare"]["classes"]) out.insert(c["id"].get<std::string>());
  return out;
}

/// A demo's report and output: every reference target as documented (targets/README.md), with each fault
/// family and HTTP client behaviour a class of the matrix.
void requireDemoAsDocumented(const Result& r) {
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(leftovers(r.tag).empty());
  const auto& demo = r.report["demo"];
  CHECK(demo["as_expected"] == true);
  // wallet, wallet on Kafka (its runs wait on the group's joins: a lane of its own), customer-city,
  // order-shipping, orders (HTTP), payments (the sink), wallet-poison
  REQUIRE(demo["sections"].size() == 7);
  std::map<std::string, nlohmann::json> targets;
  for (const auto& s : demo["sections"])
    for (const auto& t : s["targets"]) targets[t["name"]] = t;
  CHECK(targets["simple"]["verdict"] == "fail");
  CHECK(targets["simple"]["kinds"] == nlohmann::json::array({"duplicate"}));
  CHECK(targets["dedup-table"]["verdict"] == "pass");
  CHECK(targets["dedup-valkey"]["verdict"] == "fail");
  CHECK(targets["dedup-valkey"]["kinds"] == nlohmann::json::array({"lost"}));
  CHECK(targets["dedup-valkey"]["example_title"].get<std::string>().find("(after:SET#") != std::string::npos);
  CHECK(targets["versioned-naive"]["verdict"] == "fail");
  CHECK(targets["ship-naive"]["verdict"] == "fail");
  CHECK(targets["versioned-guard"]["verdict"] == "pass");
  CHECK(targets["ship-guarded"]["verdict"] == "pass");
  // Faults beyond kills (docs/faults.md): a class per kind (and moment), with the targets that need them.
  CHECK(targets["crash-on-40001"]["verdict"] == "pass");
  CHECK(targets["retry-no-dedup"]["verdict"] == "fail");
  CHECK(targets["no-reconnect"]["verdict"] == "fail");
  CHECK(targets["no-reconnect"]["kinds"].dump().find("stuck") != std::string::npos);
  CHECK(targets["check-then-act"]["verdict"] == "fail");
  // The wallet section's matrix spans the brokers: the same strategies on NATS and RabbitMQ.
  for (const char* broker : {"nats", "amqp"}) {
    INFO(broker);
    const std::string b = broker;
    CHECK(targets[b + "-dedup-table"]["verdict"] == "pass");
    CHECK(targets[b + "-no-dedup"]["kinds"] == nlohmann::json::array({"duplicate"}));
    CHECK(targets[b + "-ack-first"]["verdict"] == "fail");
    CHECK(targets[b + "-ack-first"]["patterns"].dump().find("acknowledge before the effect is durable") !=
          std::string::npos);
  }
  // Kafka: auto-commit loses, commit-after duplicates, the dedup table passes, and the commit of revoked
  // partitions duplicates under the broker's own family, a rebalance mid-batch.
  CHECK(targets["kafka-autocommit"]["kinds"].dump().find("lost") != std::string::npos);
  CHECK(targets["kafka-commit-after"]["kinds"].dump().find("duplicate") != std::string::npos);
  CHECK(targets["kafka-dedup-table"]["verdict"] == "pass");
  CHECK(targets["kafka-revoke-unsafe"]["kinds"].dump().find("duplicate") != std::string::npos);
  const auto& kafka = demo["sections"][1];
  CHECK(kafka["scenario"] == "wallet");
  CHECK(kafka["description"].get<std::string>().find("(targets on Kafka)") != std::string::npos);
  CHECK(classesOf(kafka).count("rebalance") == 1);
  CHECK(classesOf(demo["sections"][0]).count("rebalance") == 0); // no other broker has it
  // Poison events: dead-lettered passes, dropped and retried forever fail the check each breaks.
  CHECK(targets["poison-dlq"]["verdict"] == "pass");
  CHECK(targets["poison-drop"]["kinds"] == nlohmann::json::array({"not-dead-lettered"}));
  CHECK(targets["poison-retry-forever"]["kinds"].dump().find("unbounded") != std::string::npos);
  // The payments section: each sink target under both provider policies, a row each, judged against its
  // manifest's expectation for that policy: sink-keyed and sink-outbox pass one and charge twice under the other.
  std::map<std::string, nlohmann::json> columns;
  for (const auto& s : demo["sections"])
    if (s["scenario"] == "payments")
      for (const auto& t : s["targets"]) columns[t["name"].get<std::string>() + "/" + t.value("sink_policy", "")] = t;
  CHECK(columns.size() == 8);
  for (const char* keyed : {"sink-keyed", "sink-outbox"}) {
    INFO(keyed);
    CHECK(columns[std::string(keyed) + "/honour"]["verdict"] == "pass");
    CHECK(columns[std::string(keyed) + "/ignore"]["verdict"] == "fail");
    CHECK(columns[std::string(keyed) + "/ignore"]["kinds"].dump().find("charged-twice") != std::string::npos);
  }
  CHECK(columns["sink-call-then-commit/ignore"]["verdict"] == "fail");
  // The dedup window class: marks that expire before the producer's retry window ends.
  CHECK(targets["dedup-valkey-short-ttl"]["kinds"].dump().find("dedup-window") != std::string::npos);
  auto classes = classesOf(demo["sections"][0]);
  for (const char* c : {"drop:after", "delay:before", "error", "forget", "age", "restart:pg", "race:claim", "race:dup", "retry",
                        "reorder", "kill:COMMIT>XACK", "kill:SET>BEGIN"}) {
    INFO(c);
    CHECK(classes.count(c) == 1);
  }
  CHECK(r.out.find("every reference target behaved as its target.json expects") != std::string::npos);
  // The orders section: the HTTP servers, each client behaviour a class; the correct one passes every cell.
  CHECK(targets["http-correct"]["verdict"] == "pass");
  CHECK(targets["http-naive"]["kinds"].dump().find("double-effect") != std::string::npos);
  CHECK(targets["http-no-hash"]["kinds"] == nlohmann::json::array({"mismatch-accepted"}));
  CHECK(targets["http-key-outside-tx"]["kinds"] == nlohmann::json::array({"stuck-key"}));
  CHECK(targets["http-check-then-insert"]["kinds"].dump().find("double-effect") != std::string::npos);
  std::set<std::string> httpClasses;
  for (const auto& s : demo["sections"])
    if (s["scenario"] == "orders")
      for (const auto& c : s["compare"]["classes"]) httpClasses.insert(c["id"].get<std::string>());
  for (const char* c : {"http:retry", "http:timeout-inflight", "http:burst", "http:mismatch", "http:mismatch-race",
                        "http:missing-key", "http:cut"}) {
    INFO(c);
    CHECK(httpClasses.count(c) == 1);
  }
}

/// The schedules of a demo's report.
size_t schedulesOf(const Result& r) { return r.report["timings"]["schedules"].get<size_t>(); }

} // namespace

TEST_CASE("demo: each class once per target, every reference target as documented, one report with a timeline per "
          "counterexample", "[report][lanes]") {
  fs::path junit = scratchPath("junit-demo.xml");
  Result r = idemproof({"demo", "--junit", junit.string()});
  requireDemoAsDocumented(r);
  const auto& demo = r.report["demo"];
  CHECK(demo["runs_per_class"] == 1);
  CHECK(demo["per_class"] == 1);
  CHECK(r.out.find("idemproof demo --full runs the complete matrix") != std::string::npos);
  // Each fault family once: the classes whose family another shows are the full demo's, and the kills
  // before a process's first delivery are one class.
  auto classes = classesOf(demo["sections"][0]);
  for (const auto& c : kFamilyRepeats) {
    INFO(c);
    CHECK(classes.count(c) == 0);
  }
  for (const auto& s : demo["sections"]) {
    if (s["scenario"] == "orders") continue; // HTTP servers read no delivery
    INFO(s["scenario"]);
    CHECK(classesOf(s).count("kill:start>delivery") == 1);
  }
  // The wallet's consumers on Valkey, NATS and RabbitMQ: no gap of theirs before a delivery is a class of
  // its own (the payments relay, which reads no delivery, keeps its gaps).
  for (const auto& c : classes) CHECK((c.rfind("kill:start>", 0) != 0 || c == "kill:start>delivery"));
  // Each class once per target: a (target, class) cell holds one schedule per variant of its class — one,
  // but for the classes made of several: both orders of two versions, the three moments of a cut.
  const std::map<std::string, int> variants = {{"race:versions", 2}, {"http:cut", 3}};
  for (const auto& s : demo["sections"])
    for (const auto& c : s["compare"]["cells"]) {
      INFO(s["scenario"] << " " << c["target"] << " " << c["class"]);
      auto v = variants.find(c["class"].get<std::string>());
      CHECK(c["schedules"].get<int>() <= (v == variants.end() ? 1 : v->second));
    }

  std::string html = idem::testing::readFile(r.reportDir / "report.html");
  CHECK(idem::testing::occurrences(html, "<svg class=\"timeline\"") >= 4);
  std::string dom = chromium(r.reportDir / "report.html");
  requireNoInjectedElements(dom);
  CHECK(dom.find("As documented") != std::string::npos);
  CHECK(dom.find("event 1 lost: delivered to c1") != std::string::npos);
  int cases = 0, failures = 0;
  CHECK(parseJunit(junit, cases, failures).empty());
  CHECK(cases > 20);
  fs::path png = build() / "demo-report.png";
  fs::remove(png);
  chromium(r.reportDir / "report.html", png);
  CHECK(fs::file_size(png) > 20000);
}

TEST_CASE("demo --full: the complete matrix, twice the schedules of each class, every reference target as "
          "documented", "[report][slow][two-cores]") {
  Result r = idemproof({"demo", "--full"});
  requireDemoAsDocumented(r);
  CHECK(r.report["demo"]["runs_per_class"] == 2);
  CHECK(r.report["demo"]["per_class"] == 2);
  auto classes = classesOf(r.report["demo"]["sections"][0]);
  for (const auto& c : kFamilyRepeats) {
    INFO(c);
    CHECK(classes.count(c) == 1);
  }
  CHECK(r.out.find("--full runs the complete matrix") == std::string::npos);
  CHECK(schedulesOf(r) > 400);
}
