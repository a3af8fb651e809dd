/// Nothing survives idemproof: a consumer's child that escapes its process group is killed and reported,
/// and after a SIGKILL of idemproof itself (which runs no cleanup) the next idemproof command removes
/// the dead one's folders and kills its processes (core/owner.h).
#include "support.h"

#include <boost/process.hpp>
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fstream>
#include <set>
#include <thread>

using namespace itest;
namespace bp = boost::process;

namespace {

/// Temp folders of the idemproof process `pid` in `root` (their names carry "-<pid>.<start time>-").
std::vector<std::string> foldersOf(const std::filesystem::path& root, int pid) {
  std::vector<std::string> out;
  for (const auto& d : tempDirsIn(root))
    if (d.find("-" + std::to_string(pid) + ".") != std::string::npos) out.push_back(d);
  return out;
}

/// Live processes whose command line contains `needle` and whose environment carries `tag`.
std::vector<int> tagged(const std::string& tag, const std::string& needle) {
  std::vector<int> out;
  for (int pid : leftovers(tag)) {
    std::string cmd = fileText("/proc/" + std::to_string(pid) + "/cmdline");
    for (char& c : cmd)
      if (c == '\0') c = ' ';
    if (cmd.find(needle) != std::string::npos) out.push_back(pid);
  }
  return out;
}

/// idemproof started in the background (not waited for, unlike idemproof()), with `env` added to its
/// environment and a private temp root of its own (`root`: pass it to the next command as IDEMPROOF_TMPDIR
/// to have that one reap what this one left); its report, stdout and stderr in a scratch folder, which
/// goes at scope end with the root.
struct Background {
  std::filesystem::path dir, root;
  bp::child child;

  Background(const std::string& name, std::vector<std::string> args, const std::map<std::string, std::string>& env) {
    dir = std::filesystem::temp_directory_path() / ("itest-" + name + "-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    root = freshTmpRoot(name + "-" + std::to_string(::getpid()));
    bp::environment e = boost::this_process::environment();
    e["IDEMPROOF_TMPDIR"] = root.string();
    for (const auto& [k, v] : env) e[k] = v;
    args.insert(args.end(), {"--report", report().string()});
    child = bp::child((build() / "idemproof").string(), bp::args(args), bp::std_out > (dir / "out").string(),
                      bp::std_err > (dir / "err").string(), bp::std_in < bp::null, e, bp::start_dir(repo().string()));
  }
  ~Background() {
    if (child.running()) ::kill(child.id(), SIGKILL);
    if (child.valid()) child.wait();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::filesystem::remove_all(root, ec);
  }
  std::filesystem::path report() const { return dir / "report"; }
  /// What it printed so far, for a test's message.
  std::string printed() const { return "stdout: " + fileText(dir / "out") + "\nstderr: " + fileText(dir / "err"); }
};

/// What an idemproof in the background left once interrupted by SIGINT (sent here) and ended: its exit
/// status, stdout, stderr and report.json (null when it wrote none).
struct Interrupted {
  int status = -1;
  std::string out, err;
  nlohmann::json report;
};
Interrupted interrupt(Background& bg) {
  ::kill(bg.child.id(), SIGINT);
  bg.child.wait();
  Interrupted in;
  in.status = bg.child.exit_code();
  in.out = fileText(bg.dir / "out");
  in.err = fileText(bg.dir / "err");
  if (std::filesystem::exists(bg.report() / "report.json")) in.report = nlohmann::json::parse(fileText(bg.report() / "report.json"));
  return in;
}

/// The peak resident set of `run` (idemproof itself, not the processes it runs), in KiB, read from its
/// VmHWM (which only grows) until it exits; then waits for it.
long peakUntilExit(bp::child& run) {
  const long peakKiB = peakRssKiB(run.id(), [&] { return run.running(); });
  run.wait();
  return peakKiB;
}

} // namespace

TEST_CASE("a consumer's child that leaves its process group is killed, and reported as escaped") {
  Result r = clean({"run", "--target", testTarget("escapes"), "--scenario", "wallet"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.status == 1);
  auto escaped = violations(r.report, "escaped");
  REQUIRE(escaped.size() == 1);
  CHECK(escaped[0]["observed"].get<std::string>().find("sleep 301") != std::string::npos);
  CHECK(r.out.find("escaped") != std::string::npos);
  CHECK(tagged(r.tag, "sleep 301").empty());
}

TEST_CASE("after kill -9 of idemproof during a sweep, the next command leaves nothing of it") {
  std::string tag = "sigkill-" + std::to_string(::getpid());
  Background run("sigkill", {"sweep", "--target", testTarget("sleeper"), "--scenario", "wallet"},
                 {{"IDEMPROOF_TEST_TAG", tag}});
  bp::child& victim = run.child;
  const int pid = victim.id();
  // Killed while it has servers, folders and a consumer with a child of its own.
  bool busy = eventually([&] { return !tagged(tag, "sleep 301").empty() && foldersOf(run.root, pid).size() >= 3; });
  ::kill(pid, SIGKILL);
  victim.wait();
  REQUIRE(busy);
  // What it left: its folders (in its own temp root); and the consumer's own child, which its death did not
  // stop — unless another test's idemproof, started meanwhile, has already reaped it: every command reaps
  // the processes of a dead one, whichever temp root it uses, so that is not checked here.
  CHECK(!foldersOf(run.root, pid).empty());

  Result next = idemproof({"run", "--target", target("dedup-table"), "--scenario", "wallet"}, 0, true,
                          {{"IDEMPROOF_TMPDIR", run.root.string()}});
  INFO("stdout: " << next.out << "\nstderr: " << next.err);
  CHECK(next.status == 0);
  for (const auto& d : foldersOf(run.root, pid)) UNSCOPED_INFO("left behind: " << d);
  CHECK(foldersOf(run.root, pid).empty());
  CHECK(eventually([&] { return leftovers(tag).empty(); }, std::chrono::seconds(10)));
}

TEST_CASE("a target that floods its output and moves 100 MiB values costs idemproof under 100 MiB", "[two-cores]") {
  Background bg("flood", {"run", "--target", testTarget("flood"), "--scenario", "wallet"},
                {{"IDEMPROOF_TEST_TAG", "flood-" + std::to_string(::getpid())},
                 {"FLOOD_MB", "200"},
                 {"VALUE_MB", "100"},
                 {"PG_MB", "100"},
                 {"PG_RESULT_MB", "100"}});
  bp::child& run = bg.child;
  const long peakKiB = peakUntilExit(run);
  INFO("peak " << peakKiB << " KiB");
  CHECK(run.exit_code() == 0);
  CHECK(peakKiB > 0);
  CHECK(peakKiB < 100 * 1024);
  // The 100 MiB result passed the bound of what the proxy holds for one step: that connection went on
  // unobserved, and the report says so (with no fault planned, that costs the verdict nothing).
  std::ifstream rep(bg.report() / "report.json");
  nlohmann::json report = nlohmann::json::parse(rep);
  bool said = false;
  for (const auto& op : report["runs"][0]["history"])
    if (op["type"] == "opaque" && op["value"]["reason"].get<std::string>().find("MiB the proxy holds") != std::string::npos)
      said = true;
  CHECK(said);
  // The report's copy of the log is its last 256 KiB, saying how much was cut before.
  std::string log;
  for (const auto& e : std::filesystem::recursive_directory_iterator(bg.report() / "logs"))
    if (e.path().filename() == "c1.log") log = fileText(e.path());
  CHECK(log.size() <= 256 * 1024 + 64);
  CHECK(log.find(" bytes cut ...]") != std::string::npos);
}

TEST_CASE("a child that leaves its group and clears its environment is still killed, and noted") {
  Result r = clean({"run", "--target", testTarget("escapes-bare"), "--scenario", "wallet"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.status == 0);
  bool noted = false;
  for (const auto& op : r.report["runs"][0]["history"])
    if (op["type"] == "note" && op["value"]["message"].get<std::string>().find("sleep 302") != std::string::npos)
      noted = true;
  CHECK(noted);
  // No process with that command line is left (it carries no tag to look for: check by name).
  bool alive = false;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string cmd = fileText(e.path() / "cmdline");
    if (cmd == std::string("/bin/sleep\0302\0", 15)) alive = true;
  }
  CHECK_FALSE(alive);
}

namespace {

/// Live processes whose environment names the idemproof process `pid` as their owner (core/owner.h).
std::vector<int> ownedBy(int pid) {
  std::vector<int> out;
  const std::string mark = "IDEMPROOF_OWNER=" + std::to_string(pid) + ".";
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string name = e.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::string env = fileText(e.path() / "environ");
    std::string stat = fileText(e.path() / "stat");
    if (stat.find(") Z ") != std::string::npos) continue;
    if (env.rfind(mark, 0) == 0 || env.find(std::string(1, '\0') + mark) != std::string::npos)
      out.push_back(std::stoi(name));
  }
  return out;
}

} // namespace

TEST_CASE("kill -9 of idemproof during its first initdb: the next command leaves nothing of it") {
  auto cache = std::filesystem::temp_directory_path() / ("itest-cache-" + std::to_string(::getpid()));
  std::filesystem::create_directories(cache);
  // An empty cache: the template is made by initdb first.
  Background run("initdb", {"run", "--target", target("dedup-table"), "--scenario", "wallet"},
                 {{"IDEMPROOF_CACHE_DIR", cache.string()}});
  bp::child& victim = run.child;
  const int pid = victim.id();
  auto initdbRunning = [&] {
    for (int p : ownedBy(pid)) {
      std::string cmd = fileText("/proc/" + std::to_string(p) + "/cmdline");
      // initdb itself, or the postgres --boot / --single it runs
      if (cmd.find("initdb") != std::string::npos || cmd.find("--boot") != std::string::npos ||
          cmd.find("--single") != std::string::npos)
        return true;
    }
    return false;
  };
  bool caught = eventually(initdbRunning, std::chrono::seconds(30)); // polled every 20 ms; initdb takes longer
  ::kill(pid, SIGKILL);
  victim.wait();
  REQUIRE(caught);
  CHECK(!foldersOf(run.root, pid).empty()); // its partial template, in its PostgreSQL folder

  Result next = idemproof({"run", "--target", target("dedup-table"), "--scenario", "wallet"}, 0, true,
                          {{"IDEMPROOF_CACHE_DIR", cache.string()}, {"IDEMPROOF_TMPDIR", run.root.string()}});
  INFO("stdout: " << next.out << "\nstderr: " << next.err);
  CHECK(next.status == 0);
  for (const auto& d : foldersOf(run.root, pid)) UNSCOPED_INFO("left behind: " << d);
  CHECK(foldersOf(run.root, pid).empty());
  CHECK(eventually([&] { return ownedBy(pid).empty(); }, std::chrono::seconds(10)));
  std::error_code ec;
  std::filesystem::remove_all(cache, ec);
}

TEST_CASE("a child that stays in the consumer's process group is no escape, however late it dies") {
  // sleeper: `sh -c 'sleep 301 & exec python3 …'`; the sleep dies with the group, a moment after the
  // consumer. Several runs, so that a scan racing its death would show.
  for (int i = 0; i < 5; ++i) {
    Result r = clean({"run", "--target", testTarget("sleeper"), "--scenario", "wallet"});
    INFO("run " << i << "\nstdout: " << r.out << "\nstderr: " << r.err);
    CHECK(r.status == 0);
    CHECK(violations(r.report, "escaped").empty());
    CHECK(tagged(r.tag, "sleep 301").empty());
  }
}

TEST_CASE("a target whose manifest overrides the run's marks is refused before it starts, and leaves nothing") {
  // A server that sets IDEMPROOF_RUN and IDEMPROOF_OWNER itself and leaves its session: were the manifest
  // taken, its `setsid sleep 303` would carry no mark of this run and outlive it.
  auto dir = freshTmpRoot("marks-" + std::to_string(::getpid()));
  std::ofstream(dir / "target.json") << R"({"name": "marks", "kind": "http",
    "command": ["sh", "-c", "setsid sleep 303 & exec sleep 304"],
    "env": {"IDEMPROOF_RUN": "not-this-run", "IDEMPROOF_OWNER": "1.1"}, "scenarios": ["orders"]})";
  Result r = clean({"run", "--target", dir.string(), "--scenario", "orders"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.status == 2);
  CHECK(r.err.find("field 'env.IDEMPROOF_") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  bool alive = false;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string cmd = fileText(e.path() / "cmdline");
    alive = alive || cmd.find(std::string("sleep\0" "303", 9)) != std::string::npos;
  }
  CHECK_FALSE(alive);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

TEST_CASE("SIGINT during a check: exit 130, and the report and JUnit count only the runs that finished") {
  const std::string tag = "interrupted-" + std::to_string(::getpid());
  auto junit = std::filesystem::temp_directory_path() / ("itest-interrupted-" + std::to_string(::getpid()) + ".xml");
  Background bg("interrupted",
                {"check", "--target", target("dedup-table"), "--scenario", "wallet", "--runs", "400", "--seed", "3",
                 "--consumers", "1", "--junit", junit.string()},
                {{"IDEMPROOF_TEST_TAG", tag}});
  // Interrupted while its consumers run: the search is under way.
  bool running = eventually([&] { return !tagged(tag, "dedup-table/dedup-table").empty() || !bg.child.running(); });
  INFO(bg.printed());
  REQUIRE(running);
  REQUIRE(bg.child.running()); // not ended before its consumers ran (a server that could not start)
  const Interrupted in = interrupt(bg);
  INFO("stdout: " << in.out << "\nstderr: " << in.err);
  CHECK(in.status == 130);
  REQUIRE(!in.report.is_null());
  const nlohmann::json& report = in.report;
  CHECK(report["interrupted"] == "SIGINT");
  CHECK(report["verdict"] == "unknown");
  const auto& check = report["check"];
  CHECK(check["interrupted"] == "SIGINT");
  CHECK(check["errors"] == 0); // no run is blamed on the target for what the clean-up did to it
  CHECK(check["unknown"] == 0);
  CHECK(check["failed"] == 0);
  CHECK(check["runs"] == check["passed"]);
  CHECK(check["runs"].get<int>() < 400);
  CHECK(check["run_summaries"].size() == check["runs"].get<size_t>());
  CHECK(check["notes"][0].get<std::string>().rfind("interrupted by SIGINT", 0) == 0);
  const std::string xml = fileText(junit);
  CHECK(xml.find("name=\"interrupted\"") != std::string::npos);
  CHECK(xml.find("<error type=\"interrupted\"") != std::string::npos);
  CHECK(eventually([&] { return leftovers(tag).empty(); }, std::chrono::seconds(10)));
  CHECK(tempDirsIn(bg.root).empty());
  std::error_code ec;
  std::filesystem::remove(junit, ec);
}

TEST_CASE("SIGINT during a sweep: exit 130, and its summary counts only the faults that ran") {
  const std::string tag = "sweep-interrupted-" + std::to_string(::getpid());
  Background bg("sweep-interrupted", {"sweep", "--target", target("dedup-table"), "--scenario", "wallet", "--workers", "1"},
                {{"IDEMPROOF_TEST_TAG", tag}});
  // Interrupted once a second consumer process ran (a fault's run: the fault-free one is over).
  std::set<int> seen;
  bool second = eventually([&] {
    for (int pid : tagged(tag, "dedup-table/dedup-table")) seen.insert(pid);
    return seen.size() >= 2 || !bg.child.running();
  }, std::chrono::seconds(60));
  INFO(bg.printed());
  REQUIRE(second);
  REQUIRE(bg.child.running());
  const Interrupted in = interrupt(bg);
  INFO("stdout: " << in.out << "\nstderr: " << in.err);
  CHECK(in.status == 130);
  REQUIRE(!in.report.is_null());
  const int notRun = in.report["sweep"]["not_run"].get<int>();
  CHECK(notRun > 0);
  // "unknown: N faults run (kill), …": N is what ran, as the report's schedules (the fault-free run aside).
  const int ran = in.report["timings"]["schedules"].get<int>() - 1;
  CHECK(in.out.find(fmt::format("unknown: {} faults run (kill)", ran)) != std::string::npos);
  CHECK(in.out.find(fmt::format("interrupted by SIGINT: {} of {} faults not run", notRun, ran + notRun)) != std::string::npos);
  CHECK(eventually([&] { return leftovers(tag).empty(); }, std::chrono::seconds(10)));
}

TEST_CASE("SIGINT during sweep --interleave: exit 130, the cells a signal cut are not counted, never a failure") {
  const std::string tag = "interleave-interrupted-" + std::to_string(::getpid());
  Background bg("interleave-interrupted",
                {"sweep", "--interleave", "--target", target("dedup-table"), "--scenario", "wallet", "--workers", "1"},
                {{"IDEMPROOF_TEST_TAG", tag}});
  // Interrupted once a hold's run started (the fault-free run has two consumer processes).
  std::set<int> seen;
  bool holding = eventually([&] {
    for (int pid : tagged(tag, "dedup-table/dedup-table")) seen.insert(pid);
    return seen.size() >= 3 || !bg.child.running();
  }, std::chrono::seconds(60));
  INFO(bg.printed());
  REQUIRE(holding);
  REQUIRE(bg.child.running());
  const Interrupted in = interrupt(bg);
  INFO("stdout: " << in.out << "\nstderr: " << in.err);
  CHECK(in.status == 130);
  REQUIRE(!in.report.is_null());
  CHECK(in.report["interrupted"] == "SIGINT");
  CHECK(in.report["verdict"] == "unknown");
  for (const auto& run : in.report["runs"]) CHECK(run["verdict"] != "fail"); // the clean-up's cut is no failure
  CHECK(in.out.find("interrupted by SIGINT: ") != std::string::npos);
  CHECK(eventually([&] { return leftovers(tag).empty(); }, std::chrono::seconds(10)));
}

TEST_CASE("SIGINT during a compare: exit 130, its matrix in the report and on stdout, what did not run unknown") {
  const std::string tag = "cmp-interrupted-" + std::to_string(::getpid());
  Background bg("cmp-interrupted",
                {"compare", "--target", target("dedup-table"), "--target", target("retry-no-dedup"), "--scenario",
                 "wallet", "--workers", "1"},
                {{"IDEMPROOF_TEST_TAG", tag}});
  // Interrupted while its consumers run, once a second one ran: whether in the baselines or in the
  // classes, most schedules are still to run. (Any target's: a baseline lasts a tenth of a second, and a
  // scan of /proc on a loaded machine may miss it; the next consumer of the same target may come only
  // after the other target's every class.)
  std::set<int> seen;
  bool running = eventually([&] {
    for (const char* consumer : {"dedup-table/dedup-table", "retry-no-dedup/retry-no-dedup"})
      for (int pid : tagged(tag, consumer)) seen.insert(pid);
    return seen.size() >= 2 || !bg.child.running();
  });
  INFO(bg.printed());
  REQUIRE(running);
  REQUIRE(bg.child.running());
  const Interrupted in = interrupt(bg);
  INFO("stdout: " << in.out << "\nstderr: " << in.err);
  CHECK(in.status == 130);
  // Printed before the exit, although stdout is a file (buffered).
  CHECK(in.out.find("interrupted by SIGINT: ") != std::string::npos);
  REQUIRE(!in.report.is_null());
  const nlohmann::json& report = in.report;
  CHECK(report["interrupted"] == "SIGINT");
  CHECK(report["verdict"] != "pass");
  int unknown = 0;
  for (const auto& c : report["compare"]["cells"]) {
    CHECK(c["unknown"].get<int>() <= c["schedules"].get<int>());
    unknown += c["unknown"].get<int>();
    // An example is a run that was judged: never one the signal cut short.
    if (!c["example"].get<std::string>().empty()) {
      bool shown = false;
      for (const auto& r : report["runs"]) shown = shown || r["id"] == c["example"];
      CHECK(shown);
    }
  }
  CHECK(unknown > 0); // the schedules the signal kept from running
  CHECK(eventually([&] { return leftovers(tag).empty(); }, std::chrono::seconds(10)));
  CHECK(tempDirsIn(bg.root).empty());
}

TEST_CASE("a burst of 16 answered with endless chunked bodies costs idemproof under 100 MiB, and is no pass") {
  // tests/targets/http-hostile, HOSTILE_MODE=chunks: every POST gets a 201 whose chunked body never ends.
  // The client keeps a digest and the first bytes of each answer, and stops reading one at 64 MiB.
  Background bg("chunks", {"replay", (repo() / "tests" / "targets" / "http-hostile" / "burst16.json").string(), "--target",
                           testTarget("http-hostile")},
                {{"IDEMPROOF_TEST_TAG", "chunks-" + std::to_string(::getpid())}, {"HOSTILE_MODE", "chunks"}});
  const long peakKiB = peakUntilExit(bg.child);
  INFO("peak " << peakKiB << " KiB");
  CHECK(peakKiB > 0);
  CHECK(peakKiB < 100 * 1024);
  CHECK(bg.child.exit_code() == 2); // no whole answer: unknown, never a pass
  std::ifstream rep(bg.report() / "report.json");
  nlohmann::json report = nlohmann::json::parse(rep);
  int tooLarge = 0;
  for (const auto& op : report["runs"][0]["history"])
    if (op["type"] == "response" && op["value"]["outcome"] == "too-large") {
      ++tooLarge;
      CHECK(op["value"]["status"] == 201);
      CHECK(op["value"].value("body", "").size() <= 4096);
    }
  CHECK(tooLarge >= 16);
}
