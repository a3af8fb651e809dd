#include "report/report.h"

#include "report/html.h"

#include <filesystem>
#include <fstream>
#include <iostream>

namespace idem {

nlohmann::json processesOf(const std::vector<Op>& history, const std::map<std::string, std::string>& logs) {
  auto out = nlohmann::json::array();
  std::map<std::string, size_t> index;
  for (const auto& op : history) {
    if (op.type == "spawn") {
      index[op.process] = out.size();
      auto it = logs.find(op.process);
      out.push_back({{"name", op.process},
                     {"consumer", op.value.value("consumer", op.process)},
                     {"pid", op.value.value("pid", 0)},
                     {"restart", op.value.value("restart", "")},
                     {"exit", nullptr},
                     {"log", it == logs.end() ? nlohmann::json(nullptr) : nlohmann::json(it->second)}});
    } else if (op.type == "exit" && index.count(op.process)) {
      auto& p = out[index[op.process]];
      nlohmann::json e = op.value;
      std::string by = e.value("by", "");
      if (e.contains("signal")) e["text"] = "signal " + std::to_string(e["signal"].get<int>());
      else e["text"] = "exit " + std::to_string(e.value("status", -1));
      e["text"] = e["text"].get<std::string>() + (by == "harness" ? " (stopped by idemproof)" : "");
      p["exit"] = e;
    } else if (op.type == "kill" && index.count(op.process)) {
      out[index[op.process]]["killed_at"] = op.value.value("point", "");
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
  j["verdict"] = r.verdict;
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
    steps += op.type == "step";
    kills += op.type == "kill";
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

std::string writeReport(const std::string& dir, const nlohmann::json& report) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  auto path = fs::path(dir) / "report.json";
  {
    std::ofstream out(path);
    out << report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  try {
    std::map<std::string, std::string> tails;
    if (report.contains("runs") && report["runs"].is_array()) {
      for (const auto& run : report["runs"]) {
        if (!run.is_object() || !run.contains("history") || !run.contains("processes")) continue;
        for (const auto& p : run["processes"]) {
          if (!p.is_object() || !p.contains("log") || !p["log"].is_string()) continue;
          std::string log = p["log"];
          if (!tails.count(log)) tails[log] = logTail((fs::path(dir) / log).string());
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
    if (op.type == "send") ++c.entries;
    if (op.type == "spawn" && first < 0) first = op.time_us;
    if (op.type != "step") continue;
    if (op.value.value("outcome", "") != "cut") ++c.steps; // a read still in flight at the end is no round trip
    if (op.value.contains("acked") && op.value.value("outcome", "") == "ok") last = op.time_us;
  }
  if (first >= 0 && last > first) c.wall_us = last - first;
  return c;
}

} // namespace idem
