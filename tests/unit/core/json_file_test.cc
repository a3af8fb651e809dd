// Strict JSON files (core/json_file.h): whatever the bytes, a value or a UsageError naming the file.
#include "core/error.h"
#include "core/json_file.h"
#include "core/temp_dir.h"

#include <catch2/catch.hpp>

#include <fstream>

using namespace idem;
using Catch::Matchers::Contains;

namespace {

std::string errorOf(const std::string& text) {
  try {
    parseJsonStrict(text, "f.json");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("strict JSON: a key twice, a NUL byte, bad syntax and a number out of range are UsageErrors") {
  CHECK(errorOf(R"({"a": 1, "b": {"a": 2}})").empty()); // the same key in two objects is fine
  CHECK_THAT(errorOf(R"({"a": 1, "a": 2})"), Contains("f.json: key 'a' appears twice in one object"));
  CHECK_THAT(errorOf(R"({"o": {"k": 1, "k": 1}})"), Contains("key 'k' appears twice"));
  CHECK_THAT(errorOf(R"({"a": "x\u0000y"})"), Contains("f.json: a string holds a NUL byte"));
  CHECK_THAT(errorOf(R"({"a\u0000": 1})"), Contains("NUL byte"));
  CHECK_THAT(errorOf(R"({"a": )"), Contains("f.json: invalid JSON: parse error"));
  // Found by tests/fuzz/parsers_fuzz.cc: nlohmann throws out_of_range, not parse_error, for this one.
  CHECK_THAT(errorOf(R"({"name": 8888888888e8888888})"), Contains("f.json: invalid JSON"));
}

TEST_CASE("strict JSON files: a folder, a missing file and a file past its size bound are named") {
  TempDir dir("idem-test-");
  CHECK_THROWS_WITH(readJsonFile(dir.path(), "d"), Contains("d: is a folder, not a file"));
  CHECK_THROWS_WITH(readJsonFile(dir.path() / "none.json", "n"), Contains("n: no such file"));
  auto big = dir.path() / "big.json";
  std::ofstream(big) << "[\"" << std::string(2048, 'x') << "\"]";
  CHECK_THROWS_WITH(readJsonFile(big, "big", 1024), Contains("more than the 1024"));
  CHECK(readJsonFile(big, "big", 4096).size() == 1);
}
