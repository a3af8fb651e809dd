// supervisor/timekill.h on real processes: a timekill SIGKILLs its process's group at its instant (not
// before), is reported by fired() exactly once, names only its own process, and a cancelled one never fires.
#include "supervisor/timekill.h"

#include "core/child.h"

#include <catch2/catch.hpp>

#include <csignal>

using namespace idem;
using std::chrono::milliseconds;

namespace {

Child sleeper() {
  ChildSpec spec;
  spec.argv = {"sleep", "30"};
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  spec.what = "timekill test";
  return Child::spawn(spec);
}

} // namespace

TEST_CASE("timekill: kills its process's group at its instant and is reported once", "[timekill]") {
  TimeKills tk({Fault::parse("timekill:c1:after:SPAWN#1:150")});
  Child c1 = sleeper(), c2 = sleeper();
  const auto start = TimeKills::Clock::now();
  tk.arm("c1", c1.pid(), start);
  tk.arm("c2", c2.pid(), start); // c2 has no timekill: nothing armed
  tk.arm("c1", c1.pid(), start); // armed once per label
  CHECK_FALSE(tk.fired("c1"));
  CHECK_FALSE(c1.waitFor(milliseconds(100))); // not before its instant
  auto es = c1.waitFor(milliseconds(5000));
  REQUIRE(es);
  CHECK(es->killedBy(SIGKILL));
  CHECK(TimeKills::Clock::now() - start >= milliseconds(150));
  auto f = tk.fired("c1");
  REQUIRE(f);
  CHECK(f->str() == "timekill:c1:after:SPAWN#1:150");
  CHECK_FALSE(tk.fired("c1")); // recorded once
  CHECK_FALSE(tk.fired("c2"));
  CHECK_FALSE(c2.poll()); // untouched
}

TEST_CASE("timekill: a cancelled timekill never fires, nor one destroyed before its instant", "[timekill]") {
  Child c1 = sleeper();
  {
    TimeKills tk({Fault::parse("timekill:c1:after:SPAWN#1:100")});
    tk.arm("c1", c1.pid(), TimeKills::Clock::now());
    tk.cancel(c1.pid());
    CHECK_FALSE(c1.waitFor(milliseconds(400)));
    CHECK_FALSE(tk.fired("c1"));
    tk.arm("c1", c1.pid(), TimeKills::Clock::now()); // already armed for c1 (once per label): no new timer
    TimeKills later({Fault::parse("timekill:c1:after:SPAWN#1:300")});
    later.arm("c1", c1.pid(), TimeKills::Clock::now());
  } // both destroyed: their timers are cancelled and joined
  CHECK_FALSE(c1.waitFor(milliseconds(600)));
  CHECK_FALSE(c1.poll());
}
