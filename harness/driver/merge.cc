/// idemproof merge: the report.json of every shard of one check read back (report/merge.h joins them),
/// each shard's logs and counterexample copied under shard-I/ of the output folder, and the merged
/// report.json, report.html and JUnit written there. Exit status as the unsharded check's.
#include "driver/commands.h"
#include "driver/compare.h"

#include "core/error.h"
#include "report/check_section.h"
#include "report/compare_section.h"
#include "report/junit.h"
#include "report/merge.h"
#include "report/report.h"
#include "report/shard_section.h"
#include "report/sweep_section.h"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <optional>

namespace idem {

namespace fs = std::filesystem;

namespace {

fs::path folderOf(const std::string& arg) {
  fs::path p(arg);
  std::error_code ec;
  return fs::is_directory(p, ec) ? p : p.parent_path();
}

/// The folder `p` names, resolved (symbolic links, "..") as far as it exists.
fs::path resolved(const fs::path& p) {
  std::error_code ec;
  fs::path r = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? fs::absolute(p).lexically_normal() : r;
}

bool within(const fs::path& inner, const fs::path& outer) {
  auto rel = inner.lexically_relative(outer);
  return !rel.empty() && *rel.begin() != "..";
}

/// What merge copies from a shard's folder: the regular files of logs/ and schedules/ (compare's cells'
/// examples) and its counterexample.json, relative
/// to the folder. A shard folder holds only what idemproof wrote: a symbolic link anywhere in what merge
/// copies (it could name /etc/shadow or a folder outside), or anything but files and folders, is refused.
std::vector<fs::path> shardFiles(const fs::path& folder) {
  auto refuse = [&](const fs::path& p, const char* why) {
    return UsageError(fmt::format("merge: {} is {}: a shard's folder holds only the files idemproof wrote", p.string(), why));
  };
  std::vector<fs::path> files;
  std::error_code ec;
  for (const char* name : {"logs", "schedules", "counterexample.json"}) {
    const fs::path top = folder / name;
    auto st = fs::symlink_status(top, ec);
    if (ec || st.type() == fs::file_type::not_found) continue;
    if (st.type() == fs::file_type::symlink) throw refuse(top, "a symbolic link");
    if (st.type() == fs::file_type::regular) {
      files.push_back(name);
      continue;
    }
    if (st.type() != fs::file_type::directory) throw refuse(top, "not a file nor a folder");
    for (auto it = fs::recursive_directory_iterator(top, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      auto t = it->symlink_status(ec).type();
      if (t == fs::file_type::symlink) throw refuse(it->path(), "a symbolic link");
      if (t == fs::file_type::regular) files.push_back(it->path().lexically_relative(folder));
      else if (t != fs::file_type::directory) throw refuse(it->path(), "not a file nor a folder");
    }
    if (ec) throw UsageError(fmt::format("merge: cannot read {}: {}", top.string(), ec.message()));
  }
  return files;
}

void copyShardFiles(const fs::path& from, const std::vector<fs::path>& files, const fs::path& to) {
  fs::create_directories(to);
  for (const auto& rel : files) {
    fs::create_directories((to / rel).parent_path());
    // No symbolic link is followed: the files were checked (shardFiles) and are copied as the files they are.
    fs::copy_file(from / rel, to / rel, fs::copy_options::overwrite_existing);
  }
  std::error_code ec;
  if (fs::is_regular_file(from / "report.json", ec))
    fs::copy_file(from / "report.json", to / "report.json", fs::copy_options::overwrite_existing, ec);
}

} // namespace

int mergeCommand(const MergeArgs& args) {
  if (args.reportDirGiven && args.reportDir.empty()) throw UsageError("--report: an empty path names no folder");
  const fs::path out = args.reportDir.empty() ? fs::current_path() / "reports" / "latest" : fs::path(args.reportDir);
  std::vector<ShardReport> shards;
  for (const auto& d : args.dirs) shards.push_back(readShard(d));
  // merge writes only outside its inputs: not into a shard's folder, nor into one that holds a shard.
  const fs::path outDir = resolved(out);
  const fs::path junit = args.junit.empty() ? fs::path() : resolved(args.junit);
  for (const auto& d : args.dirs) {
    const fs::path shard = resolved(folderOf(d));
    if (outDir == shard || within(outDir, shard) || within(shard, outDir))
      throw UsageError(fmt::format("merge: --report {} is {} {}; name a folder apart from the shards", out.string(),
                                   outDir == shard ? "the shard folder" : within(outDir, shard) ? "inside the shard folder"
                                                                                                : "a folder holding the shard folder",
                                   d));
    if (!junit.empty() && within(junit, shard))
      throw UsageError(fmt::format("merge: --junit {} is inside the shard folder {}; name a file apart from the shards",
                                   args.junit, d));
  }
  nlohmann::json merged = mergeReports(shards);
  std::vector<std::vector<fs::path>> files;
  for (const auto& d : args.dirs) files.push_back(shardFiles(folderOf(d)));
  fs::create_directories(out);
  for (size_t k = 0; k < shards.size(); ++k) {
    const int i = shards[k].report.at("shard").get<ShardSection>().index;
    copyShardFiles(folderOf(args.dirs[k]), files[k], out / shardFolder(i));
  }
  if (merged.contains("compare")) { // each cell's replay command names the copy of its schedule beside the merged report
    CompareSection compare = merged["compare"].get<CompareSection>();
    for (size_t k = 0; k < shards.size(); ++k) {
      const int i = shards[k].report.at("shard").get<ShardSection>().index;
      const std::string old = (fs::absolute(folderOf(args.dirs[k])) / "schedules").lexically_normal().string() + "/";
      const std::string copy = (fs::absolute(out) / shardFolder(i) / "schedules").lexically_normal().string() + "/";
      for (auto& c : compare.cells)
        if (c.replay)
          if (auto pos = c.replay->find(old); pos != std::string::npos) c.replay->replace(pos, old.size(), copy);
    }
    merged["compare"] = compare;
  }
  std::optional<CheckSection> check;
  if (merged.contains("check")) check = merged["check"].get<CheckSection>();
  if (check && check->counterexample) { // the replay command names the copy beside the merged report
    CounterexampleSection& cx = *check->counterexample;
    const std::string copy = (out / cx.file).lexically_normal().string();
    std::string old;
    for (const auto& s : shards)
      if (merged["merge"]["picked"] == s.report.at("shard").get<ShardSection>().index)
        if (const auto own = s.report.at("check").get<CheckSection>().counterexample) old = own->file;
    if (auto pos = cx.replayCommand.find(old); !old.empty() && pos != std::string::npos) cx.replayCommand.replace(pos, old.size(), copy);
    cx.file = copy;
    merged["check"] = *check;
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
  if (command == "check" && check) {
    const CheckSection& c = *check;
    if (c.counterexample) {
      std::cout << fmt::format("  counterexample (shard {}): {}\n", merged["merge"]["picked"].get<int>(), c.counterexample->summary);
      std::cout << "  replay: " << c.counterexample->replayCommand << "\n";
    }
    for (const auto& n : c.notes) std::cout << "  note: " << n << "\n";
    std::cout << fmt::format("{}: {} runs ({} passed, {} failed, {} unknown, {} errors); {} of {} faults fired\n", verdict,
                             c.runs, c.passed, c.failed, c.unknown, c.errors, c.coverageSummary.fired,
                             c.coverageSummary.planned);
  } else if (command == "sweep") {
    const SweepSection w = merged.at("sweep").get<SweepSection>();
    if (w.interleave) {
      size_t cells = 0;
      for (const auto& row : w.interleave->rows) cells += row.cells.size();
      std::cout << fmt::format("{}: {} hold points × c2's steps, {} runs, {} failed, {} not fired, {} unknown\n", verdict,
                               w.interleave->rows.size(), cells, w.failed, w.notFired, w.unknown);
    } else {
      std::cout << fmt::format("{}: {} faults run{}, {} failed, {} not fired, {} unknown\n", verdict, w.points.size(),
                               w.reduced ? fmt::format(" (reduced: {} of {} points, {} classes)", w.selectedPoints,
                                                       w.tracePoints, w.classes) : "",
                               w.failed, w.notFired, w.unknown);
    }
  } else {
    const CompareSection c = merged.at("compare").get<CompareSection>();
    std::cout << compare::terminalTable(c);
    int failing = 0;
    for (const auto& t : c.targets) failing += t.verdict == Verdict::Fail;
    std::cout << fmt::format("{}: {} of {} targets fail a class\n", verdict, failing, c.targets.size());
  }
  std::cout << "report: " << path << "\n";
  return mergedExitStatus(merged);
}

} // namespace idem
