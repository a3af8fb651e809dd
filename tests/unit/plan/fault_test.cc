// Faults as values: the text form parsed and printed in one place, kinds registered in one list, kill
// points of earlier versions keep their meaning, schedule files of version 1 still load.
#include "core/error.h"
#include "plan/fault_kind.h"
#include "plan/schedule.h"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <functional>

using namespace idem;

namespace {

std::string usageError(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("fault: kill points are kills, printed as they were written") {
  Fault f = Fault::parse("after:COMMIT#3");
  CHECK(f.kind == "kill");
  CHECK(f.when == When::After);
  CHECK(f.verb == "COMMIT");
  CHECK(f.k == 3);
  CHECK(f.str() == "after:COMMIT#3");
  CHECK(Fault::parse("kill:before:xack#2").str() == "before:XACK#2");
  CHECK(Fault::parse("BEFORE:xack#2") == Fault::kill(When::Before, "XACK", 2));
  CHECK(faultKind("kill", "test").effect(f).action == Effect::Action::Kill);
}

TEST_CASE("fault: bad text names the flag and says the form") {
  CHECK(usageError([] { Fault::parse("after:COMMIT", "--crash"); }) ==
        "--crash: 'after:COMMIT': missing '#k' (expected [KIND:]before|after:VERB#k[:ARG...], e.g. after:COMMIT#3 or "
        "drop:after:XACK#2; kinds: kill)");
  CHECK(usageError([] { Fault::parse("sideways:COMMIT#1"); }).find("'sideways' is no fault kind, nor before or after") !=
        std::string::npos);
  CHECK(usageError([] { Fault::parse("after:COMMIT#0"); }).find("k counts from 1") != std::string::npos);
  CHECK(usageError([] { Fault::parse("after:COMMIT#1:5"); }).find("a kill takes no arguments") != std::string::npos);
  CHECK(usageError([] { Fault::parse("after:COM MIT#1"); }).find("verb has a character") != std::string::npos);
}

TEST_CASE("schedule: version 2 carries faults; version 1 files (kills) still load; others are named") {
  nlohmann::json j = {{"version", 1}, {"scenario", "wallet"}, {"events", {{{"n", 1}}}}, {"stream", {1}},
                      {"kills", {"after:COMMIT#1"}}};
  Schedule s = scheduleFromJson(j, "old.json");
  REQUIRE(s.faults.size() == 1);
  CHECK(s.faults[0].str() == "after:COMMIT#1");
  nlohmann::json now = s;
  CHECK(now["version"] == 2);
  CHECK(now["faults"] == nlohmann::json::array({"after:COMMIT#1"}));
  CHECK(!now.contains("kills"));
  CHECK(nlohmann::json(scheduleFromJson(now, "new.json")) == now);
  j["version"] = 3;
  CHECK(usageError([&] { scheduleFromJson(j, "x.json"); }) ==
        "x.json: field 'version': 3 is not a schedule version this idemproof reads (1 or 2)");
  j.erase("version");
  CHECK(usageError([&] { scheduleFromJson(j, "x.json"); }) ==
        "x.json: field 'version': missing is not a schedule version this idemproof reads (1 or 2)");
  j["version"] = "1";
  CHECK(usageError([&] { scheduleFromJson(j, "x.json"); }) == "x.json: field 'version': must be an integer");
  now["faults"] = {"after:COMMIT#1", "kill:after:COMMIT#1"};
  CHECK(usageError([&] { scheduleFromJson(now, "y.json"); }) ==
        "y.json: field 'faults[1]': a second fault at after:COMMIT#1");
}
