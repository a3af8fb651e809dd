// Unguarded version: an older version's write took effect after a newer one's, and the statement did not
// compare versions (no WHERE version < $new).
#include "checkers/patterns/patterns.h"

#include <fmt/format.h>

namespace idem::detail::patterns {

namespace {

/// The last write of event n that took effect.
std::optional<StepAt> lastWriteOf(const HistoryView& h, int n, std::string& process) {
  std::optional<StepAt> out;
  for (const DeliveryRec* d : h.deliveriesOf(n)) {
    auto w = writeFor(h, *d);
    if (w && (!out || w->op > out->op)) {
      out = w;
      process = d->process;
    }
  }
  return out;
}

bool guarded(const ops::Step& s) {
  return says(s, "VERSION <") || says(s, "VERSION<") || says(s, "< EXCLUDED.VERSION") || says(s, "<EXCLUDED.VERSION");
}

} // namespace

Found unguardedVersion(const HistoryView& h, const Violation& v) {
  if (v.kind != "stale-version" || v.events.size() < 2) return std::nullopt;
  // The events are the stale one's, then the newest one's (invariant_rows.cc).
  const int stale = v.events.front();
  const int newest = v.events.back();
  std::string sp, np;
  auto sw = lastWriteOf(h, stale, sp);
  auto nw = lastWriteOf(h, newest, np);
  if (!sw || !nw || sw->op < nw->op || guarded(*sw->step)) return std::nullopt;
  const std::string sv = versionOf(h, stale), nv = versionOf(h, newest);
  return make("unguarded-version", "unguarded version", {nw->op, sw->op},
              fmt::format("{} wrote event {}{} ({}) after {} wrote event {}{} ({}); the statement did not compare "
                          "versions, so the older one won",
                          sp, stale, sv.empty() ? "" : " (version " + sv + ")", sw->name(), np, newest,
                          nv.empty() ? "" : " (version " + nv + ")", nw->name()),
              "write only a newer version: UPDATE … SET …, version = $new WHERE id = $id AND version < $new (or "
              "INSERT … ON CONFLICT (id) DO UPDATE SET … WHERE t.version < EXCLUDED.version); 0 rows updated means "
              "a newer version is already there: acknowledge and move on");
}

} // namespace idem::detail::patterns
