#include "driver/session.h"
#include "supervisor/broker_registry.h"

#include "core/error.h"
#include "core/owner.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <sys/stat.h>
#include <unistd.h>

namespace idem {

namespace fs = std::filesystem;

std::set<std::string> Judged::kinds() const {
  std::set<std::string> out;
  for (const auto& c : results)
    for (const auto& v : c.violations) out.insert(v.kind);
  return out;
}

std::string Judged::pattern() const {
  for (const auto& c : results)
    for (const auto& v : c.violations)
      if (v.pattern) return v.pattern->name;
  return "";
}

std::string logForReport(const fs::path& log, uintmax_t maxBytes) {
  std::error_code ec;
  uintmax_t size = fs::file_size(log, ec);
  if (ec) return "";
  std::ifstream in(log, std::ios::binary);
  std::string text;
  if (size > maxBytes) {
    in.seekg(static_cast<std::streamoff>(size - maxBytes));
    text = fmt::format("[... {} bytes cut ...]\n", size - maxBytes);
  }
  std::string tail(static_cast<size_t>(std::min(size, maxBytes)), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  tail.resize(static_cast<size_t>(in.gcount()));
  return text + tail;
}

fs::path scenariosDir() {
  if (const char* env = std::getenv("IDEMPROOF_SCENARIOS")) return env;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    // The source tree (build/idemproof: ../scenarios), or an installed prefix (bin/idemproof:
    // ../share/idemproof/scenarios).
    for (fs::path dir = exe.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
      if (fs::exists(dir / "scenarios" / "wallet.json")) return dir / "scenarios";
      if (fs::exists(dir / "share" / "idemproof" / "scenarios" / "wallet.json")) return dir / "share" / "idemproof" / "scenarios";
    }
  }
  return fs::current_path() / "scenarios";
}

void checkOutputs(const CommonArgs& a) {
  // Checked, not made: a command that refuses its input afterwards leaves no empty folder behind (the report
  // writer makes it). A folder of a name of its own is made in the nearest one that exists and taken back at
  // once: it proves the rest can be made, and takes away nothing another command (a demo's lane) just made.
  auto writableDir = [](const fs::path& dir, const std::string& flag) {
    static std::atomic<int> probes{0};
    std::error_code ec;
    const fs::path full = fs::absolute(dir, ec);
    fs::path existing = full;
    while (!fs::exists(existing, ec) && existing.has_parent_path() && existing != existing.parent_path())
      existing = existing.parent_path();
    if (!fs::is_directory(existing, ec))
      throw UsageError(existing == full ? fmt::format("{}: {} is not a folder", flag, dir.string())
                                        : fmt::format("{}: cannot create the folder {}: {} is not a folder", flag,
                                                      dir.string(), existing.string()));
    const fs::path probe = existing / fmt::format(".idemproof-probe-{}-{}", ::getpid(), probes++);
    if (::mkdir(probe.c_str(), 0700) != 0)
      throw UsageError(existing == full
                           ? fmt::format("{}: the folder {} is not writable: {}", flag, dir.string(), std::strerror(errno))
                           : fmt::format("{}: cannot create the folder {}: {}", flag, dir.string(), std::strerror(errno)));
    ::rmdir(probe.c_str());
  };
  if (a.reportDirGiven && a.reportDir.empty()) throw UsageError("--report: an empty path names no folder");
  writableDir(a.reportDir.empty() ? fs::current_path() / "reports" / "latest" : fs::path(a.reportDir), "--report");
  if (a.junitGiven && a.junit.empty()) throw UsageError("--junit: an empty path names no file");
  if (!a.junit.empty()) {
    fs::path file = fs::absolute(a.junit);
    std::error_code ec;
    if (fs::is_directory(file, ec)) throw UsageError(fmt::format("--junit: {} is a folder, not a file", file.string()));
    writableDir(file.parent_path(), "--junit");
    if (fs::exists(file, ec) && ::access(file.c_str(), W_OK) != 0)
      throw UsageError(fmt::format("--junit: {} is not writable: {}", file.string(), std::strerror(errno)));
  }
}

bool httpScenario(const std::string& nameOrFile) {
  try {
    return loadScenario(nameOrFile, scenariosDir()).http.has_value();
  } catch (const std::exception&) {
    return false;
  }
}

std::string defaultScenario(const std::vector<std::string>& targets) {
  std::vector<Target> loaded;
  try {
    for (const auto& t : targets) loaded.push_back(loadTarget(t));
  } catch (const std::exception&) {
    return "wallet";
  }
  if (loaded.empty()) return "wallet";
  for (const auto& name : loaded.front().scenarios)
    if (std::all_of(loaded.begin(), loaded.end(), [&](const Target& t) { return t.implements(name); })) return name;
  return "wallet";
}

bool sinkScenario(const std::string& nameOrFile) {
  try {
    return loadScenario(nameOrFile, scenariosDir()).sink.has_value();
  } catch (const std::exception&) {
    return false;
  }
}

Session::Session(const CommonArgs& args, const BeforeServers& check) : args_(args) {
  if (args_.targets.empty()) throw UsageError("--target: required");
  checkOutputs(args_);
  // What an idemproof killed with SIGKILL left behind (its folders, its servers, its consumers' children):
  // gone before this one starts its own (core/owner.h).
  reapOrphans();
  for (const auto& t : args_.targets) targets_.push_back(loadTarget(t));
  scenario_ = loadScenario(args_.scenario, scenariosDir());
  if (!args_.sinkPolicy.empty()) {
    if (!scenario_.sink)
      throw UsageError(fmt::format("--sink-policy: scenario '{}' has no sink (its consumers call no external API)",
                                   scenario_.name));
    scenario_.sink->honoursKeys = args_.sinkPolicy == "honour";
  }
  for (const auto& t : targets_) {
    if (!t.implements(scenario_.name)) {
      std::string list;
      for (const auto& s : t.scenarios) list += (list.empty() ? "" : ", ") + s;
      throw UsageError(fmt::format("--scenario: target '{}' ({}) does not implement scenario '{}' (it lists: {})",
                                   t.name, t.manifest.string(), scenario_.name, list));
    }
    // A consumer reads a stream and an HTTP target serves requests: the two can't stand in for each other.
    if (t.kind != scenario_.kind)
      throw UsageError(fmt::format("--scenario: scenario '{}' is of kind {} and target '{}' ({}) of kind {}",
                                   scenario_.name, scenario_.kind, t.name, t.manifest.string(), t.kind));
  }
  for (const auto& t : targets_)
    for (const auto& k : args_.faults) requireKindOnBroker(k, t, "--faults");
  if (check) check(scenario_, targets_);
  if (args_.databaseUrl.empty() != args_.valkeyUrl.empty())
    throw UsageError(args_.databaseUrl.empty() ? "--database-url: required with --valkey-url"
                                               : "--valkey-url: required with --database-url");
  ownServers_ = args_.ownServers || std::count(args_.faults.begin(), args_.faults.end(), "restart") > 0;
  if (ownServers_ && !args_.databaseUrl.empty())
    throw UsageError("--database-url: restart faults restart the servers, so they need the embedded ones (drop "
                     "--database-url and --valkey-url, or the restart faults)");
  for (const auto& [broker, url] : args_.brokerUrls) {
    const std::string flag = brokerUrlFlag(broker);
    checkBrokerUrl(broker, url);
    if (ownServers_)
      throw UsageError(fmt::format("{}: restart faults restart the servers, so they need the embedded ones (drop {} "
                                   "or the restart faults)", flag, flag));
    if (std::none_of(targets_.begin(), targets_.end(), [&](const Target& t) { return t.broker == broker; }))
      throw UsageError(fmt::format("{}: no target runs on {}", flag, broker));
  }
  if (args_.databaseUrl.empty()) embedded_ = EmbeddedServers::start();
  else external_ = externalEndpoints(args_.databaseUrl, args_.valkeyUrl);
  temp_ = std::make_unique<TempDir>("idemproof-logs");
}

Session::~Session() = default;

bool restartsServers(const std::vector<Fault>& faults) {
  return std::any_of(faults.begin(), faults.end(), [](const Fault& f) { return f.kind == "restart"; });
}

const ServerEndpoints& Session::servers() const { return embedded_ ? embedded_->endpoints() : external_; }

fs::path Session::reportDir() const {
  return args_.reportDir.empty() ? fs::current_path() / "reports" / "latest" : fs::path(args_.reportDir);
}

int Session::workers() const {
  if (args_.workers > 0) return args_.workers;
  if (!servers().embedded) return 1;
  // A worker per core, up to --workers' bound: one worker keeps about 1.3 cores busy (its consumer, that
  // consumer's PostgreSQL backend, the proxies, the judge: `check --workers 1` used 8.2 CPU seconds in
  // 6.2 s of wall time on a 2-core VM), so fewer would leave cores idle; and a worker more than the
  // machine can take costs nothing measurable (on 2 cores, 2 and 3 workers ran 6.9 and 7.0 schedules/s).
  unsigned n = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(n, 1u, 16u));
}

std::unique_ptr<Workspace> Session::workspace(const Target& t, int w) {
  std::lock_guard<std::mutex> lock(workspaceMu_);
  int id = nextWorkspace_++;
  fs::path logs = temp_->path() / fmt::format("w{}", id);
  fs::create_directories(logs);
  // The servers, and the brokers of the user's that take part.
  auto with = [this](ServerEndpoints ep) {
    ep.broker_urls = args_.brokerUrls;
    return ep;
  };
  if (!servers().embedded || (!ownServers_ && id == 0))
    return std::make_unique<Workspace>(with(servers()), scenario_, t, id, args_.run, logs);
  if (!ownServers_) {
    // A Valkey of its own, database 0 like the first workspace's (see session.h).
    own_.push_back(EmbeddedServers::startValkeyBeside(servers()));
    return std::make_unique<Workspace>(with(own_.back()->endpoints()), scenario_, t, id, args_.run, logs);
  }
  // Servers of the worker's own, so that restarting them touches no other worker's run (docs/faults.md).
  // The worker's workspaces (one per target, run one after another) share them, each in a database of its
  // own and with Valkey's database emptied at each reset; worker 0 takes the pair the session started.
  EmbeddedServers*& servers = workerServers_[w];
  if (!servers) {
    if (w == 0) {
      servers = embedded_.get();
    } else {
      own_.push_back(EmbeddedServers::start());
      servers = own_.back().get();
    }
  }
  auto ws = std::make_unique<Workspace>(with(servers->endpoints()), scenario_, t, id, args_.run, logs);
  const auto timeout = args_.run.start_timeout;
  EmbeddedServers* mine = servers;
  ws->setRestarter([mine, timeout](const std::string& which) { mine->restart(which, timeout); },
                   [mine] { return mine->restarts(); });
  return ws;
}

Judged Session::judge(Workspace& ws, const Scenario& sc, const Schedule& s, bool keepLogs) {
  Judged j;
  j.schedule = s;
  j.history = ws.execute(s);
  j.phases = ws.phases();
  const auto t0 = std::chrono::steady_clock::now();
  auto ops = j.history.ops();
  for (const auto& [op, e] : recordsOf<ops::Error>(ops)) j.error = e->message;
  if (j.error.empty()) {
    j.results = checkAll(sc, ops);
    j.verdict = merge(j.results);
  } else {
    j.verdict = Verdict::Error;
  }
  j.phases["judge"] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (keepLogs || j.verdict != Verdict::Pass) {
    for (const auto& [op, spawn] : recordsOf<ops::Spawn>(ops)) j.logs[op->process] = logForReport(spawn->log);
  }
  return j;
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

RunRecord Session::record(const Judged& j, const std::string& id, const std::string& target, bool withHistory,
                          const std::string& title, const std::string& scenario) {
  RunRecord r;
  r.id = id;
  r.target = target;
  r.title = title;
  r.scenario = scenario;
  r.verdict = j.verdict;
  r.error = j.error;
  r.schedule = j.schedule;
  r.history = j.history.ops();
  r.results = j.results;
  r.withHistory = withHistory;
  if (withHistory && !j.logs.empty()) {
    std::string dir = id;
    for (char& c : dir)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '/') c = '_';
    r.logs = writeLogs(j, dir);
    // Messages name a process's log where it was written during the run, a temp folder removed at exit:
    // point them at its copy in the report folder instead.
    for (const auto& [op, spawn] : recordsOf<ops::Spawn>(r.history)) {
      auto kept = r.logs.find(op->process);
      if (kept == r.logs.end() || spawn->log.empty()) continue;
      std::string copy = (reportDir() / kept->second).string();
      for (auto& c : r.results)
        for (auto& v : c.violations)
          for (size_t pos; (pos = v.message.find(spawn->log)) != std::string::npos;)
            v.message.replace(pos, spawn->log.size(), copy);
    }
  }
  return r;
}

ReportHeader Session::header(const std::string& command) const {
  ReportHeader h;
  h.command = command;
  h.scenario = scenario_.name;
  h.scenarioFile = scenario_.file.string();
  for (const auto& t : targets_) h.targets.push_back(t.name);
  h.seed = args_.seed;
  h.embedded = servers().embedded;
  h.valkeyBinary = servers().valkey_binary;
  const auto& o = args_.run;
  h.options = {{"claim_idle_ms", o.claim_idle_ms},       {"deadline_ms", o.deadline.count()},
               {"stall_ms", o.stall.count()},            {"grace_ms", o.grace.count()},
               {"settle_ms", o.settle.count()},          {"start_timeout_ms", o.start_timeout.count()},
               {"max_processes", o.max_processes},       {"workers", workers()},
               {"scenario_values", args_.scenarioValues}};
  return h;
}

} // namespace idem
