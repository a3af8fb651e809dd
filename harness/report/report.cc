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
                       {"text", exit->text() + (exit->by == "harness" ? " (stopped by idemproof)" : "")}};
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
