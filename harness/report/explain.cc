#include "report/explain.h"
#include "report/report_file.h"

#include "core/error.h"
#include "core/json_file.h"

#include <fmt/format.h>

namespace idem {

namespace {

using json = nlohmann::json;

std::string text(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

/// One op of a history, for a person: "#22 c1 SET#3  SET seen:… 1 NX (killed-after)".
std::string opLine(const json& history, const json& index) {
  if (!index.is_number_integer() || !history.is_array()) return "";
  const auto i = index.get<int64_t>();
  if (i < 0 || static_cast<size_t>(i) >= history.size()) return fmt::format("#{}", i);
  const json& op = history[static_cast<size_t>(i)];
  const json value = op.value("value", json::object());
  const std::string type = text(op, "type");
  std::string what;
  if (type == "step") {
    what = fmt::format("{}#{}", text(value, "verb"), value.value("k", 0));
    std::string detail = text(value, "detail");
    if (detail.size() > 100) detail = detail.substr(0, 97) + "...";
    if (!detail.empty()) what += "  " + detail;
    const std::string outcome = text(value, "outcome");
    if (!outcome.empty() && outcome != "ok") what += " (" + outcome + ")";
  } else if (type == "fault") {
    what = "fault " + text(value, "fault");
  } else if (type == "send") {
    what = fmt::format("send event {} as entry {}", value.value("n", 0), text(value, "entry"));
  } else if (type == "request") {
    what = fmt::format("request r{} key {} payload {}", value.value("id", 0), value.value("key", 0), value.value("body", 0));
  } else if (type == "response") {
    what = fmt::format("answer to r{}: {} {}", value.value("id", 0), text(value, "outcome"), value.value("status", 0));
  } else {
    what = type;
  }
  return fmt::format("#{} {} {}", i, text(op, "process"), what);
}

} // namespace

std::string explainReport(const json& report) {
  std::string out;
  for (const auto& run : report.value("runs", json::array())) {
    if (text(run, "verdict") != "fail") continue;
    const json history = run.value("history", json::array());
    const std::string scenario = text(run, "scenario").empty() ? text(report, "scenario") : text(run, "scenario");
    out += fmt::format("{}{}{}: fail\n", text(run, "target").empty() ? text(report, "target") : text(run, "target"), scenario.empty() ? "" : " × " + scenario,
                       text(run, "id").empty() ? "" : " · " + text(run, "id"));
    for (const auto& v : run.value("violations", json::array())) {
      out += fmt::format("  {}: {}\n", text(v, "kind"), text(v, "message"));
      auto p = v.find("pattern");
      if (p == v.end() || !p->is_object()) {
        out += "    anti-pattern: no known pattern\n";
        continue;
      }
      out += fmt::format("    anti-pattern: {} ({})\n", text(*p, "name"), text(*p, "id"));
      out += fmt::format("    why: {}\n", text(*p, "explanation"));
      if (history.is_array() && !history.empty()) {
        out += "    steps:\n";
        for (const auto& i : p->value("ops", json::array())) out += "      " + opLine(history, i) + "\n";
      }
      out += fmt::format("    fix: {}\n", text(*p, "fix"));
    }
  }
  if (out.empty()) out = fmt::format("no failing run in this report (verdict {})\n", text(report, "verdict"));
  return out;
}

json readReportForExplain(const std::filesystem::path& path) {
  const std::filesystem::path file = reportFileOf(path);
  json report = readJsonFile(file, file.string(), uintmax_t{256} << 20);
  if (!report.is_object() || !report.contains("runs") || !report["runs"].is_array())
    throw UsageError(fmt::format("{}: not an idemproof report (no \"runs\")", file.string()));
  return report;
}

} // namespace idem
