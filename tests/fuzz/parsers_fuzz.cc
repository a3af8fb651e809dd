// libFuzzer target: the parsers of the files users write — strict JSON (core/json_file.h), then the same
// document as a schedule file, a scenario and a target manifest. Each either accepts the input or throws
// UsageError (exit 2 with one line); any other exception, a crash or undefined behaviour is a finding.
#include "core/error.h"
#include "core/json_file.h"
#include "plan/schedule.h"
#include "scenario/scenario.h"
#include "target/manifest.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json j;
  try {
    j = idem::parseJsonStrict(text, "fuzz.json");
  } catch (const idem::UsageError&) {
    return 0;
  }
  try {
    idem::scheduleFromJson(j, "schedule.json");
  } catch (const idem::UsageError&) {
  }
  try {
    idem::scenarioFromJson(j, "scenario.json");
  } catch (const idem::UsageError&) {
  }
  try {
    idem::targetFromJson(j, "/nonexistent/idemproof-fuzz/target.json");
  } catch (const idem::UsageError&) {
  }
  return 0;
}
