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
using Event = json::parse_event_t;

/// What a value must be. Int: a whole number within [min, max]; Uint: any unsigned 64-bit whole number.
enum class Type { Int, Uint, Number, String, Bool, Array, Object, ObjectOrNull, StringOrNull };

struct Rule {
  const char* path; ///< JSON pointer; "*" matches every element of an array (or member of an object)
  Type type;
  bool required = false; ///< required when its parent exists
  int64_t min = 0, max = std::numeric_limits<int64_t>::max();
};

/// The fields merge reads (report/merge*.cc, driver/merge.cc), as check, sweep and compare write them.
const std::vector<Rule>& rules() {
  static const std::vector<Rule> r = {
      {"/command", Type::String, true},
      {"/verdict", Type::String},
      {"/error", Type::String},
      {"/seed", Type::Uint, true},
      {"/target", Type::String},
      {"/targets", Type::Array},
      {"/targets/*", Type::String},
      {"/scenario", Type::String},
      {"/options", Type::Object},
      {"/options/workers", Type::Int, false, 0, 1 << 20},
      {"/timings", Type::Object},
      {"/timings/total_ms", Type::Int},
      {"/timings/search_ms", Type::Int},
      {"/timings/schedules", Type::Int},
      {"/runs", Type::Array},
      {"/runs/*", Type::Object},
      {"/runs/*/id", Type::String},
      {"/runs/*/processes", Type::Array},
      {"/runs/*/processes/*", Type::Object},
      {"/runs/*/processes/*/log", Type::StringOrNull},
      {"/violations", Type::Array},
      {"/violations/*", Type::Object},
      {"/violations/*/run", Type::String},
      {"/processes", Type::Array},
      {"/processes/*", Type::Object},
      {"/processes/*/log", Type::StringOrNull},
      {"/shard", Type::Object, true},
      {"/shard/count", Type::Int, true, 1, kMergeMaxShards},
      {"/shard/index", Type::Int, true, 0, kMergeMaxShards - 1},
      {"/shard/baseline", Type::String},
      {"/shard/fail_on_violation", Type::Bool},
      {"/shard/runs", Type::Array},
      {"/shard/runs/*", Type::Object},
      {"/shard/runs/*/run", Type::Int, true, 1, std::numeric_limits<int32_t>::max()},
      {"/shard/runs/*/verdict", Type::String, true},
      {"/shard/runs/*/reason", Type::String},
      {"/shard/runs/*/planned", Type::Array, true},
      {"/shard/runs/*/planned/*", Type::String},
      {"/shard/runs/*/fired", Type::Array, true},
      {"/shard/runs/*/fired/*", Type::String},
      {"/check", Type::Object},
      {"/check/runs", Type::Int},
      {"/check/flaky", Type::Int},
      {"/check/out_of_time", Type::Bool},
      {"/check/counterexample", Type::ObjectOrNull},
      {"/check/counterexample/found", Type::Object, true},
      {"/check/counterexample/found/run", Type::Int, true, 1, std::numeric_limits<int32_t>::max()},
      {"/check/counterexample/flaky", Type::Bool},
      {"/check/counterexample/summary", Type::String},
      {"/check/counterexample/file", Type::String},
      {"/check/counterexample/replay_command", Type::String},
      {"/check/coverage_summary", Type::Object},
      {"/check/coverage_summary/coverage_loss_examples", Type::Array},
      {"/check/coverage_summary/coverage_loss_examples/*", Type::Object},
      {"/check/coverage_summary/coverage_loss_examples/*/run", Type::Int, true},
      {"/sweep", Type::Object},
      {"/sweep/points", Type::Array},
      {"/sweep/points/*", Type::Object},
      {"/sweep/points/*/index", Type::Int, true},
      {"/sweep/points/*/verdict", Type::String, true},
      {"/sweep/points/*/fired", Type::Bool, true},
      {"/sweep/selected_points", Type::Int},
      {"/sweep/trace_points", Type::Int},
      {"/sweep/classes", Type::Int},
      {"/compare", Type::Object},
      {"/compare/cells", Type::Array},
      {"/compare/cells/*", Type::Object},
      {"/compare/cells/*/class", Type::String, true},
      {"/compare/cells/*/target", Type::String, true},
      {"/compare/cells/*/verdict", Type::String, true},
      {"/compare/cells/*/kinds", Type::Array, true},
      {"/compare/cells/*/kinds/*", Type::String},
      {"/compare/cells/*/unknown", Type::Int},
      {"/compare/cells/*/example", Type::String},
      {"/compare/targets", Type::Array},
      {"/compare/targets/*", Type::Object},
      {"/compare/targets/*/name", Type::String, true},
      {"/compare/classes", Type::Array},
      {"/compare/classes/*", Type::Object},
      {"/compare/classes/*/id", Type::String, true},
      {"/compare/classes/*/label", Type::String, true},
      {"/compare/costs", Type::Array},
      {"/compare/costs/*", Type::Object},
      {"/compare/costs/*/target", Type::String, true},
      {"/compare/costs/*/msgs_per_s", Type::Number, true},
      {"/compare/costs/*/round_trips_per_msg", Type::Number, true},
  };
  return r;
}

/// Each command's sections, required in its shards.
const std::vector<std::pair<const char*, std::vector<const char*>>>& sections() {
  static const std::vector<std::pair<const char*, std::vector<const char*>>> s = {
      {"check", {"/check", "/shard/runs"}},
      {"sweep", {"/sweep", "/sweep/points", "/shard/baseline"}},
      {"compare", {"/compare", "/compare/cells", "/compare/targets", "/compare/classes"}}};
  return s;
}

const char* typeName(Type t) {
  switch (t) {
  case Type::Int: return "a whole number";
  case Type::Uint: return "a whole number from 0 to 2^64-1";
  case Type::Number: return "a number";
  case Type::String: return "a string";
  case Type::Bool: return "true or false";
  case Type::Array: return "an array";
  case Type::Object: return "an object";
  case Type::ObjectOrNull: return "an object or null";
  case Type::StringOrNull: return "a string or null";
  }
  return "?";
}

bool typed(const json& v, const Rule& r) {
  switch (r.type) {
  case Type::Int:
    if (!v.is_number_integer()) return false;
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      return u <= static_cast<uint64_t>(r.max) && (r.min <= 0 || u >= static_cast<uint64_t>(r.min));
    }
    return v.get<int64_t>() >= r.min && v.get<int64_t>() <= r.max;
  case Type::Uint: return v.is_number_unsigned();
  case Type::Number: return v.is_number();
  case Type::String: return v.is_string();
  case Type::Bool: return v.is_boolean();
  case Type::Array: return v.is_array();
  case Type::Object: return v.is_object();
  case Type::ObjectOrNull: return v.is_object() || v.is_null();
  case Type::StringOrNull: return v.is_string() || v.is_null();
  }
  return false;
}

std::vector<std::string> split(const std::string& path) {
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
void check(const json& v, const std::vector<std::string>& parts, size_t at, const Rule& rule, const std::string& here,
           const std::string& what) {
  if (at == parts.size()) {
    if (!typed(v, rule)) {
      std::string range = rule.type == Type::Int && (rule.min != 0 || rule.max != std::numeric_limits<int64_t>::max())
                              ? fmt::format(" from {} to {}", rule.min, rule.max) : "";
      throw UsageError(fmt::format("{}: field '{}' must be {}{}, not {}", what, here, typeName(rule.type), range,
                                   v.dump().substr(0, 40)));
    }
    return;
  }
  if (parts[at] == "*") {
    if (!v.is_structured()) return; // the container's own rule says what it must be
    size_t i = 0;
    for (auto it = v.begin(); it != v.end(); ++it, ++i)
      check(*it, parts, at + 1, rule, here + "/" + (v.is_array() ? std::to_string(i) : it.key()), what);
    return;
  }
  if (!v.is_object()) return;
  auto it = v.find(parts[at]);
  if (it == v.end()) {
    if (rule.required && at + 1 == parts.size())
      throw UsageError(fmt::format("{}: field '{}' is missing", what, here + "/" + parts[at]));
    return;
  }
  check(*it, parts, at + 1, rule, here + "/" + parts[at], what);
}

/// Keeps what merge reads, within bounds: the check's run_summaries (a copy of shard.runs) are dropped
/// unbuilt; each entry of shard.runs may hold kMergeMaxRunValues values and the list kMergeMaxRuns entries;
/// the other values may number kMergeMaxValues. What is kept is therefore bounded whatever the file holds
/// (a numeric array: 2 bytes of text a value, 16 once parsed, was 1.96 GB for 100 MB of text).
class Budget {
public:
  explicit Budget(std::string what) : what_(std::move(what)) {}

  bool operator()(int depth, Event ev, json& parsed) {
    const auto d = static_cast<size_t>(depth);
    if (skipAt_ && d > *skipAt_) return true; // inside a discarded container: nothing is built
    skipAt_.reset();
    if (ev == Event::key) {
      frames_.resize(d);
      if (d >= 1) frames_[d - 1].key = parsed.get<std::string>();
      return true;
    }
    if (ev == Event::object_end || ev == Event::array_end) { // the container ending is at depth d
      frames_.resize(d);
      return true;
    }
    frames_.resize(d);
    const std::string at = location(d);
    if (ev == Event::object_start || ev == Event::array_start) {
      if (at == "/check/run_summaries") {
        skipAt_ = d;
        return false;
      }
      frames_.push_back({ev == Event::array_start, ""});
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
  for (const auto& rule : rules()) check(report, split(rule.path), 0, rule, "", what);
  const std::string command = report.at("command").get<std::string>();
  for (const auto& [name, paths] : sections()) {
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
  Budget budget(what);
  json report = readJsonFileFiltered(file, what, kMergeMaxBytes, std::ref(budget));
  checkShardShape(report, what);
  return {dir, std::move(report)};
}

} // namespace idem
