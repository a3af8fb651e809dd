#include "driver/session.h"

#include "core/error.h"

#include <fmt/format.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace idem {

namespace fs = std::filesystem;

std::string verdictWord(const Judged& j) {
  if (!j.error.empty()) return "error";
  switch (j.verdict) {
  case Verdict::Valid: return "pass";
  case Verdict::Invalid: return "fail";
  default: return "unknown";
  }
}

fs::path scenariosDir() {
  if (const char* env = std::getenv("IDEMPROOF_SCENARIOS")) return env;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path dir = exe.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
      if (fs::exists(dir / "scenarios" / "wallet.json")) return dir / "scenarios";
    }
  }
  return fs::current_path() / "scenarios";
}

Session::Session(const CommonArgs& args) : args_(args) {
  if (args_.targets.empty()) throw UsageError("--target: required");
  for (const auto& t : args_.targets) targets_.push_back(loadTarget(t));
  scenario_ = loadScenario(args_.scenario, scenariosDir());
  for (const auto& t : targets_) {
    if (!t.implements(scenario_.name)) {
      std::string list;
      for (const auto& s : t.scenarios) list += (list.empty() ? "" : ", ") + s;
      throw UsageError(fmt::format("--scenario: target '{}' ({}) does not implement scenario '{}' (it lists: {})",
                                   t.name, t.manifest.string(), scenario_.name, list));
    }
  }
  if (args_.databaseUrl.empty() != args_.valkeyUrl.empty())
    throw UsageError(args_.databaseUrl.empty() ? "--database-url: required with --valkey-url"
                                               : "--valkey-url: required with --database-url");
  if (args_.databaseUrl.empty()) embedded_ = EmbeddedServers::start();
  else external_ = externalEndpoints(args_.databaseUrl, args_.valkeyUrl);
  temp_ = std::make_unique<TempDir>("idemproof-logs");
}

Session::~Session() = default;

const ServerEndpoints& Session::servers() const { return embedded_ ? embedded_->endpoints() : external_; }

fs::path Session::reportDir() const {
  return args_.reportDir.empty() ? fs::current_path() / "reports" / "latest" : fs::path(args_.reportDir);
}

int Session::workers() const {
  if (args_.workers > 0) return args_.workers;
  if (!servers().embedded) return 1;
  unsigned n = std::thread::hardware_concurrency();
  return static_cast<int>(std::max(1u, std::min(2u, n)));
}

std::unique_ptr<Workspace> Session::workspace(const Target& t, int w) {
  int id = nextWorkspace_++;
  fs::path logs = temp_->path() / fmt::format("w{}", id);
  fs::create_directories(logs);
  return std::make_unique<Workspace>(servers(), scenario_, t, id, args_.run, logs);
}

Judged Session::judge(Workspace& ws, const Scenario& sc, const Schedule& s, bool keepLogs) {
  Judged j;
  j.schedule = s;
  j.history = ws.execute(s);
  auto ops = j.history.ops();
  for (const auto& [op, e] : recordsOf<ops::Error>(ops)) j.error = e->message;
  if (j.error.empty()) {
    j.results = checkAll(sc, ops);
    j.verdict = merge(j.results);
  }
  if (keepLogs || !j.error.empty() || j.verdict != Verdict::Valid) {
    for (const auto& [op, spawn] : recordsOf<ops::Spawn>(ops)) {
      std::ifstream in(spawn->log, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      std::string text = ss.str();
      constexpr size_t kMax = 256 * 1024;
      if (text.size() > kMax) text = "[... " + std::to_string(text.size() - kMax) + " bytes cut ...]\n" + text.substr(text.size() - kMax);
      j.logs[op->process] = std::move(text);
    }
  }
  return j;
}

std::vector<Judged> Session::judgeAll(const Target& t, const std::vector<Schedule>& schedules,
                                      const std::function<void(size_t)>& progress) {
  std::vector<Judged> out(schedules.size());
  int n = std::max(1, std::min<int>(workers(), static_cast<int>(schedules.size())));
  std::vector<std::unique_ptr<Workspace>> spaces;
  for (int w = 0; w < n; ++w) spaces.push_back(workspace(t, w));
  std::atomic<size_t> next{0}, done{0};
  std::mutex mu;
  std::exception_ptr failure;
  auto work = [&](Workspace& ws) {
    try {
      for (size_t i; (i = next++) < schedules.size();) {
        out[i] = judge(ws, scenario_, schedules[i]);
        size_t d = ++done;
        if (progress) {
          std::lock_guard<std::mutex> lock(mu);
          progress(d);
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!failure) failure = std::current_exception();
      next = schedules.size();
    }
  };
  std::vector<std::thread> threads;
  for (int w = 1; w < n; ++w) threads.emplace_back(work, std::ref(*spaces[w]));
  work(*spaces[0]);
  for (auto& th : threads) th.join();
  if (failure) std::rethrow_exception(failure);
  return out;
}

std::map<std::string, std::string> Session::writeLogs(const Judged& j, const std::string& prefix) {
  std::map<std::string, std::string> paths;
  fs::path rel = fs::path("logs") / prefix;
  fs::create_directories(reportDir() / rel);
  for (const auto& [label, text] : j.logs) {
    fs::path p = rel / (label + ".log");
    std::ofstream(reportDir() / p, std::ios::binary) << text;
    paths[label] = p.string();
  }
  return paths;
}

} // namespace idem
