/// Nothing survives idemproof: a consumer's child that escapes its process group is killed and reported,
/// and after a SIGKILL of idemproof itself (which runs no cleanup) the next idemproof command removes
/// the dead one's folders and kills its processes (core/owner.h).
#include "support.h"

#include <boost/process.hpp>
#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <fstream>
#include <thread>

using namespace itest;
namespace bp = boost::process;

namespace {

/// Temp folders of the idemproof process `pid` (their names carry "-<pid>.<start time>-").
std::vector<std::string> foldersOf(int pid) {
  std::vector<std::string> out;
  for (const auto& d : tempDirs())
    if (d.find("-" + std::to_string(pid) + ".") != std::string::npos) out.push_back(d);
  return out;
}

/// Live processes whose command line contains `needle` and whose environment carries `tag`.
std::vector<int> tagged(const std::string& tag, const std::string& needle) {
  std::vector<int> out;
  for (int pid : leftovers(tag)) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (char& c : cmd)
      if (c == '\0') c = ' ';
    if (cmd.find(needle) != std::string::npos) out.push_back(pid);
  }
  return out;
}

template <class Pred>
bool eventually(Pred p, std::chrono::seconds limit = std::chrono::seconds(60)) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (p()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return p();
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
  bp::environment env = boost::this_process::environment();
  env["IDEMPROOF_TEST_TAG"] = tag;
  auto out = std::filesystem::temp_directory_path() / ("itest-sigkill-" + std::to_string(::getpid()));
  std::filesystem::create_directories(out);
  bp::child victim((build() / "idemproof").string(),
                   bp::args({"sweep", "--target", testTarget("sleeper"), "--scenario", "wallet", "--report",
                             (out / "report").string()}),
                   bp::std_out > (out / "out").string(), bp::std_err > (out / "err").string(), bp::std_in < bp::null,
                   env, bp::start_dir(repo().string()));
  const int pid = victim.id();
  // Killed while it has servers, folders and a consumer with a child of its own.
  bool busy = eventually([&] { return !tagged(tag, "sleep 301").empty() && foldersOf(pid).size() >= 3; });
  ::kill(pid, SIGKILL);
  victim.wait();
  REQUIRE(busy);
  // What it left: its folders; and the consumer's own child, which its death did not stop.
  CHECK(!foldersOf(pid).empty());
  CHECK(!tagged(tag, "sleep 301").empty());

  Result next = idemproof({"run", "--target", target("dedup-table"), "--scenario", "wallet"});
  INFO("stdout: " << next.out << "\nstderr: " << next.err);
  CHECK(next.status == 0);
  for (const auto& d : foldersOf(pid)) UNSCOPED_INFO("left behind: " << d);
  CHECK(foldersOf(pid).empty());
  CHECK(eventually([&] { return leftovers(tag).empty(); }, std::chrono::seconds(10)));
  std::error_code ec;
  std::filesystem::remove_all(out, ec);
}

TEST_CASE("a target that floods its output and writes a 100 MiB value costs idemproof under 100 MiB") {
  std::string tag = "flood-" + std::to_string(::getpid());
  bp::environment env = boost::this_process::environment();
  env["IDEMPROOF_TEST_TAG"] = tag;
  env["FLOOD_MB"] = "200";
  env["VALUE_MB"] = "100";
  auto out = std::filesystem::temp_directory_path() / ("itest-flood-" + std::to_string(::getpid()));
  std::filesystem::create_directories(out);
  bp::child run((build() / "idemproof").string(),
                bp::args({"run", "--target", testTarget("flood"), "--scenario", "wallet", "--report",
                          (out / "report").string()}),
                bp::std_out > (out / "out").string(), bp::std_err > (out / "err").string(), bp::std_in < bp::null,
                env, bp::start_dir(repo().string()));
  // VmHWM, the peak resident set of idemproof itself (not of the consumers it runs), only grows.
  long peakKiB = 0;
  const std::string status = "/proc/" + std::to_string(run.id()) + "/status";
  while (run.running()) {
    std::ifstream in(status);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("VmHWM:", 0) == 0) peakKiB = std::max(peakKiB, std::stol(line.substr(6)));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  run.wait();
  INFO("peak " << peakKiB << " KiB");
  CHECK(run.exit_code() == 0);
  CHECK(peakKiB > 0);
  CHECK(peakKiB < 100 * 1024);
  // The report's copy of the log is its last 256 KiB, saying how much was cut before.
  std::string log;
  for (const auto& e : std::filesystem::recursive_directory_iterator(out / "report" / "logs"))
    if (e.path().filename() == "c1.log") {
      std::ifstream in(e.path());
      log.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  CHECK(log.size() <= 256 * 1024 + 64);
  CHECK(log.find(" bytes cut ...]") != std::string::npos);
  std::error_code ec;
  std::filesystem::remove_all(out, ec);
}
