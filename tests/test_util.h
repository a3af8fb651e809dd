#pragma once
// Shared code of the scenario/target tests: temporary files and "the error message contains" assertions.
#include "core/error.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace idem::testing {

/// A fresh directory under the system temp dir, removed at scope end.
struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() / ("idem-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::filesystem::path write(const std::string& rel, const std::string& text) const {
    auto p = path / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p;
  }
};

/// The UsageError message `fn` throws; fails the test when it throws nothing.
template <typename F>
std::string usageError(F&& fn) {
  try {
    fn();
  } catch (const idem::UsageError& e) {
    return e.what();
  }
  FAIL("expected a UsageError");
  return "";
}

} // namespace idem::testing
