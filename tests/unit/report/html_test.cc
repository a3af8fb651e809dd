// report.html: escaping, self-containment, and what the page shows (verdict first, diagnosis, timeline,
// sweep grid, compare matrix). Rendering it in a browser is the integration tests' job.
#include "report/html.h"
#include "report/html_util.h"

#include "fixtures.h"

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

TEST_CASE("html: every string from a target or a history is escaped, wherever it appears") {
  for (const char* input : {"run", "sweep-dedup-valkey.report.json", "compare-customer-city.report.json"}) {
    INFO(input);
    json report = std::string(input) == "run" ? runReportOf("dedup-valkey-after-SET3.history.json", "wallet") : loadInput(input);
    poison(report);
    // The structure stays what the writer expects: command, verdicts and the ids that link runs.
    for (const char* key : {"command", "verdict"}) report[key] = html::str(report, key).substr(0, html::str(report, key).find('<'));
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

TEST_CASE("html: log tails are the last lines of the file") {
  auto dir = scratch("tail");
  std::ofstream(dir / "a.log") << "1\n2\n3\n4\n";
  CHECK(logTail((dir / "a.log").string(), 2) == "3\n4");
  CHECK(logTail((dir / "a.log").string(), 10) == "1\n2\n3\n4");
  CHECK(logTail((dir / "missing.log").string()).empty());
}
