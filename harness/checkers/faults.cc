#include "checkers/checkers.h"

#include "plan/kill_point.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace idem::detail {

CheckResult checkFaults(const HistoryView& h) {
  if (!h.planOp) throw std::runtime_error("no plan op: the schedule that ran is not known");
  const auto& plan = h.planOp->value;
  if (!plan.contains("schedule") || !plan["schedule"].is_object())
    throw std::runtime_error("the plan op has no schedule");
  const auto& sched = plan["schedule"];
  std::vector<std::string> unknown;
  if (!sched.contains("kills")) return resultOf({}, unknown);
  for (const auto& text : sched["kills"]) {
    KillPoint want = KillPoint::parse(text.get<std::string>(), "plan op kill point");
    bool fired = std::any_of(h.kills.begin(), h.kills.end(), [&](const KillRec& k) {
      try {
        return KillPoint::parse(k.point, "kill op") == want;
      } catch (const std::exception&) {
        return false;
      }
    });
    if (fired) continue;
    auto requests = std::count_if(h.steps.begin(), h.steps.end(), [&](const StepRec& s) { return s.verb == want.verb; });
    unknown.push_back(fmt::format("kill point {} never fired: the target made {} {} request{}", want.str(), requests,
                                  want.verb, requests == 1 ? "" : "s"));
  }
  return resultOf({}, unknown);
}

CheckResult checkObservation(const HistoryView& h) {
  bool kills = h.planOp && h.planOp->value.contains("schedule") && h.planOp->value["schedule"].is_object() &&
               h.planOp->value["schedule"].contains("kills") && !h.planOp->value["schedule"]["kills"].empty();
  std::vector<std::string> unknown;
  for (const auto& o : h.opaque) {
    std::string what = fmt::format("{}'s {} connection {} could not be decoded ({} bytes from byte {}: {})", o.process,
                                   o.server == "pg" ? "PostgreSQL" : "Valkey", o.conn, o.direction, o.offset, o.reason);
    if (o.server == "valkey")
      unknown.push_back(what + ": the deliveries and acknowledgements on it were not seen, so a pass can't be proven");
    else if (kills)
      unknown.push_back(what + ": its steps were not counted, so a planned kill point could have been on it");
  }
  return resultOf({}, unknown);
}

} // namespace idem::detail
