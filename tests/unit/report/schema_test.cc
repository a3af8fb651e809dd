// The JSON Schema subset validator, and reports/report.schema.json itself.
#include "fixtures.h"
#include "json_schema.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>

using namespace idem::testing;
using json = nlohmann::json;

namespace {
bool mentions(const std::vector<std::string>& errors, const std::string& text) {
  for (const auto& e : errors)
    if (e.find(text) != std::string::npos) return true;
  return false;
}
} // namespace

TEST_CASE("schema validator: type, required, properties, additionalProperties, items, enum, const, $ref, if/then") {
  json schema = json::parse(R"({
    "type": "object", "required": ["a"],
    "properties": {"a": {"type": "integer", "minimum": 1}, "b": {"$ref": "#/$defs/list"},
                   "c": {"type": ["string", "null"], "enum": ["x", null]}, "d": {"const": 3}},
    "additionalProperties": false,
    "allOf": [{"if": {"properties": {"a": {"const": 2}}}, "then": {"required": ["d"]}}],
    "$defs": {"list": {"type": "array", "items": {"type": "string"}}}})");
  SchemaValidator v(schema);
  CHECK(v.errors(json::parse(R"({"a": 1, "b": ["x"], "c": null})")).empty());
  CHECK(mentions(v.errors(json::parse(R"({"b": []})")), "missing member 'a'"));
  CHECK(mentions(v.errors(json::parse(R"({"a": 0})")), "/a: 0 is below 1"));
  CHECK(mentions(v.errors(json::parse(R"({"a": 1.5})")), "/a: is number"));
  CHECK(mentions(v.errors(json::parse(R"({"a": 1, "b": ["x", 2]})")), "/b/1: is integer"));
  CHECK(mentions(v.errors(json::parse(R"({"a": 1, "c": "y"})")), "/c: \"y\" is not one of"));
  CHECK(mentions(v.errors(json::parse(R"({"a": 1, "z": 1})")), "member 'z' is not in the schema"));
  CHECK(mentions(v.errors(json::parse(R"({"a": 2})")), "missing member 'd'"));
  CHECK(mentions(v.errors(json::parse(R"({"a": 2, "d": 4})")), "/d: is 4, expected 3"));
}

TEST_CASE("schema validator: a keyword it does not implement is an error, not ignored") {
  SchemaValidator v(json::parse(R"({"type": "string", "pattern": "^a"})"));
  CHECK_THROWS_WITH(v.errors("b"), Catch::Contains("pattern"));
}

TEST_CASE("report schema: a run report with a member nobody documented is rejected, with its path") {
  auto report = runReportOf("dedup-valkey-after-SET3.history.json", "wallet");
  report["runs"][0]["surprise"] = 1;
  report["runs"][0]["violations"][0]["kind"] = "weird";
  report.erase("options");
  auto errors = SchemaValidator(reportSchema()).errors(report);
  CHECK(mentions(errors, "/runs/0: member 'surprise' is not in the schema"));
  CHECK(mentions(errors, "/runs/0/violations/0/kind: \"weird\" is not one of"));
  CHECK(mentions(errors, "/: missing member 'options'"));
}

TEST_CASE("report schema: the top level is open, so check and replay can add their sections") {
  auto report = runReportOf("dedup-valkey-after-SET3.history.json", "wallet");
  report["command"] = "check";
  report["verdict"] = "flaky";
  report["check"] = {{"runs", 10}, {"anything", {{"nested", true}}}};
  report["timings"]["search_ms"] = 12;
  CHECK(SchemaValidator(reportSchema()).errors(report).empty());
  report.erase("check");
  CHECK(mentions(SchemaValidator(reportSchema()).errors(report), "missing member 'check'"));
}

TEST_CASE("report schema: the op types and their values are the history's (history/history.h)") {
  const json& schema = reportSchema();
  std::set<std::string> inSchema;
  for (const auto& t : schema["$defs"]["op"]["properties"]["type"]["enum"]) inSchema.insert(t.get<std::string>());
  std::set<std::string> inHistory;
  for (size_t i = 0; i < std::variant_size_v<idem::Record>; ++i) {
    idem::Record r;
    switch (i) { // one default record of each alternative
    case 0: r = idem::ops::Plan{}; break;
    case 1: r = idem::ops::Initial{}; break;
    case 2: r = idem::ops::Send{}; break;
    case 3: r = idem::ops::Spawn{}; break;
    case 4: r = idem::ops::Step{}; break;
    case 5: r = idem::ops::FaultOp{}; break;
    case 6: r = idem::ops::Exit{}; break;
    case 7: r = idem::ops::Note{}; break;
    case 8: r = idem::ops::Opaque{}; break;
    case 9: r = idem::ops::Stall{}; break;
    case 10: r = idem::ops::Escape{}; break;
    case 11: r = idem::ops::Final{}; break;
    case 12: r = idem::ops::Error{}; break;
    case 13: r = idem::ops::Request{}; break;
    case 14: r = idem::ops::Response{}; break;
    case 15: r = idem::ops::Call{}; break;
    }
    REQUIRE(r.index() == i);
    inHistory.insert(idem::typeOf(r));
    CHECK(schema["$defs"].contains(std::string("op_") + idem::typeOf(r)));
  }
  CHECK(inSchema == inHistory);
}

TEST_CASE("report schema: the anti-pattern ids are the classifiers' (checkers.h patternName) and docs/report.md's") {
  std::set<std::string> inSchema;
  for (const auto& id : reportSchema()["$defs"]["pattern"]["properties"]["id"]["enum"]) inSchema.insert(id.get<std::string>());
  REQUIRE_FALSE(inSchema.empty());
  // The table of docs/report.md, "Anti-patterns": one row per id, "| `ID` | NAME | …".
  std::ifstream in(std::filesystem::path(IDEM_SOURCE_DIR) / "docs" / "report.md");
  std::map<std::string, std::string> inDocs;
  bool table = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("### Anti-patterns", 0) == 0) table = true;
    else if (table && line.rfind("### ", 0) == 0) break;
    if (!table || line.rfind("| `", 0) != 0 || line.rfind("| `id` |", 0) == 0) continue; // not the header
    const size_t close = line.find('`', 3);
    const size_t bar = line.find(" | ", close);
    const size_t next = line.find(" |", bar + 3);
    REQUIRE(bar != std::string::npos);
    inDocs[line.substr(3, close - 3)] = line.substr(bar + 3, next - bar - 3);
  }
  for (const auto& id : inSchema) {
    INFO(id);
    CHECK_FALSE(idem::patternName(id).empty());
    REQUIRE(inDocs.count(id));
    CHECK(inDocs[id] == idem::patternName(id));
  }
  CHECK(inDocs.size() == inSchema.size());
}
