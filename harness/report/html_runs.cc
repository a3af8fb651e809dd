/// The section of one run that has a history (a counterexample, or the run of `idemproof run`): its
/// diagnosis first, then the timeline, the processes with their exits and the last lines of their logs,
/// and the checks.
#include "report/html_util.h"

#include "plan/client_op.h"

#include <fmt/format.h>

#include <set>

namespace idem::html {

namespace {

/// "5 events, 1 retry, kill after:SET#3" (HTTP: "3 requests: send 1, burst 4 of 1, send key 1 body 2, no
/// kill") from a schedule's JSON.
std::string scheduleSummary(const json& s) {
  std::string kills;
  for (const char* key : {"faults", "kills"}) // "kills": schedules of version 1
    for (const auto& k : arr(s, key)) kills += (kills.empty() ? "" : ", ") + show(k);
  const std::string faults = kills.empty() ? ", no fault" : ", faults " + kills;
  if (!arr(s, "client").empty()) {
    std::string reqs;
    for (const auto& c : arr(s, "client")) {
      try {
        reqs += (reqs.empty() ? "" : ", ") + clientOpFromJson(c, "schedule", "client").str();
      } catch (const std::exception&) {
        reqs += (reqs.empty() ? "" : ", ") + std::string("?");
      }
    }
    size_t n = arr(s, "client").size();
    return fmt::format("{} request{}: {}{}", n, n == 1 ? "" : "s", reqs, faults);
  }
  std::set<int64_t> events;
  size_t entries = 0;
  for (const auto& e : arr(s, "stream")) {
    events.insert(num(e, "event"));
    ++entries;
  }
  size_t retries = entries - events.size();
  size_t n = arr(s, "events").size();
  return fmt::format("{} event{}, {} {}{}", n, n == 1 ? "" : "s", retries, retries == 1 ? "retry" : "retries", faults);
}

std::string violationItem(const json& v) {
  std::string where = str(v, "invariant");
  if (!str(v, "key").empty()) where += " " + str(v, "key");
  std::string values;
  if (!v.value("expected", json()).is_null() || !v.value("observed", json()).is_null())
    values = fmt::format(": expected <code>{}</code>, observed <code>{}</code>", esc(cut(show(v.value("expected", json())), 80)),
                         esc(cut(show(v.value("observed", json())), 80)));
  return fmt::format("<li><span class=\"kind\">{}</span> <b>{}</b>{}<div class=\"msg\">{}</div></li>", esc(str(v, "kind")),
                     esc(where), values, esc(str(v, "message")));
}

/// Above a failing run's timeline: the anti-pattern of each violation (its name, the steps, the fix), each
/// told once, or "no known pattern" when none was recognised.
std::string patternBlock(const json& run) {
  if (str(run, "verdict") != "fail" || arr(run, "violations").empty()) return "";
  std::string out;
  std::set<std::string> told;
  for (const auto& v : arr(run, "violations")) {
    const json& p = arr(v, "pattern");
    if (!p.is_object() || !told.insert(str(p, "id")).second) continue;
    out += fmt::format("<div class=\"pattern\"><b>{}</b><div class=\"msg\">{}</div><div class=\"fix\">fix: {}</div></div>",
                       esc(str(p, "name")), esc(str(p, "explanation")), esc(str(p, "fix")));
  }
  if (out.empty()) out = "<div class=\"pattern none\">no known pattern</div>";
  return out;
}

std::string processRows(const json& run, const std::map<std::string, std::string>& logTails) {
  std::string out = "<table class=\"procs\"><tr><th>process</th><th>pid</th><th>started</th><th>killed at</th>"
                    "<th>exit</th><th>log</th></tr>";
  for (const auto& p : arr(run, "processes")) {
    std::string log = str(p, "log"), href = safeHref(log);
    std::string logCell = log.empty() ? "" : href.empty() ? esc(log) : fmt::format("<a href=\"{}\">{}</a>", esc(href), esc(log));
    const json& exit = arr(p, "exit");
    out += fmt::format("<tr><td><b>{}</b></td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td><td>{}</td></tr>",
                       esc(str(p, "name")), num(p, "pid"), esc(str(p, "restart")), str(p, "killed_at").empty() ? "" : "killcell",
                       esc(str(p, "killed_at")), esc(str(exit, "text")), logCell);
    auto tail = logTails.find(log);
    if (tail != logTails.end() && tail->second.empty()) logCell += " (empty)";
    if (tail != logTails.end() && !tail->second.empty())
      out += fmt::format("<tr class=\"tail\"><td colspan=\"6\"><details><summary>last lines of {}</summary>"
                         "<pre class=\"log\">{}</pre></details></td></tr>",
                         esc(str(p, "name")), esc(tail->second));
  }
  return out + "</table>";
}

/// A hold fault fired in the run (its timeline then has hold marks to explain).
bool hasHold(const json& run) {
  for (const auto& op : arr(run, "history"))
    if (str(op, "type") == "fault" && str(arr(op, "value"), "fault").rfind("hold:", 0) == 0) return true;
  return false;
}

} // namespace

std::string checksTable(const json& run) {
  std::string out = "<table class=\"checks\"><tr><th>checker</th><th>verdict</th><th>violations</th><th>why unknown</th>"
                    "<th>notes</th></tr>";
  for (const auto& c : arr(run, "checks")) {
    std::string verdict = str(c, "verdict");
    std::string word = verdict == "valid" ? "pass" : verdict == "invalid" ? "fail" : "unknown";
    std::string notes;
    for (const auto& n : arr(c, "notes")) notes += (notes.empty() ? "" : "<br>") + esc(n.is_string() ? n.get<std::string>() : "");
    out += fmt::format("<tr><td>{}</td><td><span class=\"pill {}\">{}</span></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                       esc(str(c, "checker")), verdictClass(word), esc(verdict), arr(c, "violations").size(),
                       esc(str(c, "error")), notes);
  }
  return out + "</table>";
}

std::string runSection(const json& run, const std::string& anchor, const std::map<std::string, std::string>& logTails) {
  std::string verdict = str(run, "verdict");
  std::string title = str(run, "title", str(run, "id"));
  std::string scenario = str(run, "scenario");
  std::string out = fmt::format("<article class=\"run {}\" id=\"{}\"><h3><span class=\"pill {}\">{}</span> {}{} <small>{}</small></h3>",
                                verdictClass(verdict), esc(anchor), verdictClass(verdict), esc(verdict),
                                esc(str(run, "target")) + (scenario.empty() ? "" : " × " + esc(scenario)),
                                title.empty() ? "" : " · " + esc(title), esc(scheduleSummary(arr(run, "schedule"))));
  if (!str(run, "error").empty()) out += fmt::format("<p class=\"error\">error: {}</p>", esc(str(run, "error")));
  const json& violations = arr(run, "violations");
  if (!violations.empty()) {
    out += "<ul class=\"diag\">";
    for (const auto& v : violations) out += violationItem(v);
    out += "</ul>";
  }
  out += patternBlock(run);
  out += "<div class=\"scroll\">" + timeline(run) + "</div>";
  const bool http = run.contains("schedule") && run["schedule"].is_object() && !arr(run["schedule"], "client").empty();
  out += std::string("<p class=\"legend\"><span class=\"k producer\">■</span> ") +
         (http ? "the client's requests (r1, r2, …) and the answers (←) &nbsp; " : "producer sends &nbsp; <span class=\"k valkey\">■</span> Valkey step &nbsp; ") +
         "<span class=\"k pg\">■</span> PostgreSQL step &nbsp; <span class=\"k kill\">✕</span> SIGKILL "
         "&nbsp; <span class=\"k hot\">▬</span> the violation's events and ops &nbsp; " +
         (http ? "" : "e3′ = a retry of event 3. ") +
         std::string(hasHold(run) ? "<span class=\"k hold\">‖</span> a hold fired, its process held (orange bar) until "
                                    "<span class=\"k release\">▶</span> its release. "
                                  : "") +
         "Rows are in history order; the time is since the run started.</p>";
  out += "<details open><summary>Processes and logs</summary>" + processRows(run, logTails) + "</details>";
  out += "<details><summary>Checks</summary>" + checksTable(run) + "</details>";
  return out + "</article>";
}

} // namespace idem::html
