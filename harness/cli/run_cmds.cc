#include "cli/cli.h"

#include "history/point_class.h"

#include <fmt/format.h>

namespace idem::cli {

void addRunCommands(CLI::App& app, Handler& handler) {
  static CommonArgs runCommon;
  static RunArgs runArgs;
  auto* run = app.add_subcommand("run", "run one schedule (the scenario's default, or --events N) and judge it");
  addCommon(*run, runCommon, false);
  run->add_option("--events", runArgs.events, "generate N events (with --seed) instead of the default schedule")
      ->check(CLI::Range(1, 10000));
  run->add_option("--crash", runArgs.crashes,
                  "fault at a step (repeatable): a kill point before:VERB#k or after:VERB#k, or KIND:before|after:VERB#k"
                  "[:ARG] with KIND drop, delay (ARG: ms), error (ARG: code), forget (docs/faults.md)");
  run->add_option("--consumers", runArgs.consumers,
                  "consumer processes that run at once (c1, c2, ...); a fault cN:before|after:VERB#k counts cN's own "
                  "steps")
      ->check(CLI::Range(1, kMaxConsumers))->capture_default_str();
  run->add_option("--replicas", runArgs.replicas,
                  "HTTP scenarios: server processes that run at once behind the client (s1..sN, each with its own "
                  "PORT); requests go to replica 1 unless the schedule names one")
      ->check(CLI::Range(1, kMaxReplicas))->capture_default_str();
  run->add_option("--restart", runArgs.restart, "how a killed consumer restarts: new-name or same-name")
      ->check(CLI::IsMember({"new-name", "same-name"}))->capture_default_str();
  run->final_callback([&handler] { handler = [] { return runCommand(finish(runCommon), runArgs); }; });

  static CommonArgs sweepCommon;
  auto* sweep = app.add_subcommand("sweep", "a fault before and after every step of the default schedule (a kill "
                                             "unless --faults)");
  addCommon(*sweep, sweepCommon, false);
  addShard(*sweep, sweepCommon, "faults (by index in the sweep's order; the baseline runs in every shard)");
  addFaults(*sweep, sweepCommon, "fault kinds to sweep, e.g. drop or kill,drop,error,delay,forget (default: kill)");
  static SweepArgs sweepArgs;
  sweep->add_option("--events", sweepArgs.events,
                    "sweep a generated schedule of N events (with --seed) instead of the scenario's default one")
      ->check(CLI::Range(1, 10000));
  sweep->add_flag("--exhaustive", sweepArgs.exhaustive,
                  fmt::format("run every point of the trace; by default a trace of more than {} points runs a reduced "
                              "selection: a few points of each class (docs/faults.md, Reduced sweeps)", kSweepReduceAbove));
  sweep->add_option("--reduce-above", sweepArgs.reduceAbove,
                    fmt::format("reduce a trace of more than N points (default {}; 0 reduces every sweep)", kSweepReduceAbove))
      ->check(CLI::Range(0, 1000000));
  sweep->add_option("--trace-from", sweepArgs.traceFrom,
                    "place the faults on the fault-free run in this report (a folder or its report.json, of idemproof "
                    "run without --crash or of a sweep, same schedule) instead of this sweep's own: every shard then "
                    "plans the same faults (docs/scale.md)")
      ->check([](const std::string& v) { return v.empty() ? std::string("an empty path names no report") : std::string(); });
  static bool interleave = false;
  sweep->add_flag("--interleave", interleave,
                  "two consumers: hold c1 at each of its steps until c2 passes each of its steps (a grid; "
                  "docs/faults.md)");
  sweep->final_callback([&handler, sweep] {
    if (interleave && sweep->count("--faults") > 0)
      throw CLI::ValidationError("--interleave", "sweeps holds only; leave out --faults");
    for (const char* flag : {"--events", "--exhaustive", "--reduce-above", "--trace-from"})
      if (interleave && sweep->count(flag) > 0)
        throw CLI::ValidationError("--interleave", fmt::format("has a reduction of its own; leave out {}", flag));
    if (sweep->count("--exhaustive") > 0 && sweep->count("--reduce-above") > 0)
      throw CLI::ValidationError("--exhaustive", "runs every point; leave out --reduce-above");
    handler = [] {
      return interleave ? interleaveCommand(finish(sweepCommon)) : sweepCommand(finish(sweepCommon), sweepArgs);
    };
  });
}

} // namespace idem::cli
