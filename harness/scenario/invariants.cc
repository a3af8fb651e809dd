#include "core/error.h"
#include "scenario/json_fields.h"
#include "scenario/scenario_parse.h"

#include <fmt/format.h>

#include <algorithm>

namespace idem::detail {

namespace {

const std::vector<std::string> kKinds = {"sum-of-distinct", "count-of-distinct", "latest-version", "final-value",
                                         "one-row-per-event"};

std::vector<std::string> invariantMembers(const std::string& kind) {
  std::vector<std::string> m = {"name", "kind", "observed"};
  if (kind != "one-row-per-event") m.push_back("key");
  if (kind == "sum-of-distinct") m.push_back("field");
  if (kind == "sum-of-distinct" || kind == "count-of-distinct") m.insert(m.end(), {"distinct", "sign"});
  if (kind == "one-row-per-event") m.push_back("distinct");
  if (kind == "latest-version") m.insert(m.end(), {"version", "columns"});
  if (kind == "final-value") m.push_back("value");
  return m;
}

/// Reads a member that names a field of the scenario; returns the field.
const FieldGen& fieldRef(const FieldReader& r, const std::string& member, const std::string& name, const Scenario& s) {
  const FieldGen* f = s.fieldGen(name);
  if (!f) r.fail(member, fmt::format("'{}' is not a field (fields: {})", name, fieldNames(s.fields)));
  return *f;
}

Invariant parseOne(const FieldReader& r, const std::vector<Invariant>& earlier, const Scenario& s) {
  Invariant inv;
  inv.name = r.uniqueName("name", earlier);
  inv.kind = r.oneOf("kind", kKinds);
  r.onlyKnown(invariantMembers(inv.kind));
  inv.observed = *r.text("observed", true);
  if (inv.kind != "one-row-per-event") {
    inv.key = *r.str("key", true);
    fieldRef(r, "key", inv.key, s);
  }
  inv.distinct = s.idField();
  if (auto d = r.str("distinct", false)) {
    fieldRef(r, "distinct", *d, s);
    inv.distinct = *d;
  }
  if (auto sign = r.integer("sign", false)) {
    if (*sign != 1 && *sign != -1) r.fail("sign", fmt::format("{} is not 1 or -1", *sign));
    inv.sign = static_cast<int>(*sign);
  }
  if (inv.kind == "sum-of-distinct") {
    inv.field = *r.str("field", true);
    const FieldGen& f = fieldRef(r, "field", inv.field, s);
    if (!integerValued(f, s.keys))
      r.fail("field", fmt::format("'{}' (gen {}) does not always hold an integer, so it cannot be summed", f.name, f.gen));
  }
  if (inv.kind == "latest-version") {
    inv.version = *r.str("version", true);
    const FieldGen& v = fieldRef(r, "version", inv.version, s);
    if (!integerValued(v, s.keys))
      r.fail("version", fmt::format("'{}' (gen {}) does not always hold an integer version", v.name, v.gen));
    inv.columns = *r.strings("columns", true, true);
    for (size_t i = 0; i < inv.columns.size(); ++i) fieldRef(r, fmt::format("columns[{}]", i), inv.columns[i], s);
  }
  if (inv.kind == "final-value") inv.value = *r.str("value", true, false);
  return inv;
}

} // namespace

std::vector<Invariant> parseInvariants(const nlohmann::json& j, const std::string& what, const Scenario& s) {
  if (!j.is_array() || (j.empty() && s.kind != "http")) fieldError(what, "invariants", "must be a non-empty array of invariants");
  std::vector<Invariant> out;
  for (size_t i = 0; i < j.size(); ++i) {
    FieldReader r(j[i], what, fmt::format("invariants[{}]", i));
    out.push_back(parseOne(r, out, s));
  }
  return out;
}

} // namespace idem::detail

namespace idem {

size_t Invariant::observedColumns() const {
  if (kind == "one-row-per-event") return 1;
  if (kind == "latest-version") return 1 + columns.size();
  return 2;
}

} // namespace idem
