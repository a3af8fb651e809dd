// A new kind of fault is one file and its registration: this test defines one ("sever": reset the
// connection, the process lives), registers it, and the proxies carry it out like any built-in kind.
// The same file also holds a delay kind, to show a hold the proxy releases by itself.
#include "rig.h"

#include "core/error.h"
#include "plan/fault_kind.h"

#include <fmt/format.h>

using namespace idem;
using namespace idem::test;

namespace {

class Sever : public FaultKind {
public:
  std::string name() const override { return "sever"; }
  std::string usage() const override { return "sever:before|after:VERB#k   reset the connection"; }
  void check(const Fault& f, const std::string& what) const override {
    if (!f.args.empty()) throw UsageError(fmt::format("{}: sever takes no arguments", what));
  }
  Effect effect(const Fault&) const override { return Effect{Effect::Action::Drop, {}, {}, {}, {}, false}; }
};

class Linger : public FaultKind {
public:
  std::string name() const override { return "linger"; }
  std::string usage() const override { return "linger:before|after:VERB#k:MS   hold the request or reply MS ms"; }
  void check(const Fault& f, const std::string& what) const override {
    if (f.args.size() != 1) throw UsageError(fmt::format("{}: linger takes one argument, MS", what));
  }
  Effect effect(const Fault& f) const override {
    return Effect{Effect::Action::Delay, std::chrono::milliseconds(std::stoi(f.args[0])), {}, {}, {}, false};
  }
};

const bool registered = [] {
  registerFaultKind(std::make_unique<Sever>());
  registerFaultKind(std::make_unique<Linger>());
  return true;
}();

} // namespace

TEST_CASE("a fault kind defined in one file: sever after SET#2 resets the connection, the process lives") {
  REQUIRE(registered);
  Fault f = Fault::parse("sever:after:SET#2", "test");
  CHECK(f.str() == "sever:after:SET#2");
  Rig rig({"sever:after:SET#2"});
  RawClient client(rig.ports.broker);
  client.send(resp({"SET", "a", "1"}));
  REQUIRE(client.readN(5) == "+OK\r\n");
  client.send(resp({"SET", "b", "2"}));
  auto res = client.readUntilClosed();
  CHECK(res.closed);
  CHECK(res.bytes.empty());          // the reply never came: the connection was reset
  REQUIRE(rig.valkey.waitCount(2));  // the server executed SET#2
  REQUIRE(rig.waitOps("fault", 1));
  CHECK(stepLines(rig.history) == std::vector<std::string>{"SET#1 ok", "SET#2 dropped-after"});
  CHECK(opsOf(rig.history, "fault")[0].value["fault"] == "sever:after:SET#2");
  CHECK(rig.child.alive()); // no kill: the process lives
  CHECK_FALSE(rig.ctl.state(1).killed);
  // Its other connections and new ones still work.
  RawClient again(rig.ports.broker);
  again.send(resp({"SET", "c", "3"}));
  CHECK(again.readN(5) == "+OK\r\n");
}

TEST_CASE("a fault kind defined in one file: linger before SET#1 holds the request, then lets it through") {
  REQUIRE(registered);
  Rig rig({"linger:before:SET#1:1000"});
  RawClient client(rig.ports.broker);
  auto t0 = std::chrono::steady_clock::now();
  client.send(resp({"SET", "a", "1"}) + resp({"GET", "a"})); // the GET waits behind the held SET
  REQUIRE(rig.waitOps("fault", 1));
  CHECK(rig.valkey.count() == 0); // held: the server has seen nothing yet
  CHECK(rig.ctl.state(1).inflight == 1);
  REQUIRE(client.readN(10) == "+OK\r\n+OK\r\n");
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(1000));
  CHECK(rig.valkey.waitCount(2));
  REQUIRE(rig.waitOps("step", 2));
  CHECK(stepLines(rig.history) == std::vector<std::string>{"SET#1 ok", "GET#1 ok"});
  CHECK(rig.child.alive());
}
