// Every file and folder an integration test makes in the temp dir (its idemproof calls' out, err and
// report, its schedule files) goes in one folder of the test process, its $TMPDIR and that of what it
// starts: removed when every test case of the process passed, kept and named on stderr when one failed.
// Catch2's listener interface is compiled only with CATCH_CONFIG_EXTERNAL_INTERFACES, so this file is built
// without the tests' precompiled header and outside their unity batches (tests/CMakeLists.txt).
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <system_error>

#include <unistd.h>

namespace {

namespace fs = std::filesystem;

struct TempFolder : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  fs::path dir;

  void testRunStarting(const Catch::TestRunInfo& info) override {
    dir = fs::temp_directory_path() / ("itest-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    ::setenv("TMPDIR", dir.c_str(), 1);
    TestEventListenerBase::testRunStarting(info);
  }

  void testRunEnded(const Catch::TestRunStats& stats) override {
    std::error_code ec;
    if (stats.totals.assertions.failed == 0 && stats.totals.testCases.failed == 0) fs::remove_all(dir, ec);
    else std::cerr << "the test's files are kept in " << dir.string() << "\n";
    TestEventListenerBase::testRunEnded(stats);
  }
};

} // namespace

CATCH_REGISTER_LISTENER(TempFolder)
