/// idemproof: the command line. Every judging command takes the same target, scenario, server and
/// report flags; exit status 0 pass, 1 fail, 2 cannot be judged (bad input, a server or target that
/// cannot start, an unknown result).
#include "cli/cli.h"
#include "core/error.h"
#include "core/process.h"

#include <iostream>

int main(int argc, char** argv) {
  using namespace idem;
  Cleanup::installSignalHandlers();
  CLI::App app{"idemproof: proves a message consumer idempotent under crashes, retries and reordering, "
               "or finds the schedule that breaks it"};
  app.require_subcommand(1);
  cli::Handler handler;
  cli::addRunCommands(app, handler);

  int rc = 2;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "idemproof: " << e.what() << " (see idemproof --help)\n";
    Cleanup::instance().runAll();
    return 2;
  }
  try {
    rc = handler ? handler() : 2;
  } catch (const UsageError& e) {
    std::cerr << "idemproof: " << e.what() << "\n";
    rc = 2;
  } catch (const std::exception& e) {
    std::cerr << "idemproof: internal error: " << e.what() << "\n";
    rc = 2;
  }
  Cleanup::instance().runAll();
  return rc;
}
