/// idemproof: the command line. Every judging command takes the same target, scenario, server and
/// report flags; exit status 0 pass, 1 fail, 2 cannot be judged (bad input, a server or target that
/// cannot start, an unknown result).
#include "cli/cli.h"
#include "core/error.h"
#include "core/cleanup.h"
#include "core/owner.h"
#include "core/terminal.h"

#include <iostream>
#include <string>

#include <signal.h>
#include <unistd.h>

namespace {

/// An error is one line: a newline in the data it quotes (a flag's value, a manifest's key) is shown as \n.
std::string oneLine(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  for (size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 2)) text.replace(at, 1, "\\n");
  return text;
}

} // namespace

int main(int argc, char** argv) {
  using namespace idem;
  // Output to a reader that went away (`idemproof check … | head`) must not kill idemproof before its
  // clean-up, its report and its exit status: the write fails instead, and the command goes on. (Children
  // get SIGPIPE's default back: core/child.cc.)
  ::signal(SIGPIPE, SIG_IGN);
  Cleanup::installSignalHandlers();
  escapeStandardStreams(); // nothing printed from data drives the terminal (core/terminal.h)
  becomeSubreaper(); // what a consumer starts and leaves behind comes back to idemproof (core/owner.h)
  CLI::App app{"idemproof: proves a message consumer idempotent under crashes, retries and reordering, "
               "or finds the schedule that breaks it"};
  app.set_version_flag("--version", std::string("idemproof ") + IDEM_VERSION + " (commit " + IDEM_COMMIT + ")");
  app.require_subcommand(1);
  cli::Handler handler;
  cli::addRunCommands(app, handler);
  cli::addReportCommands(app, handler);
  cli::addCheckCommands(app, handler);

  int rc = 2;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "idemproof: " << oneLine(e.what()) << " (see idemproof --help)\n";
    Cleanup::instance().runAll();
    return 2;
  }
  std::string error;
  try {
    rc = handler ? handler() : 2;
  } catch (const UsageError& e) {
    error = e.what();
    rc = 2;
  } catch (const std::exception& e) {
    error = std::string("internal error: ") + e.what();
    rc = 2;
  }
  // Interrupted: the signal thread is cleaning up and exits with 128+signal; what failed here because
  // it pulled the servers away is not news.
  if (Cleanup::interrupted()) pause();
  if (!error.empty()) std::cerr << "idemproof: " << oneLine(error) << "\n";
  Cleanup::instance().runAll();
  return rc;
}
