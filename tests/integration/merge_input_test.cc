/// merge as a hostile user or a broken file would feed it: the shards' folders are inputs, never written
/// and never a way to copy a file from elsewhere (a symbolic link to /etc/shadow, a `logs` link to a
/// folder); a report.json with a string where a number belongs, an index of 2^40, a link loop, or packed
/// with values is refused in one line with exit 2, at a bounded cost in memory; what merge prints from a
/// shard's report is escaped for the terminal.
#include "support.h"

#include <boost/process.hpp>
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

using namespace itest;
namespace fs = std::filesystem;
namespace bp = boost::process;

namespace {

/// The two shards of a small passing check, made once; each case merges copies of them.
const std::vector<fs::path>& shards() {
  static std::vector<fs::path> dirs = [] {
    std::vector<fs::path> out;
    for (int i = 0; i < 2; ++i) {
      Result r = clean({"check", "--target", target("dedup-table"), "--scenario", "wallet", "--seed", "1", "--runs", "4",
                        "--max-events", "2", "--consumers", "1", "--faults", "kill", "--shard", std::to_string(i) + "/2"});
      INFO(r.out << r.err);
      REQUIRE(r.status == 0);
      fs::path keep = fs::temp_directory_path() / ("itest-merge-shard" + std::to_string(i) + "-" + std::to_string(::getpid()));
      fs::remove_all(keep);
      fs::copy(r.reportDir, keep, fs::copy_options::recursive);
      out.push_back(keep);
    }
    return out;
  }();
  return dirs;
}

/// A scratch folder holding fresh copies s0 and s1 of the shards; removed at scope end.
struct Copies {
  fs::path dir = fs::temp_directory_path() / ("itest-merge-input-" + std::to_string(::getpid()));
  Copies() {
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (int i = 0; i < 2; ++i) fs::copy(shards()[static_cast<size_t>(i)], s(i), fs::copy_options::recursive);
  }
  ~Copies() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  fs::path s(int i) const { return dir / ("s" + std::to_string(i)); }
  nlohmann::json report(int i) const {
    std::ifstream in(s(i) / "report.json");
    return nlohmann::json::parse(in);
  }
  void write(int i, const nlohmann::json& r) const { std::ofstream(s(i) / "report.json") << r.dump(2); }
};

/// Every entry under `dir`, relative, sorted.
std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) out.push_back(e.path().lexically_relative(dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

void refused(const Result& r, const std::string& expect) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.status == 2);
  CHECK(r.err.find(expect) != std::string::npos);
  CHECK(r.err.find("internal error") == std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

} // namespace

TEST_CASE("merge copies no file from outside the shards: links are refused before anything is written") {
  {
    Copies c;
    fs::create_directories(c.s(0) / "logs");
    fs::create_symlink("/etc/shadow", c.s(0) / "logs" / "x.log");
    Result r = idemproof({"merge", c.s(0).string(), c.s(1).string(), "--report", (c.dir / "out").string()}, 0, false);
    refused(r, "x.log is a symbolic link");
    CHECK_FALSE(fs::exists(c.dir / "out"));
  }
  {
    Copies c;
    fs::remove_all(c.s(0) / "logs");
    fs::create_directory_symlink("/etc/ssl", c.s(0) / "logs");
    Result r = idemproof({"merge", c.s(0).string(), c.s(1).string(), "--report", (c.dir / "out").string()}, 0, false);
    refused(r, "logs is a symbolic link");
    CHECK_FALSE(fs::exists(c.dir / "out" / "shard-0" / "logs" / "private"));
  }
}

TEST_CASE("merge never writes into its inputs: a report folder inside or holding a shard is refused") {
  Copies c;
  const auto before = entries(c.dir);
  refused(idemproof({"merge", c.s(0).string(), c.s(1).string(), "--report", (c.s(0) / "logs").string()}, 0, false),
          "is inside the shard folder");
  refused(idemproof({"merge", c.s(0).string(), c.s(1).string(), "--report", c.dir.string()}, 0, false),
          "is a folder holding the shard folder");
  refused(idemproof({"merge", c.s(0).string(), c.s(1).string(), "--report", c.s(1).string()}, 0, false),
          "is the shard folder");
  refused(idemproof({"merge", c.s(0).string(), c.s(1).string(), "--report", (c.dir / "out").string(), "--junit",
                     (c.s(1) / "j.xml").string()}, 0, false),
          "--junit");
  CHECK(entries(c.dir) == before);
}

TEST_CASE("merge: a report.json of the wrong shape is refused in one line naming the file and field") {
  struct Case {
    std::string what;
    std::function<void(Copies&)> edit;
    std::string expect;
  };
  std::vector<Case> cases = {
      {"a string where a number belongs",
       [](Copies& c) { auto r = c.report(1); r["shard"]["index"] = "1"; c.write(1, r); }, "field '/shard/index' must be"},
      {"an index of 2^40",
       [](Copies& c) { auto r = c.report(1); r["shard"]["index"] = uint64_t(1) << 40; c.write(1, r); },
       "field '/shard/index' must be a whole number from 0 to 9999"},
      {"a run number that is text",
       [](Copies& c) { auto r = c.report(0); r["shard"]["runs"][0]["run"] = "1"; c.write(0, r); },
       "field '/shard/runs/0/run'"},
      {"a symbolic link loop",
       [](Copies& c) { fs::remove(c.s(1) / "report.json"); fs::create_symlink(c.s(1) / "report.json", c.s(1) / "report.json"); },
       "is a symbolic link"},
      {"a report.json that is a folder",
       [](Copies& c) { fs::remove(c.s(1) / "report.json"); fs::create_directory(c.s(1) / "report.json"); }, "is a folder"},
  };
  for (const auto& k : cases) {
    SECTION(k.what) {
      Copies c;
      k.edit(c);
      Result r = idemproof({"merge", c.s(0).string(), c.s(1).string(), "--report", (c.dir / "out").string()}, 0, false);
      refused(r, k.expect);
    }
  }
}

TEST_CASE("merge escapes what it prints from a shard's report: an ESC sequence in a target name reaches no terminal") {
  Copies c;
  for (int i = 0; i < 2; ++i) {
    auto r = c.report(i);
    r["target"] = "evil\x1b]0;pwned\x07\x1b[2J";
    r["targets"] = {r["target"]};
    c.write(i, r);
  }
  Result r = idemproof({"merge", c.s(0).string(), c.s(1).string(), "--report", (c.dir / "out").string()}, 0, false);
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(r.out.find("evil\\x1b]0;pwned\\x07\\x1b[2J") != std::string::npos);
  CHECK(r.out.find('\x1b') == std::string::npos);
  CHECK(r.out.find('\x07') == std::string::npos);
}

TEST_CASE("merge refuses a shard's report.json packed with 100 MB of numbers in one line, and stays small") {
  Copies c;
  {
    auto r = c.report(0);
    std::string text = r.dump();
    text.pop_back(); // the closing brace
    std::ofstream out(c.s(0) / "report.json");
    out << text << R"(, "padding": [)";
    const std::string chunk = [] {
      std::string s;
      for (int i = 0; i < 4096; ++i) s += "1,";
      return s;
    }();
    for (size_t written = 0; written < 100u << 20; written += chunk.size()) out << chunk;
    out << "1]}";
  }
  fs::create_directories(c.dir / "io");
  bp::child child((build() / "idemproof").string(),
                  bp::args({"merge", c.s(0).string(), c.s(1).string(), "--report", (c.dir / "out").string()}),
                  bp::std_out > (c.dir / "io" / "out").string(), bp::std_err > (c.dir / "io" / "err").string(),
                  bp::std_in < bp::null);
  long peakKiB = peakRssKiB(child.id(), [&] { return child.running(); });
  child.wait();
  std::ifstream err(c.dir / "io" / "err");
  std::string errText((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  INFO("stderr: " << errText << "peak " << peakKiB << " KiB");
  CHECK(child.exit_code() == 2);
  CHECK(errText.find("values besides its run list that merge reads from one shard") != std::string::npos);
  CHECK(std::count(errText.begin(), errText.end(), '\n') == 1);
  CHECK(peakKiB < 256 * 1024); // it was 1.96 GB parsed whole
}

TEST_CASE("merge --junit /dev/full: the write error is an exit 2 in one line, not a silent success") {
  Copies c;
  Result r = idemproof({"merge", c.s(0).string(), c.s(1).string(), "--report", (c.dir / "out").string(), "--junit",
                        "/dev/full"}, 0, false);
  refused(r, "--junit: cannot write /dev/full");
}
