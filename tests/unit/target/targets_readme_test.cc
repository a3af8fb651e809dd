// targets/README.md's table of what each reference target is expected to do is generated from the targets'
// own manifests ("expect"), the same data `idemproof demo` checks: the two can't drift apart.
#include "target/manifest.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace {

std::string expectationsTable() {
  std::vector<fs::path> folders;
  for (const auto& e : fs::directory_iterator(fs::path(IDEM_SOURCE_DIR) / "targets"))
    if (fs::exists(e.path() / "target.json")) folders.push_back(e.path());
  std::sort(folders.begin(), folders.end());
  std::string out = "| target | scenario | expected | kinds | anti-pattern | why |\n|---|---|---|---|---|---|\n";
  for (const auto& f : folders) {
    idem::Target t = idem::loadTarget(f);
    auto row = [&](const std::string& scenario, const idem::Expectation& x) {
      std::string kinds;
      for (const auto& k : x.kinds) kinds += (kinds.empty() ? "" : ", ") + ("`" + k + "`");
      out += "| `" + t.name + "` | " + scenario + " | " + x.verdict + " | " + kinds + " | " +
             (x.pattern.empty() ? "" : "`" + x.pattern + "`") + " | " + x.why + " |\n";
    };
    for (const auto& [scenario, x] : t.expect) {
      row(scenario, x);
      // Under a sink policy where it differs (compare and demo run both): a row of its own.
      if (auto p = t.expectBySinkPolicy.find(scenario); p != t.expectBySinkPolicy.end())
        for (const auto& [policy, y] : p->second) row(scenario + ", sink policy " + policy, y);
    }
  }
  return out;
}

} // namespace

TEST_CASE("targets/README.md: the table of expectations is the manifests'") {
  const fs::path readme = fs::path(IDEM_SOURCE_DIR) / "targets" / "README.md";
  std::ifstream in(readme);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const std::string begin = "<!-- expect:begin -->\n", end = "<!-- expect:end -->";
  auto a = text.find(begin), b = text.find(end);
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  std::string table = expectationsTable();
  std::string current = text.substr(a + begin.size(), b - a - begin.size());
  if (const char* u = std::getenv("IDEM_UPDATE_GOLDEN"); u && std::string(u) == "1" && current != table) {
    text.replace(a + begin.size(), b - a - begin.size(), table);
    std::ofstream(readme) << text;
    current = table;
  }
  INFO("run with IDEM_UPDATE_GOLDEN=1 to regenerate the table from the manifests");
  CHECK(current == table);
}
