#pragma once
/// The command line, one file per group of commands. Each group registers its subcommands on the app
/// and, when one of them is chosen, sets `handler` to the function that runs it (returning the exit
/// status). Flags shared by every judging command are added by addCommon().
#include "driver/commands.h"

#include <CLI/CLI.hpp>

#include <functional>

namespace idem::cli {

using Handler = std::function<int()>;

/// Adds --target, --scenario, --report, --database-url, --valkey-url, --seed, --workers,
/// --claim-idle-ms, --deadline, --stall-timeout, --grace, --sink-policy.
void addCommon(CLI::App& cmd, CommonArgs& a, bool manyTargets);
/// --seed, read as an unsigned 64-bit number (a negative or larger value is an error, never wrapped).
void addSeed(CLI::App& cmd, CommonArgs& a);
/// --shard I/N | auto/N (check, sweep, compare): `what` names the items split ("schedules").
void addShard(CLI::App& cmd, CommonArgs& a, const std::string& what);
/// --sink-policy honour|ignore (every command that runs schedules; addCommon adds it).
void addSinkPolicy(CLI::App& cmd, CommonArgs& a);
/// --report DIR and --junit FILE.
void addOutputs(CLI::App& cmd, CommonArgs& a);
/// --faults KIND,KIND...: fault kinds (registered ones only), `help` says the command's default.
void addFaults(CLI::App& cmd, CommonArgs& a, const std::string& help);
/// Moves parsed durations into `a`; call in the handler before using `a`.
CommonArgs& finish(CommonArgs& a);

void addRunCommands(CLI::App& app, Handler& handler);   ///< run, sweep (run_cmds.cc)
void addReportCommands(CLI::App& app, Handler& handler); ///< compare, demo, merge, explain (report_cmds.cc)
void addCheckCommands(CLI::App& app, Handler& handler);  ///< check, replay (check_cmds.cc)

} // namespace idem::cli
