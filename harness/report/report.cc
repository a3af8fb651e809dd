#include "report/report.h"

#include "report/html.h"

#include "core/error.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace idem {

nlohmann::json processesOf(const std::vector<Op>& history, const std::map<std::string, std::string>& logs) {
  auto out = nlohmann::json::array();
  std::map<std::string, size_t> index;
  for (const auto& op : history) {
    if (const auto* spawn = op.as<ops::Spawn>()) {
      index[op.process] = out.size();
      auto it = logs.find(op.process);
      out.push_back({{"name", op.process},
                     {"consumer", spawn->consumer.empty() ? op.process : spawn->consumer},
                     {"pid", spawn->pid},
                     {"restart", spawn->restart},
                     {"exit", nullptr},
                     {"log", it == logs.end() ? nlohmann::json(nullptr) : nlohmann::json(it->second)}});
    } else if (const auto* exit = op.as<ops::Exit>(); exit && index.count(op.process)) {
      nlohmann::json e{{"by", exit->by},
                       {"text", exit->text() + (exit->by == "harness"      ? " (stopped by idemproof)"
                                                : exit->by == "port-taken" ? " (its PORT was another process's)"
                                                                           : "")}};
      if (exit->signal) e["signal"] = *exit->signal;
      else e["status"] = exit->status.value_or(-1);
      if (exit->ignoredSigterm) e["ignored_sigterm"] = true;
      out[index[op.process]]["exit"] = e;
    } else if (const auto* f = op.as<ops::FaultOp>(); f && f->fault.isKill() && index.count(op.process)) {
      out[index[op.process]]["killed_at"] = f->fault.str();
    }
  }
  return out;
}

nlohmann::json runJson(const RunRecord& r) {
  nlohmann::json j;
  j["id"] = r.id;
  j["target"] = r.target;
  if (!r.scenario.empty()) j["scenario"] = r.scenario;
  if (!r.title.empty()) j["title"] = r.title;
  j["verdict"] = toString(r.verdict);
  if (!r.error.empty()) j["error"] = r.error;
  j["schedule"] = r.schedule;
  j["checks"] = r.results;
  auto v = nlohmann::json::array();
  for (const auto& c : r.results)
    for (const auto& x : c.violations) v.push_back(x);
  j["violations"] = v;
  j["processes"] = processesOf(r.history, r.logs);
  int64_t steps = 0, kills = 0;
  for (const auto& op : r.history) {
    steps += op.as<ops::Step>() != nullptr;
    const auto* f = op.as<ops::FaultOp>();
    kills += f && f->fault.isKill();
  }
  j["stats"] = {{"steps", steps}, {"kills", kills},
                {"duration_us", r.history.empty() ? 0 : r.history.back().time_us}};
  if (r.withHistory) j["history"] = r.history;
  return j;
}

nlohmann::json violationsOf(const std::vector<RunRecord>& runs) {
  auto out = nlohmann::json::array();
  for (const auto& r : runs) {
    for (const auto& c : r.results) {
      for (const auto& v : c.violations) {
        nlohmann::json j = v;
        j["run"] = r.id;
        j["target"] = r.target;
        if (!r.scenario.empty()) j["scenario"] = r.scenario;
        out.push_back(std::move(j));
      }
    }
  }
  return out;
}

namespace {

std::string dumped(const nlohmann::json& j) { return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace); }

/// `report` as dump(2) writes it, with each streamed array in place of its member, written item by item.
void writeStreamed(std::ostream& out, nlohmann::json report, const std::vector<StreamedArray>& streamed) {
  auto mark = [](size_t k) { return "\x01idemproof:streamed:" + std::to_string(k) + "\x01"; };
  for (size_t k = 0; k < streamed.size(); ++k) report[streamed[k].section][streamed[k].member] = mark(k);
  const std::string text = dumped(report);
  size_t from = 0;
  for (size_t k = 0; k < streamed.size(); ++k) {
    const std::string quoted = nlohmann::json(mark(k)).dump();
    const size_t at = text.find(quoted, from);
    const size_t line = text.rfind('\n', at) + 1;
    const std::string indent(text.find_first_not_of(' ', line) - line, ' '), pad = indent + "  ";
    out << text.substr(from, at - from);
    const auto& s = streamed[k];
    if (s.count == 0) out << "[]";
    else {
      out << "[\n";
      for (size_t i = 0; i < s.count; ++i) {
        out << pad;
        for (char c : dumped(s.item(i))) (c == '\n' ? out << c << pad : out << c);
        out << (i + 1 < s.count ? ",\n" : "\n");
      }
      out << indent << "]";
    }
    from = at + quoted.size();
  }
  out << text.substr(from);
}

} // namespace

std::string writeReport(const std::string& dir, const nlohmann::json& report, const std::vector<StreamedArray>& streamed) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  auto path = fs::path(dir) / "report.json";
  {
    std::ofstream out(path);
    if (streamed.empty()) out << dumped(report);
    else writeStreamed(out, report, streamed);
    out << "\n";
    out.close();
    if (out.fail()) throw UsageError(fmt::format("--report: cannot write {}: {}", path.string(), std::strerror(errno)));
  }
  try {
    std::map<std::string, std::string> tails;
    if (report.contains("runs") && report["runs"].is_array()) {
      for (const auto& run : report["runs"]) {
        if (!run.is_object() || !run.contains("history") || !run.contains("processes")) continue;
        for (const auto& p : run["processes"]) {
          if (!p.is_object() || !p.contains("log") || !p["log"].is_string()) continue;
          std::string log = p["log"];
          if (!tails.count(log)) tails[log] = pageLogLines((fs::path(dir) / log).string());
        }
      }
    }
    std::ofstream(fs::path(dir) / "report.html") << renderHtml(report, tails);
  } catch (const std::exception& e) {
    std::cerr << "idemproof: report.html not written: " << e.what() << "\n";
  }
  return path.string();
}

RunCost costOf(const std::vector<Op>& history) {
  RunCost c;
  int64_t first = -1, last = -1;
  for (const auto& op : history) {
    if (op.as<ops::Send>() || op.as<ops::Request>()) ++c.entries; // HTTP: a request is the message
    if (op.as<ops::Spawn>() && first < 0) first = op.time_us;
    if (op.as<ops::Response>()) last = op.time_us;
    const auto* step = op.as<ops::Step>();
    if (!step) continue;
    if (step->replied()) ++c.steps; // a read still in flight at the end is no round trip
    if (!step->acked.empty() && step->replied()) last = op.time_us;
  }
  if (first >= 0 && last > first) c.wall_us = last - first;
  return c;
}

} // namespace idem
