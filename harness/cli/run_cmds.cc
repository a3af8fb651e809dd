#include "cli/cli.h"

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
  run->add_option("--restart", runArgs.restart, "how a killed consumer restarts: new-name or same-name")
      ->check(CLI::IsMember({"new-name", "same-name"}))->capture_default_str();
  run->final_callback([&handler] { handler = [] { return runCommand(finish(runCommon), runArgs); }; });

  static CommonArgs sweepCommon;
  auto* sweep = app.add_subcommand("sweep", "a fault before and after every step of the default schedule (a kill "
                                             "unless --faults)");
  addCommon(*sweep, sweepCommon, false);
  addFaults(*sweep, sweepCommon, "fault kinds to sweep, e.g. drop or kill,drop,error,delay,forget (default: kill)");
  sweep->final_callback([&handler] { handler = [] { return sweepCommand(finish(sweepCommon)); }; });
}

} // namespace idem::cli
