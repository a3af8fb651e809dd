// timekill: a kill at a time after a process's spawn (bench/first_bug_bench.cc), in the fault text form.
#include "core/error.h"
#include "plan/fault_kind.h"

#include <catch2/catch.hpp>

using namespace idem;

TEST_CASE("timekill names its process, SPAWN#1 and a time in ms") {
  Fault f = Fault::parse("timekill:c1:after:SPAWN#1:350");
  CHECK(f.kind == "timekill");
  CHECK(f.process == "c1");
  CHECK(f.str() == "timekill:c1:after:SPAWN#1:350");
  Effect e = faultKind("timekill", "test").effect(f);
  CHECK(e.action == Effect::Action::Kill);
  CHECK(e.time == std::chrono::milliseconds(350));
  CHECK(applicationWeight(f) == 1);
  CHECK_FALSE(faultKind("timekill", "test").atStep());
  CHECK(faultKind("kill", "test").atStep());
  for (const char* bad : {"timekill:after:SPAWN#1:350", "timekill:c1:before:SPAWN#1:350", "timekill:c1:after:COMMIT#1:350",
                          "timekill:c1:after:SPAWN#2:350", "timekill:c1:after:SPAWN#1", "timekill:c1:after:SPAWN#1:-3",
                          "timekill:c1:after:SPAWN#1:12345678"})
    CHECK_THROWS_AS(Fault::parse(bad, "--crash"), UsageError);
}

TEST_CASE("timekill takes its time to the microsecond: up to three decimals") {
  Fault f = Fault::parse("timekill:c1:after:SPAWN#1:35.125");
  CHECK(f.str() == "timekill:c1:after:SPAWN#1:35.125");
  CHECK(faultKind("timekill", "test").effect(f).time == std::chrono::milliseconds(35));
  CHECK(timeKillDelay(f) == std::chrono::microseconds(35125));
  CHECK(timeKillDelay(Fault::parse("timekill:c1:after:SPAWN#1:35.5")) == std::chrono::microseconds(35500));
  CHECK(timeKillDelay(Fault::parse("timekill:c1:after:SPAWN#1:350")) == std::chrono::microseconds(350000));
  for (const char* bad : {"timekill:c1:after:SPAWN#1:35.", "timekill:c1:after:SPAWN#1:.5", "timekill:c1:after:SPAWN#1:35.1250",
                          "timekill:c1:after:SPAWN#1:3.5.1"})
    CHECK_THROWS_AS(Fault::parse(bad, "--crash"), UsageError);
}
