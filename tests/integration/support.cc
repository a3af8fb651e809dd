#include "support.h"

#include "../unit/report/json_schema.h"

#include <boost/process.hpp>
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <set>
#include <future>
#include <mutex>
#include <csignal>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

namespace bp = boost::process;
namespace fs = std::filesystem;

namespace itest {

namespace {

std::string tag_;
std::mutex tagMu_;

} // namespace

fs::path repo() { return IDEM_SOURCE_DIR; }
fs::path build() { return IDEM_BINARY_DIR; }
const std::string& lastTag() { return tag_; }

Result idemproof(const std::vector<std::string>& args, int sigintAfterMs, bool withReport,
                 const std::map<std::string, std::string>& extraEnv) {
  Result r;
  {
    std::lock_guard<std::mutex> lock(tagMu_);
    static std::mt19937_64 rng(std::random_device{}());
    r.tag = tag_ = std::to_string(rng());
  }
  fs::path dir = fs::temp_directory_path() / ("itest-" + r.tag);
  fs::create_directories(dir);
  if (auto own = extraEnv.find("IDEMPROOF_TMPDIR"); own != extraEnv.end()) r.tmpRoot = own->second;
  else r.tmpRoot = freshTmpRoot(r.tag);
  r.reportDir = dir / "report";
  std::vector<std::string> argv = args;
  if (withReport) {
    argv.push_back("--report");
    argv.push_back(r.reportDir.string());
  }
  bp::environment env = boost::this_process::environment();
  env["IDEMPROOF_TEST_TAG"] = r.tag;
  env["IDEMPROOF_TMPDIR"] = r.tmpRoot.string();
  for (const auto& [k, v] : extraEnv) env[k] = v;
  bp::child c((build() / "idemproof").string(), bp::args(argv), bp::std_out > (dir / "out").string(),
              bp::std_err > (dir / "err").string(), bp::std_in < bp::null, env, bp::start_dir(repo().string()));
  if (sigintAfterMs > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(sigintAfterMs));
    ::kill(c.id(), SIGINT);
  }
  c.wait();
  r.status = c.exit_code();
  if (!extraEnv.count("IDEMPROOF_TMPDIR")) { // the call's own root goes when it is empty (clean() reads what is left)
    std::error_code ec;
    fs::remove(r.tmpRoot, ec);
  }
  r.out = fileText(dir / "out");
  r.err = fileText(dir / "err");
  if (fs::exists(r.reportDir / "report.json")) r.report = nlohmann::json::parse(fileText(r.reportDir / "report.json"));
  // Every report the test suite writes must match reports/report.schema.json (throws, failing the test).
  if (!r.report.is_null()) idem::testing::requireValidReport(r.report, (r.reportDir / "report.json").string());
  return r;
}

std::string fileText(const fs::path& p) {
  std::string out;
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

std::vector<int> leftovers(const std::string& tag) {
  std::vector<int> pids;
  std::string needle = "IDEMPROOF_TEST_TAG=" + tag;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::string name = e.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::string env = fileText(e.path() / "environ");
    std::string stat = fileText(e.path() / "stat");
    if (stat.find(") Z ") != std::string::npos) continue; // a zombie holds nothing
    for (size_t pos = 0; pos < env.size();) {
      size_t end = env.find('\0', pos);
      if (end == std::string::npos) end = env.size();
      if (env.compare(pos, end - pos, needle) == 0) {
        pids.push_back(std::stoi(name));
        break;
      }
      pos = end + 1;
    }
  }
  return pids;
}

std::vector<std::string> tempDirsIn(const fs::path& root) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    std::string name = e.path().filename().string();
    // idemproof-fuzz-* belong to the fuzzers (tests/fuzz/run.sh), never to an idemproof command.
    if (name.rfind("idemproof-", 0) == 0 && name != "idemproof-cache" && name.rfind("idemproof-fuzz-", 0) != 0)
      out.push_back(e.path().string());
  }
  return out;
}

fs::path freshTmpRoot(const std::string& tag) {
  std::error_code ec;
  fs::path base = fs::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK | X_OK) == 0
                      ? fs::path("/dev/shm")
                      : fs::temp_directory_path();
  fs::path root = base / ("itest-tmp-" + tag);
  fs::create_directories(root);
  return root;
}

fs::path scratchPath(const std::string& name) {
  return fs::temp_directory_path() / ("itest-" + std::to_string(::getpid()) + "-" + name);
}

std::string target(const std::string& name) { return (repo() / "targets" / name).string(); }
std::string testTarget(const std::string& name) { return (repo() / "tests" / "targets" / name).string(); }

std::set<std::string> verbsOn(const Result& r, const std::string& server) {
  std::set<std::string> verbs;
  for (const auto& op : r.report["runs"][0]["history"])
    if (op["type"] == "step" && op["value"]["server"] == server) verbs.insert(op["value"]["verb"].get<std::string>());
  return verbs;
}

void checkLeftNothing(const Result& r) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  // A process killed at the exit may still be dying (not yet a zombie) a moment later on a loaded machine;
  // one left running is there after 10 s too.
  std::vector<int> left;
  eventually([&] { return (left = leftovers(r.tag)).empty(); }, std::chrono::seconds(10));
  for (int pid : left) UNSCOPED_INFO("left running: pid " << pid << ": " << fileText("/proc/" + std::to_string(pid) + "/cmdline"));
  CHECK(left.empty());
  auto dirs = tempDirsIn(r.tmpRoot);
  for (const auto& d : dirs) UNSCOPED_INFO("left behind: " << d);
  CHECK(dirs.empty());
}

Result clean(const std::vector<std::string>& args, int sigintAfterMs) {
  Result r = idemproof(args, sigintAfterMs);
  checkLeftNothing(r);
  return r;
}

std::vector<Result> cleanAll(const std::vector<std::vector<std::string>>& commands) {
  std::vector<std::future<Result>> running;
  for (const auto& args : commands) // idemproof() makes no Catch2 assertion: safe off the test's thread
    running.push_back(std::async(std::launch::async, [args] { return idemproof(args); }));
  std::vector<Result> out;
  for (auto& f : running) out.push_back(f.get());
  for (const Result& r : out) checkLeftNothing(r);
  return out;
}

nlohmann::json onlyViolation(const Result& r, const std::string& kind) {
  auto v = violations(r.report, kind);
  REQUIRE(v.size() == 1);
  return v[0];
}

std::vector<nlohmann::json> violations(const nlohmann::json& report, const std::string& kind) {
  std::vector<nlohmann::json> out;
  if (!report.is_object() || !report.contains("violations")) return out;
  for (const auto& v : report["violations"])
    if (v.value("kind", "") == kind) out.push_back(v);
  return out;
}

std::vector<nlohmann::json> violationsOfRun(const nlohmann::json& report, const std::string& kind, const std::string& run) {
  std::vector<nlohmann::json> out;
  for (const auto& v : violations(report, kind))
    if (run.empty() || v.value("run", "") == run) out.push_back(v);
  return out;
}

void duplicateTwoLostFour(const nlohmann::json& report, const std::string& run) {
  auto dup = violationsOfRun(report, "duplicate", run);
  auto lost = violationsOfRun(report, "lost", run);
  REQUIRE(dup.size() == 1);
  REQUIRE(lost.size() == 1);
  CHECK(dup[0]["events"] == nlohmann::json::array({2}));
  CHECK(lost[0]["events"] == nlohmann::json::array({4}));
  CHECK(lost[0]["kill_point"] == "after:XACK#4");
  CHECK(dup[0]["message"].get<std::string>().find("explained only by event 2 applied twice and event 4 lost") !=
        std::string::npos);
}

std::vector<std::string> replayArgs(const std::string& out) {
  auto at = out.find("replay: idemproof replay ");
  REQUIRE(at != std::string::npos);
  std::istringstream line(out.substr(at + 18, out.find('\n', at) - at - 18));
  std::vector<std::string> args;
  for (std::string w; line >> w;) args.push_back(w);
  return args;
}

long peakRssKiB(int pid, const std::function<bool()>& running) {
  long peakKiB = 0;
  const std::string status = "/proc/" + std::to_string(pid) + "/status";
  while (running()) {
    std::ifstream in(status);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("VmHWM:", 0) == 0) peakKiB = std::max(peakKiB, std::stol(line.substr(6)));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return peakKiB;
}

std::string ordersSchedule(const std::string& name, const nlohmann::json& client, const nlohmann::json& faults) {
  nlohmann::json s = nlohmann::json::parse(R"({"version": 2, "scenario": "orders", "events": [
      {"n": 1, "fields": {"customer": "alice", "sku": "sku-1", "qty": "2", "amount": "4500"}},
      {"n": 2, "fields": {"customer": "bob", "sku": "sku-2", "qty": "1", "amount": "1200"}}]})");
  s["client"] = client;
  s["faults"] = faults;
  auto path = scratchPath(name + ".json");
  std::ofstream(path) << s.dump(2);
  return path.string();
}

} // namespace itest
