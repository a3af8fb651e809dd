#pragma once
/// Integration tests run the real `idemproof` binary, as a user would, against real PostgreSQL and
/// Valkey/Redis servers that idemproof starts itself, and read its exit status, output and report.json.
/// Every invocation is tagged through an environment variable that all its descendants inherit, so a
/// test can prove that no process of the run is left behind.
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace itest {

struct Result {
  std::string tag; ///< the tag of this call's processes (see leftovers)
  int status = -1;
  std::string out, err;
  nlohmann::json report; ///< report.json of the run, or null
  std::filesystem::path reportDir;
  /// The call's private temp root (IDEMPROOF_TMPDIR): every temp folder of the call is made here, so a
  /// test judges what the call left by this folder alone, whatever else runs on the machine.
  std::filesystem::path tmpRoot;
};

/// The repository root and the build dir (compile definitions).
std::filesystem::path repo();
std::filesystem::path build();

/// Runs `idemproof ARGS --report <fresh dir>` (the report flag only for commands that take it), waits,
/// reads report.json. `sigintAfterMs` > 0 sends SIGINT to it after that long. `env` is added to its
/// environment (consumers inherit it); IDEMPROOF_TMPDIR is a fresh folder of the call's own unless `env`
/// names one. Safe to call from several threads at once.
Result idemproof(const std::vector<std::string>& args, int sigintAfterMs = 0, bool withReport = true,
                 const std::map<std::string, std::string>& env = {});

/// The bytes of a file, "" when it cannot be read: a /proc file of a process that exits while it is read
/// (its cmdline, environ, stat) is no error of the test.
std::string fileText(const std::filesystem::path& p);

/// Whether `p` holds within `limit`, asked every 20 ms.
template <class Pred>
bool eventually(Pred p, std::chrono::seconds limit = std::chrono::seconds(60)) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (p()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return p();
}

/// Processes still alive whose environment carries the tag of the last idemproof() call.
std::vector<int> leftovers(const std::string& tag);
/// The tag of the last call.
const std::string& lastTag();
/// Entries named idemproof-* in `root` (a call's private temp root).
std::vector<std::string> tempDirsIn(const std::filesystem::path& root);
/// A fresh, empty folder for IDEMPROOF_TMPDIR (on /dev/shm when it is writable: servers' data dirs are
/// copied there).
std::filesystem::path freshTmpRoot(const std::string& tag);

/// A path for a file this test process writes: `name` in the temp dir, made unique on the machine by the
/// process's pid (several suites may run at once).
std::filesystem::path scratchPath(const std::string& name);
/// A schedule file `name`.json of the orders scenario: two payloads, these requests and these faults.
std::string ordersSchedule(const std::string& name, const nlohmann::json& client, const nlohmann::json& faults);

/// targets/NAME and tests/targets/NAME of the repository.
std::string target(const std::string& name);
std::string testTarget(const std::string& name);

/// The verbs of the steps on server `server` in the first run's history of `r`'s report.
std::set<std::string> verbsOn(const Result& r, const std::string& server);

/// Checks that the idemproof call of `r` left no process and no temp dir behind (what clean() checks).
void checkLeftNothing(const Result& r);

/// idemproof(args) that also checks (Catch2 CHECKs) that the run left no process and no temp folder in
/// its private temp root.
Result clean(const std::vector<std::string>& args, int sigintAfterMs = 0);

/// clean() of each command, the commands run at once (each idemproof with its own servers and temp root):
/// for runs that mostly wait, such as a Kafka group's joins. The checks are made here, after all ended.
std::vector<Result> cleanAll(const std::vector<std::vector<std::string>>& commands);

/// The arguments of the "  replay: idemproof replay ..." line of a check's output (paths hold no spaces);
/// a Catch2 REQUIRE fails when there is none.
std::vector<std::string> replayArgs(const std::string& out);

/// Waits for `pid`, a child the caller waits for next, to end, polling its VmHWM (the peak resident set,
/// which only grows) meanwhile; returns the last peak seen, in KiB.
long peakRssKiB(int pid, const std::function<bool()>& running);

/// Every violation of the report with this kind.
std::vector<nlohmann::json> violations(const nlohmann::json& report, const std::string& kind);

/// The run's only violation of `kind` (a REQUIRE that there is exactly one).
nlohmann::json onlyViolation(const Result& r, const std::string& kind);
/// The violations of `report` with this kind in run `run` ("" for any).
std::vector<nlohmann::json> violationsOfRun(const nlohmann::json& report, const std::string& kind, const std::string& run);
/// An acknowledge-first consumer (py-ack-first, node-ack-first) killed at after:XACK#4 on the default wallet
/// schedule: run `run` of `report` names event 2 applied twice and event 4 lost, the loss at the kill point.
void duplicateTwoLostFour(const nlohmann::json& report, const std::string& run);

} // namespace itest
