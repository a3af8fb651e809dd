#include "cli/cli.h"

#include "report/explain.h"

#include <iostream>

namespace idem::cli {

void addReportCommands(CLI::App& app, Handler& handler) {
  static CommonArgs compareCommon;
  static CompareArgs compareArgs;
  auto* cmp = app.add_subcommand("compare", "run the same classes of schedules against several targets: a matrix of "
                                            "classes x targets, and each target's cost");
  addCommon(*cmp, compareCommon, true);
  addShard(*cmp, compareCommon, "cells (class x target, targets outer; the fault-free baselines run in every shard)");
  cmp->add_option("--runs", compareArgs.runs, "generated schedules per class (retries, late retries, reordered)")
      ->check(CLI::Range(0, 1000))->capture_default_str();
  addFaults(*cmp, compareCommon, "fault kinds whose classes run besides kill (default: drop,delay,error,forget and, "
                                  "on the embedded servers, age,restart; --faults kill: kills only)");
  cmp->add_option("--per-class", compareArgs.perClass, "faults run per kill or fault class and target (0: every one)")
      ->check(CLI::Range(0, 10000))->capture_default_str();
  cmp->add_option("--events", compareArgs.events, "events of a generated schedule")->check(CLI::Range(2, 10000))
      ->capture_default_str();
  cmp->add_flag("--fail-on-violation", compareArgs.failOnViolation, "exit 1 when a target fails a class (default: exit 0)");
  cmp->final_callback([&handler] { handler = [] { return compareCommand(finish(compareCommon), compareArgs); }; });

  static CommonArgs demoCommon;
  static DemoArgs demoArgs;
  auto* demo = app.add_subcommand("demo", "compare the reference targets on the built-in scenarios on embedded servers; "
                                          "writes reports/latest/report.html");
  addOutputs(*demo, demoCommon);
  addSeed(*demo, demoCommon);
  addSinkPolicy(*demo, demoCommon);
  demo->add_option("--database-url", demoCommon.databaseUrl,
                   "use this PostgreSQL (libpq URI) instead of an embedded one (the restart classes need embedded servers "
                   "and are left out)");
  demo->add_option("--valkey-url", demoCommon.valkeyUrl, "use this Valkey/Redis (redis://host:port/db) instead of an embedded one");
  demo->add_option("--workers", demoCommon.workers, "schedules run in parallel (default: the cores, at most 16)")->check(CLI::Range(1, 16));
  auto* runs = demo->add_option("--runs", demoArgs.runs, "generated schedules per class (--full: 2)")
                   ->check(CLI::Range(0, 1000))->capture_default_str();
  auto* perClass = demo->add_option("--per-class", demoArgs.perClass,
                                    "faults run per kill or fault class and target (0: every one; --full: 2)")
                       ->check(CLI::Range(0, 10000))->capture_default_str();
  demo->add_flag("--full", demoArgs.full,
                 "the complete matrix: every class, 2 schedules of each per target (the default: each fault family once)");
  demo->final_callback([&handler, runs, perClass] {
    if (demoArgs.full && runs->count() == 0) demoArgs.runs = DemoArgs::kFullRuns; // an explicit --runs or --per-class wins
    if (demoArgs.full && perClass->count() == 0) demoArgs.perClass = DemoArgs::kFullPerClass;
    handler = [] { return demoCommand(demoCommon, demoArgs); };
  });

  static MergeArgs mergeArgs;
  auto* merge = app.add_subcommand("merge", "join the reports of the shards of one check, sweep or compare (--shard I/N) "
                                            "into one report.json, report.html and --junit file; exit as the unsharded run");
  merge->add_option("dirs", mergeArgs.dirs, "shard report folders (or their report.json), one per shard")->required();
  merge->add_option("--report", mergeArgs.reportDir, "folder of the merged report (default reports/latest)")
      ->each([](const std::string&) { mergeArgs.reportDirGiven = true; });
  merge->add_option("--junit", mergeArgs.junit, "also write JUnit XML to FILE");
  merge->final_callback([&handler] { handler = [] { return mergeCommand(mergeArgs); }; });

  static std::string explainDir;
  auto* explain = app.add_subcommand("explain", "print, for each failing run of a report, the anti-pattern behind "
                                                "its violations, the steps that show it and the fix");
  explain->add_option("report", explainDir, "a report folder (or its report.json)")->required();
  explain->final_callback([&handler] {
    handler = [] {
      std::cout << explainReport(readReportForExplain(explainDir)) << std::flush;
      return 0;
    };
  });
}

} // namespace idem::cli
