// Which CALL step carried each of the sink's call records (linkCalls), on hand-made ops with their times:
// keep-alive clients whose answer a fault held, a request handed on after its client gave up on it, and a
// key longer than a step's detail keeps.
#include "checkers/sink_view.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace idem;
using idem::detail::linkCalls;

namespace {

class Ops {
public:
  /// A CALL step of `proc`, its request complete at `reqUs`, recorded at `atUs`.
  int64_t step(const std::string& proc, int k, const std::string& detail, int64_t reqUs, int64_t atUs,
               ops::StepOutcome outcome = ops::StepOutcome::Ok) {
    ops::Step s;
    s.server = "sink";
    s.verb = "CALL";
    s.k = k;
    s.detail = detail;
    s.tReqUs = reqUs;
    s.outcome = outcome;
    return add(proc, atUs, s);
  }
  /// The sink's record of call `id`, decided at `atUs`.
  int64_t call(int id, const std::string& ref, const std::string& key, int64_t atUs) {
    ops::Call c;
    c.id = id;
    c.method = "POST";
    c.path = "/charges";
    c.keyHeader = !key.empty();
    c.key = key;
    c.ref = ref;
    c.outcome = "executed";
    c.status = 200;
    c.execution = id;
    return add("sink", atUs, c);
  }
  std::vector<Op> ops;

private:
  int64_t add(const std::string& proc, int64_t atUs, Record r) {
    Op op;
    op.index = static_cast<int64_t>(ops.size());
    op.time_us = atUs;
    op.process = proc;
    op.record = std::move(r);
    ops.push_back(std::move(op));
    return op.index;
  }
};

} // namespace

TEST_CASE("sink links: an answer a hold kept from c1 links c1's call to c1's step, recorded after c2's") {
  // No key: c1 calls, its answer is held; c2 takes the event over and calls again; c1's step ends last.
  Ops o;
  const int64_t call1 = o.call(1, "e-1", "", 110);
  const int64_t call2 = o.call(2, "e-1", "", 210);
  const int64_t c2Step = o.step("c2", 2, "POST /charges ref=e-1", 200, 220);
  const int64_t c1Step = o.step("c1", 1, "POST /charges ref=e-1", 100, 300);
  const auto links = linkCalls(o.ops);
  CHECK(links.at(call1) == c1Step);
  CHECK(links.at(call2) == c2Step);
}

TEST_CASE("sink links: a request held past its client's timeout and handed on later links to the call it made") {
  // c1's CALL#3 is held before the sink sees it; c1 gives up, calls again (CALL#4, answered); its first
  // connection's end records CALL#3 forwarded, and the sink then receives it.
  Ops o;
  const int64_t call5 = o.call(5, "e-3", "", 2110);
  const int64_t step4 = o.step("c1", 4, "POST /charges ref=e-3", 2100, 2120);
  const int64_t step3 = o.step("c1", 3, "POST /charges ref=e-3", 100, 3000, ops::StepOutcome::Forwarded);
  const int64_t call6 = o.call(6, "e-3", "", 3001);
  const auto links = linkCalls(o.ops);
  CHECK(links.at(call5) == step4);
  CHECK(links.at(call6) == step3);
}

TEST_CASE("sink links: a key cut short in the detail still picks the step of that key") {
  const std::string longKey = "one/" + std::string(195, 'x');
  const std::string otherKey = "two/" + std::string(195, 'x');
  auto cut = [](const std::string& key) { // what abbreviate leaves of "POST /charges ref=e-1 key=KEY"
    std::string d = "POST /charges ref=e-1 key=" + key;
    return d.substr(0, 197) + "...";
  };
  Ops o;
  const int64_t call1 = o.call(1, "e-1", otherKey, 110);
  const int64_t stepOne = o.step("c1", 1, cut(longKey), 50, 120);
  const int64_t stepTwo = o.step("c2", 2, cut(otherKey), 100, 130);
  const auto links = linkCalls(o.ops);
  CHECK(links.at(call1) == stepTwo); // not the first step recorded after it: its key is another
  CHECK(links.size() == 1);
  CHECK(stepOne < stepTwo);
}
