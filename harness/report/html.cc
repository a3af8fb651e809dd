#include "report/html.h"

#include "report/check_section.h"
#include "report/compare_section.h"
#include "report/html_util.h"
#include "report/sweep_section.h"

#include <fmt/format.h>

#include <fstream>
#include <set>
#include <sstream>

// This file's own functions are html's: they use its functions unqualified, with no using-directive that
// a unity batch would carry into the files after this one.
namespace idem::html {

namespace {

std::string kindsCount(const json& violations) {
  std::map<std::string, int> kinds;
  for (const auto& v : violations) ++kinds[str(v, "kind")];
  std::string out;
  for (const auto& [k, n] : kinds) out += (out.empty() ? "" : ", ") + fmt::format("{} {}", n, k);
  return out;
}

/// The "compare" section of a compare report or of a demo's section.
CompareSection compareOf(const json& owner) { return owner.at("compare").get<CompareSection>(); }

/// Targets that fail a class of a comparison, with their kinds: "simple (duplicate), dedup-valkey (lost)".
std::string failingTargets(const CompareSection& compare) {
  std::map<std::string, std::set<std::string>> fails;
  std::vector<std::string> order;
  for (const auto& c : compare.cells) {
    if (c.verdict != Verdict::Fail) continue;
    if (!fails.count(c.target)) order.push_back(c.target);
    fails[c.target].insert(c.kinds.begin(), c.kinds.end());
  }
  std::string out;
  for (const auto& t : order) {
    std::string kinds;
    for (const auto& k : fails[t]) kinds += (kinds.empty() ? "" : ", ") + k;
    out += (out.empty() ? "" : "; ") + t + " (" + kinds + ")";
  }
  return out;
}

std::string headline(const json& r) {
  std::string verdict = str(r, "verdict"), command = str(r, "command");
  if (verdict == "error") return "The run could not be judged: " + str(r, "error", "see the runs below");
  if (command == "compare" || command == "demo") {
    std::string fails;
    if (command == "compare") fails = failingTargets(compareOf(r));
    for (const auto& s : arr(arr(r, "demo"), "sections")) {
      std::string f = failingTargets(compareOf(s));
      if (!f.empty()) fails += (fails.empty() ? "" : "; ") + str(s, "scenario") + ": " + f;
    }
    if (command == "demo") {
      size_t n = 0, failing = 0;
      for (const auto& s : arr(arr(r, "demo"), "sections"))
        for (const auto& t : arr(s, "targets")) {
          ++n;
          failing += str(t, "verdict") == "fail";
        }
      return fmt::format("{} of {} reference targets fail{}: {}.", failing, n,
                         arr(r, "demo").value("as_expected", false) ? ", each as documented" : " — NOT all as documented",
                         fails.empty() ? "none" : fails);
    }
    return fails.empty() ? "No target failed any class of schedules." : "Failing: " + fails + ".";
  }
  const json& v = arr(r, "violations");
  if (verdict == "fail") return fmt::format("{} violation{}: {}.", v.size(), v.size() == 1 ? "" : "s", kindsCount(v));
  if (verdict == "pass") return command == "sweep" ? "Every invariant held at every kill point." : "Every invariant held.";
  if (verdict == "flaky") return "The verdict changed between runs of the same schedule: the target is nondeterministic.";
  std::string why;
  for (const auto& run : arr(r, "runs"))
    for (const auto& c : arr(run, "checks"))
      if (!str(c, "error").empty() && why.empty()) why = str(c, "checker") + ": " + str(c, "error");
  return "The result cannot be decided" + (why.empty() ? std::string(".") : ": " + why);
}

std::string title(const json& r) {
  if (str(r, "command") == "demo") return "The reference targets on the built-in scenarios";
  std::string targets;
  for (const auto& t : arr(r, "targets")) targets += (targets.empty() ? "" : " vs ") + show(t);
  return targets + " × " + str(r, "scenario");
}

std::string header(const json& r) {
  std::string verdict = str(r, "verdict");
  std::string badge = verdict.empty() ? "?" : std::string(1, char(std::toupper(verdict[0]))) + verdict.substr(1);
  if (str(r, "command") == "demo") { // the demo is judged by whether the references behaved as documented
    bool ok = arr(r, "demo").value("as_expected", false);
    verdict = ok ? "pass" : "fail";
    badge = ok ? "As documented" : "Not as documented";
  }
  double secs = static_cast<double>(num(arr(r, "timings"), "total_ms")) / 1000.0;
  std::string sub = fmt::format("idemproof {} · {} schedules · {:.1f} s · seed {}", str(r, "command"),
                                num(arr(r, "timings"), "schedules"), secs, show(r.value("seed", json(0))));
  std::string replay;
  if (r.contains("check"))
    if (const auto cx = r["check"].get<CheckSection>().counterexample) replay = cx->replayCommand;
  std::string reproduce = replay.empty() ? "" : fmt::format("<p class=\"sub\">reproduce: <code>{}</code></p>", esc(replay));
  return fmt::format("<header class=\"top {}\"><div class=\"badge\">{}</div><div><h1>{}</h1><p class=\"sub\">{}</p>"
                     "<p class=\"headline\">{}</p>{}</div></header>",
                     verdictClass(verdict) + (badge.size() > 8 ? " long" : ""), esc(badge),
                     esc(title(r)), esc(sub), esc(headline(r)), reproduce);
}

/// The violations grouped by kind, invariant and key: the first diagnosis of each group and the runs
/// that show it (linked to their counterexample).
std::string diagnosis(const json& r, const Anchors& anchors) {
  const json& v = arr(r, "violations");
  // A comparison shows its matrix instead; a single run with a history shows the diagnosis in its section.
  if (v.empty() || str(r, "command") == "compare" || str(r, "command") == "demo") return "";
  if (arr(r, "runs").size() == 1 && arr(r, "runs")[0].contains("history")) return "";
  std::vector<std::string> order;
  std::map<std::string, std::vector<const json*>> groups;
  for (const auto& x : v) {
    std::string key = str(x, "kind") + "\n" + str(x, "invariant") + (str(x, "key").empty() ? "" : " " + str(x, "key"));
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&x);
  }
  std::string out = "<section><h2>Diagnosis</h2><ul class=\"diag\">";
  for (const auto& key : order) {
    const auto& list = groups[key];
    std::string runs;
    for (size_t i = 0; i < list.size() && i < 40; ++i)
      runs += (runs.empty() ? "" : ", ") + linkTo(anchors, str(*list[i], "run"), str(*list[i], "run"));
    if (list.size() > 40) runs += fmt::format(", … {} more", list.size() - 40);
    out += fmt::format("<li><span class=\"kind\">{}</span> <b>{}</b> · {} run{}: {}<div class=\"msg\">{}{}</div></li>",
                       esc(key.substr(0, key.find('\n'))), esc(key.substr(key.find('\n') + 1)), list.size(),
                       list.size() == 1 ? "" : "s", runs, list.size() > 1 ? "e.g. " : "", esc(str(*list.front(), "message")));
  }
  return out + "</ul></section>";
}

std::string demoSections(const json& demo, const Anchors& anchors, std::map<std::string, std::string>& runsOf) {
  std::string out = "<section><h2>Summary</h2><table class=\"summary\"><tr><th>scenario</th><th>target</th><th>verdict</th>"
                    "<th>first counterexample</th><th>documented behaviour</th></tr>";
  for (const auto& s : arr(demo, "sections"))
    for (const auto& t : arr(s, "targets")) {
      std::string verdict = str(t, "verdict"), kinds;
      for (const auto& k : arr(t, "kinds")) kinds += (kinds.empty() ? "" : ", ") + show(k);
      std::string example;
      if (!str(t, "diagnosis").empty())
        example = fmt::format("<b>{}</b> {}<div class=\"msg\">{}</div>", esc(str(t, "example_title")),
                              linkTo(anchors, str(t, "example"), "timeline ↓"), esc(str(t, "diagnosis")));
      bool ok = t.value("as_expected", true);
      // A target run under each sink policy has a row per policy.
      const std::string policy = str(t, "sink_policy").empty() ? ""
                                 : " <span class=\"policy\">sink policy " + esc(str(t, "sink_policy")) + "</span>";
      out += fmt::format("<tr><td>{}</td><td><b>{}</b>{}</td><td class=\"cell {}\">{}</td><td class=\"example\">{}</td>"
                         "<td class=\"{}\">{} {}</td></tr>",
                         esc(str(s, "scenario")), esc(str(t, "name")), policy, verdictClass(verdict),
                         esc(verdict + (kinds.empty() ? "" : ": " + kinds)), example, ok ? "ok" : "notok", ok ? "✓" : "✗",
                         esc(str(t, "expected")));
    }
  out += "</table></section>";
  for (const auto& s : arr(demo, "sections"))
    out += fmt::format("<section><h2>{}</h2><p class=\"desc\">{}</p>{}</section>{}", esc(str(s, "scenario")),
                       esc(str(s, "description")), compareMatrix(compareOf(s), anchors), runsOf[str(s, "scenario")]);
  return out;
}

/// Rows of a command's own section (check, replay): scalars, lists of scalars, and the members of
/// objects one level down ("counterexample.replay_command").
std::string facts(const std::string& name, const json& v, int depth) {
  if (v.is_object()) {
    std::string out;
    if (depth == 0)
      for (const auto& [k, x] : v.items()) out += facts(name + "." + k, x, depth + 1);
    return out;
  }
  std::string text;
  if (v.is_array()) {
    for (const auto& x : v) {
      if (x.is_structured()) return "";
      text += (text.empty() ? "" : "; ") + show(x);
    }
  } else {
    text = show(v);
  }
  if (text.empty()) return "";
  return fmt::format("<tr><th>{}</th><td>{}</td></tr>", esc(name), esc(cut(text, 400)));
}

std::string body(const json& r, const Anchors& anchors, std::map<std::string, std::string>& runsOf) {
  std::string command = str(r, "command"), out = diagnosis(r, anchors);
  if (command == "sweep") {
    const SweepSection sweep = r.at("sweep").get<SweepSection>();
    out += sweep.interleave ? "<section><h2>Interleavings</h2>" + interleaveGrid(*sweep.interleave, anchors) + "</section>"
                            : "<section><h2>Kill points</h2>" + sweepGrid(sweep, anchors) + "</section>";
  }
  if (command == "compare") out += "<section><h2>Matrix</h2>" + compareMatrix(compareOf(r), anchors) + "</section>";
  if (command == "demo") out += demoSections(arr(r, "demo"), anchors, runsOf);
  if (command == "check") out += searchRuns(arr(r, "check"), anchors);
  return out;
}

} // namespace

} // namespace idem::html

namespace idem {

std::string renderHtml(const nlohmann::json& r, const std::map<std::string, std::string>& logTails) {
  using namespace html; // html's functions and this file's above, in this function only
  Anchors anchors = anchorsOf(r);
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  out += fmt::format("<title>idemproof {}: {} — {}</title><style>{}</style></head><body><main>", esc(str(r, "command")),
                     esc(str(r, "verdict")), esc(title(r)), css());
  // Counterexamples: after the section of their scenario in the demo, else all together.
  const json& runs = arr(r, "runs");
  std::map<std::string, std::string> byScenario;
  bool demo = str(r, "command") == "demo";
  std::set<std::string> shown; // scenario and kinds of the runs shown open
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].contains("history")) continue;
    std::string scenario = demo ? str(runs[i], "scenario") : "", kinds;
    for (const auto& v : arr(runs[i], "violations")) kinds += str(v, "kind") + ",";
    std::string section = runSection(runs[i], fmt::format("run-{}", i), logTails);
    // The first counterexample of each kind of failure is open; the others are folded.
    if (!shown.insert(scenario + "\n" + str(runs[i], "target") + "\n" + kinds).second) {
      const json& v = arr(runs[i], "violations");
      std::string first = v.empty() ? str(runs[i], "error") : str(v[0], "message");
      section = fmt::format("<details class=\"more\"><summary><span class=\"pill {}\">{}</span> {} · {} — {}</summary>"
                            "{}</details>",
                            verdictClass(str(runs[i], "verdict")), esc(str(runs[i], "verdict")), esc(str(runs[i], "target")),
                            esc(str(runs[i], "title", str(runs[i], "id"))), esc(cut(first, 140)), section);
    }
    byScenario[scenario] += section;
  }
  out += header(r) + body(r, anchors, byScenario);
  bool single = runs.size() == 1;
  if (!byScenario[""].empty()) out += (single ? "" : "<h2 class=\"runs\">Counterexamples</h2>") + byScenario[""];
  if (single && !runs[0].contains("history"))
    out += "<section><h2>Checks</h2>" + checksTable(runs[0]) + "</section>";
  for (const char* extra : {"check", "replay", "merge"}) { // the command's own numbers, after what they found
    const json& x = arr(r, extra);
    if (x.empty()) continue;
    out += fmt::format("<section><details><summary>{} in numbers</summary><table class=\"facts\">", extra);
    for (const auto& [k, v] : x.items()) out += facts(k, v, 0);
    out += "</table></details></section>";
  }
  out += fmt::format("<footer>Written by idemproof from <a href=\"report.json\">report.json</a> (schema version {}, "
                     "documented in docs/report.md); process logs are under <a href=\"logs/\">logs/</a>.</footer>",
                     num(r, "schema_version"));
  return out + "</main></body></html>\n";
}

std::string pageLogLines(const std::string& path, size_t lines, size_t maxBytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.size() > maxBytes) text = text.substr(text.size() - maxBytes);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  size_t pos = text.size(), n = 0;
  while (pos > 0 && n < lines) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) {
      pos = 0;
      break;
    }
    ++n;
  }
  return n < lines || pos == 0 ? text : text.substr(pos + 1);
}

} // namespace idem
