/// A shard's report.json read for merge, as a hostile file may be written: parsed while it is read, the
/// check's second copy of its run list (check.run_summaries, which merge recomputes) never built, every
/// other value counted against a budget that no report idemproof writes comes near, and the fields merge
/// reads checked for type and range (one line naming the file and field) before merge touches them.
#include "report/merge.h"

#include "core/error.h"
#include "core/json_file.h"

#include <fmt/format.h>

#include <sys/stat.h>

#include <limits>
#include <optional>

namespace idem {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ParseEvent = json::parse_event_t;

/// What a value must be. Int: a whole number within [min, max]; Uint: any unsigned 64-bit whole number.
enum class FieldType { Int, Uint, Number, String, Bool, Array, Object, ObjectOrNull, StringOrNull };

struct FieldRule {
  const char* path; ///< JSON pointer; "*" matches every element of an array (or member of an object)
  FieldType type;
  bool required = false; ///< required when its parent exists
  int64_t min = 0, max = std::numeric_limits<int64_t>::max();
};

/// The fields merge reads (report/merge*.cc, driver/merge.cc), as check, sweep and compare write them.
const std::vector<FieldRule>& shardRules() {
  static const std::vector<FieldRule> r = {
      {"/command", FieldType::String, true},
      {"/verdict", FieldType::String},
      {"/error", FieldType::String},
      {"/seed", FieldType::Uint, true},
      {"/target", FieldType::String},
      {"/targets", FieldType::Array},
      {"/targets/*", FieldType::String},
      {"/scenario", FieldType::String},
      {"/options", FieldType::Object},
      {"/options/workers", FieldType::Int, false, 0, 1 << 20},
      {"/timings", FieldType::Object},
      {"/timings/total_ms", FieldType::Int},
      {"/timings/search_ms", FieldType::Int},
      {"/timings/schedules", FieldType::Int},
      {"/runs", FieldType::Array},
      {"/runs/*", FieldType::Object},
      {"/runs/*/id", FieldType::String},
      {"/runs/*/processes", FieldType::Array},
      {"/runs/*/processes/*", FieldType::Object},
      {"/runs/*/processes/*/log", FieldType::StringOrNull},
      {"/violations", FieldType::Array},
      {"/violations/*", FieldType::Object},
      {"/violations/*/run", FieldType::String},
      {"/processes", FieldType::Array},
      {"/processes/*", FieldType::Object},
      {"/processes/*/log", FieldType::StringOrNull},
      {"/shard", FieldType::Object, true},
      {"/shard/count", FieldType::Int, true, 1, kMergeMaxShards},
      {"/shard/index", FieldType::Int, true, 0, kMergeMaxShards - 1},
      {"/shard/command", FieldType::String, true},
      {"/shard/items", FieldType::Int, true},
      {"/shard/baseline", FieldType::String},
      {"/shard/fail_on_violation", FieldType::Bool},
      {"/shard/runs", FieldType::Array},
      {"/shard/runs/*", FieldType::Object},
      {"/shard/runs/*/run", FieldType::Int, true, 1, std::numeric_limits<int32_t>::max()},
      {"/shard/runs/*/verdict", FieldType::String, true},
      {"/shard/runs/*/reason", FieldType::String},
      {"/shard/runs/*/kinds", FieldType::Array},
      {"/shard/runs/*/kinds/*", FieldType::String},
      {"/shard/runs/*/planned", FieldType::Array, true},
      {"/shard/runs/*/planned/*", FieldType::String},
      {"/shard/runs/*/fired", FieldType::Array, true},
      {"/shard/runs/*/fired/*", FieldType::String},
      {"/check", FieldType::Object},
      {"/check/runs", FieldType::Int},
      {"/check/flaky", FieldType::Int},
      {"/check/out_of_time", FieldType::Bool},
      {"/check/counterexample", FieldType::ObjectOrNull},
      {"/check/counterexample/found", FieldType::Object, true},
      {"/check/counterexample/found/run", FieldType::Int, true, 1, std::numeric_limits<int32_t>::max()},
      {"/check/counterexample/flaky", FieldType::Bool},
      {"/check/counterexample/flaky_candidates", FieldType::Int, false, 0},
      {"/check/counterexample/verdicts", FieldType::Array},
      {"/check/counterexample/verdicts/*", FieldType::String},
      {"/check/counterexample/tried", FieldType::Array},
      {"/check/counterexample/tried/*", FieldType::Object},
      {"/check/counterexample/tried/*/what", FieldType::String},
      {"/check/counterexample/tried/*/summary", FieldType::String},
      {"/check/counterexample/tried/*/verdicts", FieldType::Array},
      {"/check/counterexample/tried/*/verdicts/*", FieldType::String},
      {"/check/interrupted", FieldType::StringOrNull},
      {"/check/notes", FieldType::Array},
      {"/check/notes/*", FieldType::String},
      {"/check/runs_requested", FieldType::Int, false, 0},
      {"/check/counterexample/summary", FieldType::String},
      {"/check/counterexample/file", FieldType::String},
      {"/check/counterexample/replay_command", FieldType::String},
      {"/check/coverage_summary", FieldType::Object},
      {"/check/coverage_summary/coverage_loss_examples", FieldType::Array},
      {"/check/coverage_summary/coverage_loss_examples/*", FieldType::Object},
      {"/check/coverage_summary/coverage_loss_examples/*/run", FieldType::Int, true},
      {"/sweep", FieldType::Object},
      {"/sweep/points", FieldType::Array},
      {"/sweep/points/*", FieldType::Object},
      {"/sweep/points/*/index", FieldType::Int, true},
      {"/sweep/points/*/verdict", FieldType::String, true},
      {"/sweep/points/*/fired", FieldType::Bool, true},
      {"/sweep/selected_points", FieldType::Int},
      {"/sweep/trace_points", FieldType::Int},
      {"/sweep/classes", FieldType::Int},
      {"/compare", FieldType::Object},
      {"/compare/cells", FieldType::Array},
      {"/compare/cells/*", FieldType::Object},
      {"/compare/cells/*/class", FieldType::String, true},
      {"/compare/cells/*/target", FieldType::String, true},
      {"/compare/cells/*/verdict", FieldType::String, true},
      {"/compare/cells/*/kinds", FieldType::Array, true},
      {"/compare/cells/*/kinds/*", FieldType::String},
      {"/compare/cells/*/unknown", FieldType::Int},
      {"/compare/cells/*/example", FieldType::String},
      {"/compare/targets", FieldType::Array},
      {"/compare/targets/*", FieldType::Object},
      {"/compare/targets/*/name", FieldType::String, true},
      {"/compare/classes", FieldType::Array},
      {"/compare/classes/*", FieldType::Object},
      {"/compare/classes/*/id", FieldType::String, true},
      {"/compare/classes/*/label", FieldType::String, true},
      {"/compare/costs", FieldType::Array},
      {"/compare/costs/*", FieldType::Object},
      {"/compare/costs/*/target", FieldType::String, true},
      {"/compare/costs/*/msgs_per_s", FieldType::Number, true},
      {"/compare/costs/*/round_trips_per_msg", FieldType::Number, true},
  };
  return r;
}

/// Each command's sections, required in its shards.
const std::vector<std::pair<const char*, std::vector<const char*>>>& shardSections() {
  static const std::vector<std::pair<const char*, std::vector<const char*>>> s = {
      {"check", {"/check", "/shard/runs"}},
      {"sweep", {"/sweep", "/sweep/points", "/shard/baseline"}},
      {"compare", {"/compare", "/compare/cells", "/compare/targets", "/compare/classes"}}};
  return s;
}

const char* fieldTypeName(FieldType t) {
  switch (t) {
  case FieldType::Int: return "a whole number";
  case FieldType::Uint: return "a whole number from 0 to 2^64-1";
  case FieldType::Number: return "a number";
  case FieldType::String: return "a string";
  case FieldType::Bool: return "true or false";
  case FieldType::Array: return "an array";
  case FieldType::Object: return "an object";
  case FieldType::ObjectOrNull: return "an object or null";
  case FieldType::StringOrNull: return "a string or null";
  }
  return "?";
}

bool hasType(const json& v, const FieldRule& r) {
  switch (r.type) {
  case FieldType::Int:
    if (!v.is_number_integer()) return false;
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      return u <= static_cast<uint64_t>(r.max) && (r.min <= 0 || u >= static_cast<uint64_t>(r.min));
    }
    return v.get<int64_t>() >= r.min && v.get<int64_t>() <= r.max;
  case FieldType::Uint: return v.is_number_unsigned();
  case FieldType::Number: return v.is_number();
  case FieldType::String: return v.is_string();
  case FieldType::Bool: return v.is_boolean();
  case FieldType::Array: return v.is_array();
  case FieldType::Object: return v.is_object();
  case FieldType::ObjectOrNull: return v.is_object() || v.is_null();
  case FieldType::StringOrNull: return v.is_string() || v.is_null();
  }
  return false;
}

std::vector<std::string> pointerParts(const std::string& path) {
  std::vector<std::string> parts;
  size_t from = 1;
  while (from <= path.size()) {
    size_t slash = path.find('/', from);
    if (slash == std::string::npos) slash = path.size();
    parts.push_back(path.substr(from, slash - from));
    from = slash + 1;
  }
  return parts;
}

/// Applies `rule` from part `at` of its path on, below `v` (whose pointer is `here`).
void checkRule(const json& v, const std::vector<std::string>& parts, size_t at, const FieldRule& rule, const std::string& here,
           const std::string& what) {
  if (at == parts.size()) {
    if (!hasType(v, rule)) {
      std::string range = rule.type == FieldType::Int && (rule.min != 0 || rule.max != std::numeric_limits<int64_t>::max())
                              ? fmt::format(" from {} to {}", rule.min, rule.max) : "";
      throw UsageError(fmt::format("{}: field '{}' must be {}{}, not {}", what, here, fieldTypeName(rule.type), range,
                                   v.dump().substr(0, 40)));
    }
    return;
  }
  if (parts[at] == "*") {
    if (!v.is_structured()) return; // the container's own rule says what it must be
    size_t i = 0;
    for (auto it = v.begin(); it != v.end(); ++it, ++i)
      checkRule(*it, parts, at + 1, rule, here + "/" + (v.is_array() ? std::to_string(i) : it.key()), what);
    return;
  }
  if (!v.is_object()) return;
  auto it = v.find(parts[at]);
  if (it == v.end()) {
    if (rule.required && at + 1 == parts.size())
      throw UsageError(fmt::format("{}: field '{}' is missing", what, here + "/" + parts[at]));
    return;
  }
  checkRule(*it, parts, at + 1, rule, here + "/" + parts[at], what);
}

/// Keeps what merge reads, within bounds: the check's run_summaries (a copy of shard.runs) are dropped
/// unbuilt; each entry of shard.runs may hold kMergeMaxRunValues values and the list kMergeMaxRuns entries;
/// the other values may number kMergeMaxValues. What is kept is therefore bounded whatever the file holds
/// (a numeric array: 2 bytes of text a value, 16 once parsed, was 1.96 GB for 100 MB of text).
class ShardBudget {
public:
  explicit ShardBudget(std::string what) : what_(std::move(what)) {}

  bool operator()(int depth, ParseEvent ev, json& parsed) {
    const auto d = static_cast<size_t>(depth);
    if (skipAt_ && d > *skipAt_) return true; // inside a discarded container: nothing is built
    skipAt_.reset();
    if (ev == ParseEvent::key) {
      frames_.resize(d);
      if (d >= 1) frames_[d - 1].key = parsed.get<std::string>();
      return location(d) != kSkipped; // a kept key would leave a discarded value in its object
    }
    if (ev == ParseEvent::object_end || ev == ParseEvent::array_end) { // the container ending is at depth d
      frames_.resize(d);
      return true;
    }
    frames_.resize(d);
    const std::string at = location(d);
    if (ev == ParseEvent::object_start || ev == ParseEvent::array_start) {
      if (at == kSkipped) {
        skipAt_ = d;
        return false;
      }
      frames_.push_back({ev == ParseEvent::array_start, ""});
    }
    count(at);
    return true;
  }

private:
  struct Frame {
    bool array = false;
    std::string key;
  };

  /// The pointer of a value at depth d ("*" for an array's elements).
  std::string location(size_t d) const {
    std::string p;
    for (size_t i = 0; i < d && i < frames_.size(); ++i) p += "/" + (frames_[i].array ? std::string("*") : frames_[i].key);
    return p;
  }

  void count(const std::string& at) {
    static const std::string runs = "/shard/runs/*";
    if (at == runs) {
      runValues_ = 0;
      if (++runEntries_ > kMergeMaxRuns)
        throw UsageError(fmt::format("{}: field '/shard/runs' lists more than the {} runs a check makes", what_, kMergeMaxRuns));
    }
    if (at.compare(0, runs.size(), runs) == 0) {
      if (++runValues_ > kMergeMaxRunValues)
        throw UsageError(fmt::format("{}: an entry of field '/shard/runs' holds more than the {} values idemproof writes "
                                     "in one", what_, kMergeMaxRunValues));
      return;
    }
    if (++values_ > kMergeMaxValues)
      throw UsageError(fmt::format("{}: holds more than the {} values besides its run list that merge reads from one "
                                   "shard (about 100 MB of a report as idemproof writes it): shard the run finer",
                                   what_, kMergeMaxValues));
  }

  static constexpr const char* kSkipped = "/check/run_summaries";
  std::string what_;
  std::vector<Frame> frames_;
  std::optional<size_t> skipAt_;
  size_t values_ = 0, runEntries_ = 0, runValues_ = 0;
};

} // namespace

void checkShardShape(const json& report, const std::string& what) {
  if (!report.is_object()) throw UsageError(fmt::format("{}: is not a report (a JSON object)", what));
  if (!report.contains("shard"))
    throw UsageError(fmt::format("{} is not the report of a shard (run check, sweep or compare with --shard I/N)", what));
  for (const auto& rule : shardRules()) checkRule(report, pointerParts(rule.path), 0, rule, "", what);
  const std::string command = report.at("command").get<std::string>();
  for (const auto& [name, paths] : shardSections()) {
    if (command != name) continue;
    for (const char* p : paths)
      if (!report.contains(json::json_pointer(p)))
        throw UsageError(fmt::format("{}: field '{}' is missing (a shard of {} has it)", what, p, command));
  }
  const int64_t index = report.at("/shard/index"_json_pointer).get<int64_t>();
  const int64_t count = report.at("/shard/count"_json_pointer).get<int64_t>();
  if (index >= count)
    throw UsageError(fmt::format("{}: field '/shard/index' is {}, not below the number of shards {}", what, index, count));
}

ShardReport readShard(const std::string& dir) {
  fs::path folder(dir), file;
  struct stat st {};
  if (::stat(folder.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) file = folder / "report.json";
  else file = folder;
  const std::string what = "merge: " + file.string();
  // The report itself must be a file of the shard, not a link to one elsewhere (or to itself).
  if (::lstat(file.c_str(), &st) != 0) throw UsageError(fmt::format("merge: {} holds no report.json", dir));
  if (S_ISLNK(st.st_mode))
    throw UsageError(fmt::format("{} is a symbolic link: a shard's report.json must be the file idemproof wrote", what));
  ShardBudget budget(what);
  json report = readJsonFileFiltered(file, what, kMergeMaxBytes, std::ref(budget));
  checkShardShape(report, what);
  return {dir, std::move(report)};
}

} // namespace idem
