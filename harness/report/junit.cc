#include "report/junit.h"

#include "report/compare_section.h"
#include "report/html_util.h"
#include "report/sweep_section.h"

#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

// This file's own functions are html's: they use its functions unqualified, with no using-directive that
// a unity batch would carry into the files after this one.
namespace idem::html {

namespace {

struct Case {
  Case(std::string cls, std::string n) : classname(std::move(cls)), name(std::move(n)) {}
  /// Adds one violation line; the first one is the message.
  void failure(const std::string& line, const std::string& kind) {
    if (outcome != "failure") {
      outcome = "failure";
      type.clear();
      message = line;
    }
    text += line + "\n";
    if (("," + type + ",").find("," + kind + ",") == std::string::npos) type += (type.empty() ? "" : ",") + kind;
  }
  void error(const std::string& t, const std::string& m) {
    outcome = "error";
    type = t;
    message = m;
  }
  std::string classname, name;
  std::string outcome = "pass"; ///< pass | failure | error
  std::string type, message, text;
  double seconds = -1;
};

struct Suite {
  std::string name;
  std::vector<Case> cases;
};

/// "effect without dedup: " for a violation its anti-pattern names, else "": a failure message starts with it.
std::string patternPrefix(const json& v) {
  const json& p = arr(v, "pattern");
  return p.is_object() && !str(p, "name").empty() ? str(p, "name") + ": " : "";
}

/// The top-level violations of `run`, as a failure message (the first diagnosis) and text (all of them).
void fail(Case& c, const json& report, const std::string& run) {
  for (const auto& v : arr(report, "violations")) {
    if (str(v, "run") != run) continue;
    c.failure(fmt::format("{}{}: {}{}: {}", patternPrefix(v), str(v, "kind"), str(v, "invariant"),
                          str(v, "key").empty() ? "" : " " + str(v, "key"), str(v, "message")),
              str(v, "kind"));
  }
  if (c.outcome != "failure") c.failure("violated (run " + run + ")", "violation");
}

void judge(Case& c, const json& report, const std::string& verdict, const std::string& run, const std::string& why) {
  if (verdict == "fail") fail(c, report, run);
  else if (verdict != "pass") c.error(verdict, verdict + (why.empty() ? "" : ": " + why));
}

Suite sweepSuite(const json& r) {
  Suite s{fmt::format("idemproof sweep {} × {}", str(r, "target"), str(r, "scenario")), {}};
  std::string cls = fmt::format("idemproof.sweep.{}.{}", str(r, "target"), str(r, "scenario"));
  for (const auto& run : arr(r, "runs")) {
    if (str(run, "id") != "baseline") continue;
    Case c(cls, "baseline (no kill)");
    judge(c, r, str(run, "verdict"), "baseline", str(run, "error"));
    s.cases.push_back(c);
  }
  const SweepSection sweep = r.at("sweep").get<SweepSection>();
  if (sweep.interleave)
    for (const auto& row : sweep.interleave->rows)
      for (const auto& p : row.cells) {
        Case c(cls, p.point);
        judge(c, r, p.fired ? toString(p.verdict) : "unknown", p.point, p.fired ? "" : "the hold never fired");
        s.cases.push_back(c);
      }
  for (const auto& p : sweep.points) {
    Case c(cls, p.point);
    judge(c, r, p.fired ? toString(p.verdict) : "unknown", p.point, p.fired ? "" : "the kill point never fired");
    s.cases.push_back(c);
  }
  return s;
}

Suite compareSuite(const json& r, const json& owner, const std::string& scenario, const std::string& command) {
  Suite s{fmt::format("idemproof {} {}", command, scenario), {}};
  const CompareSection compare = owner.at("compare").get<CompareSection>();
  std::map<std::string, std::string> labels;
  for (const auto& c : compare.classes) labels[c.id] = c.label;
  for (const auto& cell : compare.cells) {
    if (cell.verdict == Verdict::NotApplicable) continue;
    // A column under a sink policy is a class of its own: idemproof.compare.payments.sink-keyed.ignore
    Case c(fmt::format("idemproof.{}.{}.{}{}", command, scenario, cell.target,
                       cell.sinkPolicy.empty() ? "" : "." + cell.sinkPolicy),
           labels[cell.cls]);
    judge(c, r, toString(cell.verdict), cell.example, fmt::format("{} of {} schedules unknown", cell.unknown, cell.schedules));
    s.cases.push_back(c);
  }
  return s;
}

/// One case per checker, across every run of the report.
Suite checkerSuite(const json& r) {
  Suite s{fmt::format("idemproof {} {} × {}", str(r, "command"), str(r, "target"), str(r, "scenario")), {}};
  std::string cls = fmt::format("idemproof.{}.{}.{}", str(r, "command"), str(r, "target"), str(r, "scenario"));
  std::map<std::string, size_t> index;
  for (const auto& run : arr(r, "runs")) {
    if (!str(run, "error").empty() && !index.count("run")) {
      index["run"] = s.cases.size();
      s.cases.emplace_back(cls, "run");
      s.cases.back().error("error", "error: " + str(run, "error"));
    }
    for (const auto& chk : arr(run, "checks")) {
      std::string name = str(chk, "checker");
      if (!index.count(name)) {
        index[name] = s.cases.size();
        s.cases.emplace_back(cls, name);
        s.cases.back().seconds = static_cast<double>(num(arr(run, "stats"), "duration_us")) / 1e6;
      }
      Case& c = s.cases[index[name]];
      std::string verdict = str(chk, "verdict");
      for (const auto& v : arr(chk, "violations")) {
        c.failure(fmt::format("{}[{}] {}: {}{}: {}", patternPrefix(v), str(run, "id"), str(v, "kind"), str(v, "invariant"),
                              str(v, "key").empty() ? "" : " " + str(v, "key"), str(v, "message")),
                  str(v, "kind"));
      }
      if (verdict == "unknown" && c.outcome == "pass") c.error("unknown", "unknown: " + str(chk, "error"));
    }
  }
  if (s.cases.empty()) { // no run kept (a check that passed): the report's verdict is the one testcase
    s.cases.emplace_back(cls, str(r, "command"));
    std::string verdict = str(r, "verdict");
    if (verdict != "pass") s.cases.back().error(verdict, verdict + (str(r, "error").empty() ? "" : ": " + str(r, "error")));
  }
  return s;
}

std::string caseXml(const Case& c) {
  std::string out = fmt::format("    <testcase classname=\"{}\" name=\"{}\"", esc(c.classname), esc(c.name));
  if (c.seconds >= 0) out += fmt::format(" time=\"{:.3f}\"", c.seconds);
  if (c.outcome == "pass") return out + "/>\n";
  return out + fmt::format(">\n      <{} type=\"{}\" message=\"{}\">{}</{}>\n    </testcase>\n", c.outcome, esc(c.type),
                           esc(cut(c.message, 1000)), esc(c.text.empty() ? c.message : c.text), c.outcome);
}

} // namespace

} // namespace idem::html

namespace idem {

std::string junitXml(const nlohmann::json& r) {
  using namespace html; // html's functions and this file's above, in this function only
  std::vector<Suite> suites;
  std::string command = str(r, "command");
  if (command == "sweep") suites.push_back(sweepSuite(r));
  else if (command == "compare") suites.push_back(compareSuite(r, r, str(r, "scenario"), command));
  else if (command == "demo")
    for (const auto& s : arr(arr(r, "demo"), "sections")) suites.push_back(compareSuite(r, s, str(s, "scenario"), command));
  else suites.push_back(checkerSuite(r));
  if (!str(r, "interrupted").empty() && !suites.empty()) { // what ran is not what was asked for: never all green
    Suite& s = suites.front();
    s.cases.emplace_back(fmt::format("idemproof.{}", command), "interrupted");
    const json& notes = arr(arr(r, command.c_str()), "notes");
    std::string why = notes.is_array() && !notes.empty() && notes[0].is_string() ? notes[0].get<std::string>()
                                                                                  : "interrupted by " + str(r, "interrupted");
    s.cases.back().error("interrupted", why);
  }
  size_t tests = 0, failures = 0, errors = 0;
  std::string body;
  for (const auto& s : suites) {
    size_t f = 0, e = 0;
    for (const auto& c : s.cases) {
      f += c.outcome == "failure";
      e += c.outcome == "error";
    }
    tests += s.cases.size();
    failures += f;
    errors += e;
    body += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\">\n", esc(s.name),
                        s.cases.size(), f, e);
    for (const auto& c : s.cases) body += caseXml(c);
    body += "  </testsuite>\n";
  }
  return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"idemproof {}\" tests=\"{}\" failures=\"{}\" "
                     "errors=\"{}\" time=\"{:.3f}\">\n{}</testsuites>\n",
                     esc(command), tests, failures, errors, static_cast<double>(num(arr(r, "timings"), "total_ms")) / 1000.0, body);
}

void writeJunit(const std::string& file, const nlohmann::json& report) {
  std::filesystem::path p(file);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p);
  if (!out) throw UsageError(fmt::format("--junit: cannot write {}: {}", file, std::strerror(errno)));
  out << junitXml(report);
  out.close(); // a full disk or /dev/full fails here, at the flush: the file the user asked for is not there
  if (out.fail()) throw UsageError(fmt::format("--junit: cannot write {}: {}", file, std::strerror(errno)));
}

} // namespace idem
