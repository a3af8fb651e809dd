// report.html: escaping, self-containment, and what the page shows (verdict first, diagnosis, timeline,
// sweep grid, compare matrix). Rendering it in a browser is the integration tests' job.
#include "report/html.h"
#include "report/html_timeline.h"
#include "report/html_util.h"

#include "fixtures.h"
#include "unit/checkers/history_builder.h"

#include <catch2/catch.hpp>

#include <regex>
#include <set>

using namespace idem;
using namespace idem::testing;
using json = nlohmann::json;

namespace {

const std::string kScript = "<script>document.title='PWNED'</script>";
const std::string kImg = "\"><img src=x onerror=alert(2)>";

/// Every string member of `j` (recursively) gets the hostile payloads appended; numbers stay.
/// Appends markup to every string a target or a run can put in a report. Left alone: the words of the
/// harness's own vocabularies that give a history its shape (op types, outcomes, fault texts, restart
/// styles, how a run ended), which a history that could be read never holds otherwise.
void poison(json& j) {
  static const std::set<std::string> shape{"type", "outcome", "fault", "faults", "kills", "restart", "end", "limit"};
  if (j.is_string()) j = j.get<std::string>() + kScript + kImg;
  else if (j.is_structured())
    for (auto& [k, v] : j.items())
      if (!j.is_object() || !shape.count(k)) poison(v);
}

/// No element, attribute or URL came from the data: no script/img/iframe tags, no event handlers outside
/// text, nothing fetched.
void requireInert(const std::string& html) {
  CHECK(occurrences(html, "<script") == 0);
  CHECK(occurrences(html, "<img") == 0);
  CHECK(occurrences(html, "<iframe") == 0);
  CHECK(occurrences(html, "<link") == 0);
  CHECK(!std::regex_search(html, std::regex("<[^>]*\\s(src|href)=\"?[a-z]+:")));
  CHECK(!std::regex_search(html, std::regex("<[^>]*\\son[a-z]+=")));
  // The only URL is the SVG namespace.
  CHECK(occurrences(html, "http://") == occurrences(html, "xmlns=\"http://www.w3.org/2000/svg\""));
  CHECK(occurrences(html, "https://") == 0);
}

} // namespace

TEST_CASE("html: escaping of text and attributes, invalid UTF-8, cutting, hrefs") {
  CHECK(html::esc("<a href=\"x\">'&'</a>") == "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  CHECK(html::cleanUtf8("a\xff" "b\x01" "c\xc3\xa9") == "a\xEF\xBF\xBD" "bc\xc3\xa9");
  CHECK(html::cleanUtf8("\xed\xa0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"); // a surrogate is not UTF-8
  CHECK(html::cut("ééééé", 3) == "ééé…");
  CHECK(html::cut("abc", 3) == "abc");
  CHECK(html::safeHref("logs/run/c1.log") == "logs/run/c1.log");
  for (const char* bad : {"javascript:alert(1)", "/etc/passwd", "../x.log", "logs/a\" onclick=\"x", "http://x/y", ""})
    CHECK(html::safeHref(bad).empty());
}

TEST_CASE("html: a failing run shows the verdict first, then the diagnosis and the timeline of the kill") {
  auto report = runReportOf("dedup-valkey-after-SET3.history.json", "wallet");
  std::string page = renderHtml(report, {{"logs/run/c1.log", "consumer c1 up\nprocessing 3"}});
  requireInert(page);
  size_t badge = page.find("<div class=\"badge\">Fail</div>");
  size_t diagnosis = page.find("event 3 lost: delivered to c1");
  size_t svg = page.find("<svg class=\"timeline\"");
  REQUIRE(badge != std::string::npos);
  REQUIRE(diagnosis != std::string::npos);
  REQUIRE(svg != std::string::npos);
  CHECK(badge < diagnosis);
  CHECK(diagnosis < svg);
  CHECK(occurrences(page, "<svg class=\"timeline\"") == 1);
  // The kill stands out, and the steps of the lost event are highlighted: its SET before the kill, the
  // SET NX that found the mark after the restart, and the ack without effect.
  CHECK(occurrences(page, "class=\"killrow\"") == 1);
  CHECK(page.find("<text class=\"t kill\"") != std::string::npos);
  CHECK(page.find("✕ c1 SIGKILLed at after:SET#3") != std::string::npos);
  std::regex hot("<text class=\"t hot\"[^>]*>([^<]*)</text>");
  std::string hotText;
  for (auto it = std::sregex_iterator(page.begin(), page.end(), hot); it != std::sregex_iterator(); ++it) hotText += (*it)[1].str() + "\n";
  INFO(hotText);
  CHECK(hotText.find("send event 3 as") != std::string::npos);
  CHECK(hotText.find("SET#3 seen:") != std::string::npos);
  CHECK(hotText.find("SET#4 seen:") != std::string::npos);
  CHECK(hotText.find("XACK#3") != std::string::npos);
  CHECK(hotText.find("SET#1 ") == std::string::npos);
  // Lanes: producer, c1, c2, Valkey, PostgreSQL; logs linked relatively, with their last lines.
  for (const char* lane : {">producer<", ">c1<", ">c2<", ">Valkey<", ">PostgreSQL<"}) CHECK(page.find(lane) != std::string::npos);
  CHECK(page.find("<a href=\"logs/run/c1.log\">logs/run/c1.log</a>") != std::string::npos);
  CHECK(page.find("processing 3") != std::string::npos);
}

TEST_CASE("html: an age fault's row shows the simulated time and what it did to the dedup state") {
  Scenario s = builtin("wallet");
  HistoryBuilder b(s);
  b.initial(json{{"balance", json::array({json::array({"w1", "0"}), json::array({"w2", "0"}), json::array({"w3", "0"})})}});
  const std::string e1 = b.send(1, {{"wallet", "w1"}, {"amount", "100"}});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", {e1});
  b.ack("c1", {e1});
  ops::Aged aged;
  aged.ms = 60000;
  aged.keys = true;
  aged.expired = 1;
  aged.prune = "DELETE FROM processed_messages WHERE processed_at < now() - '-40000 milliseconds'::interval";
  aged.pruned = 2;
  b.h.append("c1", ops::FaultOp{Fault::parse("age:after:XACK#1", "test"), 0, aged});
  b.finalOp(json{{"balance", json::array({json::array({"w1", "100"}), json::array({"w2", "0"}), json::array({"w3", "0"})})}});
  const std::string page = renderHtml(runReportOfOps(b.ops(), "wallet"), {});
  requireInert(page);
  CHECK(page.find("⏩ c1: age:after:XACK#1 — simulated time +60000 ms for the dedup state: 1 key expired, 0 moved, 2 rows "
                  "pruned") != std::string::npos);
}

TEST_CASE("html: every string from a target or a history is escaped, wherever it appears") {
  for (const char* input : {"run", "sweep-dedup-valkey.report.json", "compare-customer-city.report.json"}) {
    INFO(input);
    json report = std::string(input) == "run" ? runReportOf("dedup-valkey-after-SET3.history.json", "wallet") : loadInput(input);
    poison(report);
    // The structure stays what the writer expects: command, verdicts and the ids that link runs.
    auto unpoison = [](json& j, const char* key) { j[key] = html::str(j, key).substr(0, html::str(j, key).find('<')); };
    for (const char* key : {"command", "verdict"}) unpoison(report, key);
    if (report.contains("compare")) // the matrix is read through its type: its verdicts are words it knows
      for (const char* list : {"cells", "targets"})
        for (auto& x : report["compare"][list]) unpoison(x, "verdict");
    if (report.contains("sweep")) // so is the sweep's grid
      for (auto& p : report["sweep"]["points"]) unpoison(p, "verdict");
    std::map<std::string, std::string> tails;
    for (const auto& run : report["runs"])
      for (const auto& p : run["processes"])
        if (p["log"].is_string()) tails[p["log"]] = kScript + "\n" + kImg + "\n";
    std::string page = renderHtml(report, tails);
    requireInert(page);
    CHECK(page.find("&lt;script&gt;document.title=&#39;PWNED&#39;&lt;/script&gt;") != std::string::npos);
    CHECK(page.find("&quot;&gt;&lt;img src=x onerror=alert(2)&gt;") != std::string::npos);
  }
}

TEST_CASE("html: a history that cannot be read still renders, saying so, escaped") {
  json report = runReportOf("dedup-valkey-after-SET3.history.json", "wallet");
  report["runs"][0]["history"][3]["type"] = std::string("no-such-op") + kScript;
  std::string page = renderHtml(report);
  requireInert(page);
  CHECK(page.find("The history of this run could not be read: op 3 (no-such-op&lt;script&gt;") != std::string::npos);
}

TEST_CASE("html: a sweep shows a grid of kill points x verdict, failing cells linked to their counterexample") {
  json report = loadInput("sweep-dedup-valkey.report.json");
  std::string page = renderHtml(report);
  requireInert(page);
  CHECK(page.find("<table class=\"grid\">") != std::string::npos);
  // SET#1: before passes, after loses the payment (and has a section with its timeline).
  std::regex row("<td class=\"step\">SET#1</td><td>Valkey</td><td class=\"cell pass\">pass</td>"
                 "<td class=\"cell fail\"><a href=\"#run-1\">fail: lost</a></td>");
  CHECK(std::regex_search(page, row));
  CHECK(page.find("id=\"run-1\"") != std::string::npos);
  CHECK(occurrences(page, "<td class=\"cell fail\">") == 30);
}

TEST_CASE("html: a check of 10000 runs counts them and lists only the 100 first that did not pass or lost a fault") {
  json summaries = json::array();
  for (int run = 1; run <= 10000; ++run) {
    json s = {{"run", run}, {"verdict", "pass"}, {"planned", {"after:COMMIT#1"}}, {"fired", {"after:COMMIT#1"}}};
    if (run % 50 == 0) s["fired"] = json::array(); // 200 runs with coverage loss
    if (run == 7) {
      s["verdict"] = "unknown";
      s["reason"] = "invariant:balance: no final read";
    }
    summaries.push_back(s);
  }
  json report = {{"command", "check"}, {"verdict", "unknown"}, {"targets", {"t"}}, {"scenario", "wallet"},
                 {"runs", json::array()}, {"violations", json::array()},
                 {"check", {{"runs", 10000}, {"passed", 9999}, {"unknown", 1}, {"run_summaries", summaries},
                            {"coverage_summary", {{"runs_with_coverage_loss", 200}}}, {"counterexample", nullptr}}}};
  std::string page = renderHtml(report);
  requireInert(page);
  CHECK(page.find("10000 runs of the search: <b>9999</b> pass, <b>1</b> unknown; <b>200</b> with a fault that never fired") !=
        std::string::npos);
  CHECK(occurrences(page, "<td class=\"n\">") == 100);
  CHECK(page.find("invariant:balance: no final read") != std::string::npos);
  CHECK(page.find("Only the first 100 are listed") != std::string::npos);
  CHECK(page.size() < 100000);
}

TEST_CASE("html: a comparison shows the matrix of classes x targets and the costs") {
  json report = loadInput("compare-customer-city.report.json");
  std::string page = renderHtml(report);
  requireInert(page);
  CHECK(page.find("<table class=\"matrix\">") != std::string::npos);
  CHECK(page.find("<th>versioned-naive</th><th>versioned-guard</th>") != std::string::npos);
  CHECK(page.find("fail: stale-version") != std::string::npos);
  CHECK(page.find("<td class=\"cell na\"") != std::string::npos);
  CHECK(page.find("<table class=\"costs\">") != std::string::npos);
  CHECK(page.find("Failing: versioned-naive (stale-version).") != std::string::npos);
}

namespace {

/// Two consumers, c1 held before its first COMMIT while c2 claims the entry and applies it (the simple
/// consumer: event 1 applied twice). `release`: the note that releases it ("" for none: a timed hold's time
/// passed, and c1's COMMIT is the next thing it does).
std::vector<Op> heldRun(const std::string& hold, const std::string& release) {
  static const Scenario s = builtin("wallet");
  HistoryBuilder b(s, {hold});
  auto balance = [](const char* w1) {
    return json{{"balance", json::array({json::array({"w1", w1}), json::array({"w2", "0"}), json::array({"w3", "0"})})}};
  };
  b.initial(balance("0"));
  std::string e = b.send(1, {{"wallet", "w1"}, {"amount", "100"}});
  b.spawn("c1");
  b.spawn("c2");
  b.read("c1", "XREADGROUP", {e});
  b.step("c1", "pg", "BEGIN");
  b.step("c1", "pg", "UPDATE");
  b.fault("c1", hold);
  b.read("c2", "XAUTOCLAIM", {e});
  for (const char* verb : {"BEGIN", "UPDATE", "COMMIT"}) b.step("c2", "pg", verb);
  b.ack("c2", {e});
  if (!release.empty()) b.note("c1", release);
  b.step("c1", "pg", "COMMIT");
  b.ack("c1", {e});
  b.finalOp(balance("200"));
  return b.ops();
}

/// The y of the row whose text starts with `text` (the text sits 4 px below the row's middle).
int rowYOf(const std::string& page, const std::string& text) {
  std::smatch m;
  std::string literal = std::regex_replace(text, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)");
  std::string re = "<text class=\"t[^\"]*\" x=\"\\d+\" y=\"(\\d+)\">" + literal;
  if (!std::regex_search(page, m, std::regex(re))) return -1;
  return std::stoi(m[1]) - 4;
}

} // namespace

TEST_CASE("html: a hold shows where it fired, the held stretch of its lane, and its release") {
  const std::string hold = "hold:c1:before:COMMIT#1:c2:after:XACK#1";
  json report = runReportOfOps(heldRun(hold, "hold " + hold + " released: c2 reached c2:after:XACK#1"), "wallet");
  std::string page = renderHtml(report);
  requireInert(page);
  // The markers: a pause sign where it fired, a play sign where it was released, one held bar between.
  CHECK(occurrences(page, "<g class=\"hold\">") == 1);
  CHECK(occurrences(page, "<path class=\"release\"") == 1);
  CHECK(occurrences(page, "<rect class=\"held\"") == 1);
  CHECK(occurrences(page, "class=\"killrow\"") == 0); // a hold is not a kill
  // The text column says what held and why it was let go.
  int fired = rowYOf(page, "‖ c1 held at " + hold + ": request withheld until c2 reaches c2:after:XACK#1");
  int released = rowYOf(page, "▶ c1 released from " + hold + " after ");
  REQUIRE(fired > 0);
  REQUIRE(released > fired);
  CHECK(page.find(" ms: c2 reached c2:after:XACK#1</text>") != std::string::npos);
  // The bar runs on c1's lane from the one row to the other.
  std::smatch bar;
  REQUIRE(std::regex_search(
      page, bar, std::regex("<rect class=\"held\" x=\"(\\d+)\" y=\"(\\d+)\" width=\"10\" height=\"(\\d+)\"")));
  CHECK(std::stoi(bar[1]) + 5 == html::tl::kTimeW + 1 * html::tl::kLaneW + html::tl::kLaneW / 2); // lanes: producer, c1, …
  CHECK(std::stoi(bar[2]) == fired);
  CHECK(std::stoi(bar[2]) + std::stoi(bar[3]) == released);
  // The legend explains the marks; the diagnosis names the interleaving and the hold.
  CHECK(page.find("a hold fired, its process held") != std::string::npos);
  CHECK(page.find("c1 and c2 both worked on event 1 at once: c1 BEGIN#1, c1 UPDATE#1, c2 BEGIN#1") != std::string::npos);

  SECTION("a timed hold ends with its step, no note: the release is marked on that row") {
    const std::string timed = "hold:c1:before:COMMIT#1:1000";
    std::string p = renderHtml(runReportOfOps(heldRun(timed, ""), "wallet"));
    requireInert(p);
    CHECK(occurrences(p, "<g class=\"hold\">") == 1);
    CHECK(occurrences(p, "<path class=\"release\"") == 1);
    CHECK(occurrences(p, "<rect class=\"held\"") == 1);
    CHECK(rowYOf(p, "‖ c1 held at " + timed + ": request withheld for 1000 ms") > 0);
    CHECK(rowYOf(p, "▶ COMMIT#2") > 0); // c1's own first, the run's second
    CHECK(p.find("(hold released after 1000 ms)</text>") != std::string::npos);
  }

  SECTION("a pause is drawn as a hold whose process was stopped, from its SIGSTOP to its SIGCONT") {
    const std::string pause = "pause:before:COMMIT#1";
    std::string p = renderHtml(runReportOfOps(heldRun(pause, "pause " + pause + " released: 500 ms passed"), "wallet"));
    requireInert(p);
    CHECK(occurrences(p, "<g class=\"hold\">") == 1);
    CHECK(occurrences(p, "<path class=\"release\"") == 1);
    CHECK(occurrences(p, "<rect class=\"held paused\"") == 1);
    CHECK(occurrences(p, "class=\"killrow\"") == 0); // a pause is not a kill
    int stopped = rowYOf(p, "‖ c1 paused (SIGSTOP) at " + pause + ": request withheld for the broker&#39;s hand-over time"); // escaped
    int woken = rowYOf(p, "▶ c1 woken (SIGCONT) from " + pause + " after ");
    CHECK(stopped > 0);
    CHECK(woken > stopped);
    CHECK(p.find(" ms: 500 ms passed</text>") != std::string::npos);
  }
}

TEST_CASE("html: log tails are the last lines of the file") {
  auto dir = scratch("tail");
  std::ofstream(dir / "a.log") << "1\n2\n3\n4\n";
  CHECK(pageLogLines((dir / "a.log").string(), 2) == "3\n4");
  CHECK(pageLogLines((dir / "a.log").string(), 10) == "1\n2\n3\n4");
  CHECK(pageLogLines((dir / "missing.log").string()).empty());
}

TEST_CASE("html: a failing run names its anti-pattern and fix above the timeline, or no known pattern") {
  auto report = runReportOf("dedup-valkey-after-SET3.history.json", "wallet");
  std::string page = renderHtml(report);
  requireInert(page);
  size_t name = page.find("<b>dedup mark outside the effect&#39;s transaction</b>");
  size_t fix = page.find("fix: write the mark in the effect&#39;s transaction");
  size_t svg = page.find("<svg class=\"timeline\"");
  REQUIRE(name != std::string::npos);
  REQUIRE(fix != std::string::npos);
  REQUIRE(svg != std::string::npos);
  CHECK(name < svg);
  CHECK(fix < svg);
  CHECK(page.find("c1 marked event 3 as processed in Valkey (SET#3)") != std::string::npos);
  CHECK(page.find("no known pattern") == std::string::npos);

  for (auto& run : report["runs"])
    for (auto& v : run["violations"]) v.erase("pattern");
  page = renderHtml(report);
  CHECK(page.find("<div class=\"pattern none\">no known pattern</div>") != std::string::npos);
}

TEST_CASE("html: a scenario with poison events gets a dead-letter lane, which its writes reach") {
  const Scenario s = builtin("wallet-poison");
  HistoryBuilder b(s);
  b.initial(json{{"balance", json::array({json::array({"w1", "0"})})}});
  const std::string entry = b.send(3, {{"wallet", "w1"}, {"amount", "-500"}});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", {entry});
  b.step("c1", "pg", "BEGIN");
  b.sql("c1", "INSERT", "INSERT INTO dead_letters(event_id, reason) VALUES ($1, $2)", {"dead_letters"}, "INSERT 0 1");
  b.step("c1", "pg", "COMMIT");
  b.ack("c1", {entry});
  b.finalOp(json{{"balance", json::array({json::array({"w1", "0"})})}});
  auto ops = b.ops();
  finalOf(ops).deadLetterWhere = "table dead_letters";
  finalOf(ops).deadLetters = {{"1", b.eventId(3)}};
  const std::string svg = html::timeline(json{{"history", ops}, {"violations", json::array()}});
  CHECK(svg.find(">Dead letter<") != std::string::npos);
  CHECK(occurrences(svg, "<line class=\"call dead\"") == 1); // the INSERT, not BEGIN or COMMIT
  CHECK(svg.find("table dead_letters: 1 dead letter") != std::string::npos);
}

TEST_CASE("html: a scenario with a sink gets a sink lane, each call a mark linked to its CALL step") {
  const Scenario s = builtin("payments");
  HistoryBuilder b(s);
  b.initial(json{{"booked", json::array()}});
  const std::string entry = b.send(1, {{"wallet", "w1"}, {"amount", "5000"}});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", {entry});
  b.step("c1", "pg", "BEGIN");
  ops::Call executed;
  executed.id = 1;
  executed.method = "POST";
  executed.path = "/charges";
  executed.keyHeader = true;
  executed.key = "charge-1";
  executed.ref = b.eventId(1);
  executed.outcome = "executed";
  executed.status = 200;
  executed.execution = 1;
  b.h.append("sink", executed);
  b.step("c1", "sink", "CALL", "POST /charges key=charge-1 ref=" + b.eventId(1), "dropped-after");
  ops::Call replayed = executed;
  replayed.id = 2;
  replayed.outcome = "replayed";
  b.h.append("sink", replayed);
  b.step("c1", "sink", "CALL", "POST /charges key=charge-1 ref=" + b.eventId(1));
  b.step("c1", "pg", "COMMIT");
  b.ack("c1", {entry});
  b.finalOp(json{{"booked", json::array({json::array({b.eventId(1)})})}});
  const std::string svg = html::timeline(json{{"history", b.ops()}, {"violations", json::array()}});
  CHECK(svg.find(">Sink<") != std::string::npos);
  // A violation of event 1 makes its calls' rows hot, as its steps' (their detail names its id).
  const std::string hot = html::timeline(json{{"history", b.ops()}, {"violations", json::array({json{{"events", {1}}}})}});
  const std::regex hotCall("class=\"t hot\" x=\"[0-9]+\" y=\"[0-9]+\">sink: call");
  CHECK(std::distance(std::sregex_iterator(hot.begin(), hot.end(), hotCall), std::sregex_iterator()) == 2);
  CHECK(occurrences(svg, "<line class=\"call sink") == 2); // both CALL steps reach the sink's lane
  CHECK(occurrences(svg, "<circle class=\"sinkcall executed\"") == 1);
  CHECK(occurrences(svg, "<circle class=\"sinkcall replayed\"") == 1);
  CHECK(occurrences(svg, "<line class=\"calllink\"") == 2);
  CHECK(svg.find("sink: call 1 POST /charges e1 (00000000…) key charge-1 from c1 CALL#1 → executed #1 (200)") !=
        std::string::npos);
  CHECK(svg.find("sink: call 2 POST /charges e1 (00000000…) key charge-1 from c1 CALL#2 → replayed #1 (200)") !=
        std::string::npos);
}
