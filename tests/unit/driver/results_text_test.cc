// What `run`, `check`, `sweep` and `replay` print of a judged run (driver/commands.h resultsText): under
// each violation of a failing check, one line naming its anti-pattern and the fix, as the page does.
#include "driver/commands.h"

#include "../checkers/check_util.h"

using namespace idem;
using namespace idem::testing;
using Catch::Matchers::Contains;

TEST_CASE("terminal: a failing run prints its violation's anti-pattern and fix on the next line") {
  const Scenario s = builtin("wallet");
  const auto rs = checkAll(s, simpleWalletRun());
  REQUIRE(merge(rs) == Verdict::Fail);
  const std::string text = resultsText(rs, "  ");
  // The producer's retry of event 2, applied twice: the line under it names the mistake and its fix.
  CHECK_THAT(text, Contains("  duplicate      balance w1: expected 25000, observed 30000 — "));
  CHECK_THAT(text, Contains("\n    pattern: effect without dedup — record the event in the effect's transaction: "
                            "BEGIN; INSERT INTO processed_events(event_id) VALUES ($1) ON CONFLICT DO NOTHING;"));
  // One pattern line per violation, each right under its violation.
  size_t violations = 0, patterns = 0;
  for (const auto& r : rs) violations += r.violations.size();
  for (size_t at = text.find("pattern: "); at != std::string::npos; at = text.find("pattern: ", at + 1)) ++patterns;
  CHECK(patterns == violations);
  CHECK(text.find("    pattern: ") > text.find("  duplicate "));
}

TEST_CASE("terminal: a violation no classifier recognises says so, a passing run prints no pattern line") {
  const Scenario s = builtin("wallet");
  // Event 2 acknowledged without effect, and no kill: lost, with nothing in the steps that shows why.
  HistoryBuilder b(s);
  b.initial(balances(0));
  auto e = sendWallet(b, {100, 300}, {1, 2});
  b.spawn("c1");
  b.read("c1", "XREADGROUP", e);
  applySimply(b, "c1", e[0], 100);
  b.ack("c1", {e[1]});
  b.finalOp(balances(100));
  const auto rs = checkAll(s, b.ops());
  REQUIRE(merge(rs) == Verdict::Fail);
  CHECK_THAT(resultsText(rs, "  "), Contains("\n    pattern: no known pattern\n"));

  HistoryBuilder ok(s);
  ok.initial(balances(0));
  auto one = sendWallet(ok, {100}, {1});
  ok.spawn("c1");
  ok.read("c1", "XREADGROUP", one);
  applySimply(ok, "c1", one[0], 100);
  ok.finalOp(balances(100));
  const auto passed = checkAll(s, ok.ops());
  REQUIRE(merge(passed) == Verdict::Pass);
  CHECK(resultsText(passed, "  ").find("pattern:") == std::string::npos);
}

TEST_CASE("terminal: the same anti-pattern under several violations gives its fix once") {
  Violation a, b;
  a.kind = b.kind = "duplicate";
  a.invariant = b.invariant = "balance";
  a.pattern = b.pattern = Pattern{"effect-without-dedup", "effect without dedup", {}, "", "dedup in the transaction"};
  CheckResult r;
  r.checker = "invariant:balance";
  r.verdict = Verdict::Fail;
  r.violations = {a, b};
  const std::string text = resultsText({r}, "");
  CHECK_THAT(text, Contains("  pattern: effect without dedup — dedup in the transaction\n"));
  CHECK_THAT(text, Contains("  pattern: effect without dedup (its fix above)\n"));
  CHECK(text.find("dedup in the transaction") == text.rfind("dedup in the transaction"));
}
