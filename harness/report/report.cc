#include "report/report.h"

#include <filesystem>
#include <fstream>

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
        out.push_back(std::move(j));
      }
    }
  }
  return out;
}

std::string writeReport(const std::string& dir, const nlohmann::json& report) {
  std::filesystem::create_directories(dir);
  auto path = std::filesystem::path(dir) / "report.json";
  std::ofstream out(path);
  out << report.dump(2) << "\n";
  return path.string();
}

} // namespace idem
