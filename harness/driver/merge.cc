/// idemproof merge: the report.json of every shard of one check read back (report/merge.h joins them),
/// each shard's logs and counterexample copied under shard-I/ of the output folder, and the merged
/// report.json, report.html and JUnit written there. Exit status as the unsharded check's.
#include "driver/commands.h"
#include "driver/compare.h"

#include "core/error.h"
#include "core/json_file.h"
#include "report/junit.h"
#include "report/merge.h"
#include "report/report.h"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>

namespace idem {

namespace fs = std::filesystem;

namespace {

fs::path reportFileOf(const std::string& arg) {
  fs::path p(arg);
  return fs::is_directory(p) ? p / "report.json" : p;
}

fs::path folderOf(const std::string& arg) {
  fs::path p(arg);
  return fs::is_directory(p) ? p : p.parent_path();
}

void copyShardFiles(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  std::error_code ec;
  if (fs::is_directory(from / "logs"))
    fs::copy(from / "logs", to / "logs", fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  for (const char* f : {"counterexample.json", "report.json"})
    if (fs::is_regular_file(from / f)) fs::copy_file(from / f, to / f, fs::copy_options::overwrite_existing, ec);
}

} // namespace

int mergeCommand(const MergeArgs& args) {
  if (args.reportDirGiven && args.reportDir.empty()) throw UsageError("--report: an empty path names no folder");
  const fs::path out = args.reportDir.empty() ? fs::current_path() / "reports" / "latest" : fs::path(args.reportDir);
  std::vector<ShardReport> shards;
  for (const auto& d : args.dirs) {
    fs::path file = reportFileOf(d);
    if (!fs::exists(file)) throw UsageError(fmt::format("merge: {} holds no report.json", d));
    shards.push_back({d, readJsonFile(file, file.string(), uintmax_t(1) << 30)});
  }
  for (const auto& d : args.dirs)
    if (fs::exists(out) && fs::exists(folderOf(d)) && fs::equivalent(out, folderOf(d)))
      throw UsageError(fmt::format("merge: --report {} is one of the shards' folders; name another", out.string()));
  nlohmann::json merged = mergeReports(shards);
  fs::create_directories(out);
  for (size_t k = 0; k < shards.size(); ++k) {
    int i = shards[k].report["shard"]["index"].get<int>();
    copyShardFiles(folderOf(args.dirs[k]), out / shardFolder(i));
  }
  nlohmann::json nothing;
  auto& cx = merged.contains("check") ? merged["check"]["counterexample"] : nothing;
  if (cx.is_object()) { // the replay command names the copy beside the merged report
    std::string copy = (out / cx["file"].get<std::string>()).lexically_normal().string();
    std::string cmd = cx.value("replay_command", "");
    const auto& m = merged["merge"];
    std::string old;
    for (const auto& s : shards)
      if (s.report["shard"]["index"] == m["picked"]) old = s.report["check"]["counterexample"].value("file", "");
    if (auto pos = cmd.find(old); !old.empty() && pos != std::string::npos) cmd.replace(pos, old.size(), copy);
    cx["replay_command"] = cmd;
    cx["file"] = copy;
  }
  std::string path = writeReport(out.string(), merged);
  if (!args.junit.empty()) writeJunit(args.junit, merged);

  const std::string command = merged.value("command", "");
  std::cout << fmt::format("merge {} shards of {} {} × {} (seed {})\n", merged["merge"]["count"].get<int>(), command,
                           command == "compare" ? fmt::format("{} targets", merged["targets"].size()) : merged.value("target", ""),
                           merged.value("scenario", ""), merged["seed"].get<uint64_t>());
  for (const auto& s : merged["merge"]["shards"])
    std::cout << fmt::format("  shard {}: {}, {} {}{}\n", s["index"].get<int>(), s["verdict"].get<std::string>(),
                             s["runs"].get<int>(), command == "check" ? "runs" : "schedules",
                             s["counterexample"].is_null() ? ""
                                                           : fmt::format("; first failure at run {}", s["counterexample"]["run"].get<int64_t>()));
  const std::string verdict = merged["verdict"];
  if (command == "check") {
    const auto& c = merged["check"];
    const auto& cs = c["coverage_summary"];
    if (cx.is_object()) {
      std::cout << fmt::format("  counterexample (shard {}): {}\n", merged["merge"]["picked"].get<int>(), cx.value("summary", ""));
      std::cout << "  replay: " << cx.value("replay_command", "") << "\n";
    }
    for (const auto& n : c["notes"]) std::cout << "  note: " << n.get<std::string>() << "\n";
    std::cout << fmt::format("{}: {} runs ({} passed, {} failed, {} unknown, {} errors); {} of {} faults fired\n", verdict,
                             c["runs"].get<int>(), c["passed"].get<int>(), c["failed"].get<int>(), c["unknown"].get<int>(),
                             c["errors"].get<int>(), cs["fired"].get<int>(), cs["planned"].get<int>());
  } else if (command == "sweep") {
    const auto& w = merged["sweep"];
    const bool reduced = w.value("reduced", false);
    std::cout << fmt::format("{}: {} faults run{}, {} failed, {} not fired, {} unknown\n", verdict, w["points"].size(),
                             reduced ? fmt::format(" (reduced: {} of {} points, {} classes)", w.value("selected_points", 0),
                                                   w.value("trace_points", 0), w.value("classes", 0)) : "",
                             w["failed"].get<int>(), w["not_fired"].get<int>(), w["unknown"].get<int>());
  } else {
    std::cout << compare::terminalTable(merged["compare"]);
    int failing = 0;
    for (const auto& t : merged["compare"]["targets"]) failing += t["verdict"] == "fail";
    std::cout << fmt::format("{}: {} of {} targets fail a class\n", verdict, failing, merged["compare"]["targets"].size());
  }
  std::cout << "report: " << path << "\n";
  return mergedExitStatus(merged);
}

} // namespace idem
