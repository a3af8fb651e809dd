#pragma once
/// The stream loop shared by the reference consumers (see docs/target-contract.md). A consumer is a
/// handler for one stream entry; this library does the rest, with a fixed, minimal set of round trips:
///
///   start:  XREADGROUP GROUP $GROUP $CONSUMER COUNT 10 STREAMS $STREAM <cursor>   (own pending list;
///           the cursor starts at 0 and moves past each batch, until a batch has fewer than 10 entries)
///   loop:   XAUTOCLAIM $STREAM $GROUP $CONSUMER $CLAIM_IDLE_MS <cursor> COUNT 10 (cursor starts at 0-0,
///           then follows the reply)  -> handle each claimed entry
///           XREADGROUP GROUP $GROUP $CONSUMER COUNT 10 BLOCK 100 STREAMS $STREAM > -> handle each entry
///   entry:  handler(entry); XACK $STREAM $GROUP <id> unless the handler says LeavePending
///
/// SIGTERM sets a flag checked between entries and between reads (a read blocks at most 100 ms), and the
/// loop returns: the process exits 0. Any error (server, connection, missing field) throws; consumerMain
/// prints it to stderr and returns 1. There are no retries and no background traffic.
#include "valkey.h"

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idem::targets {

/// The process's settings, from the environment the harness gives (VALKEY_URL, else REDIS_URL).
struct Config {
  std::string databaseUrl;
  std::string valkeyUrl;
  std::string stream;
  std::string group;
  std::string consumer;
  std::string claimIdleMs;
};

/// Reads Config from the environment. Throws std::runtime_error naming a missing variable.
Config configFromEnv();

/// One stream entry: its id and its flat field/value pairs.
struct Entry {
  std::string id;
  std::vector<std::pair<std::string, std::string>> fields;

  /// The value of field `name`. Throws std::runtime_error naming the entry and field when absent.
  const std::string& field(std::string_view name) const;
};

/// What the loop does with an entry once its handler returns.
enum class Outcome {
  Ack,          ///< XACK it (its effect is durable, or it is a duplicate to skip)
  LeavePending, ///< leave it pending (misbehaving test consumers; or SIGTERM came before its work was done)
};

using Handler = std::function<Outcome(const Entry&)>;

/// Runs the loop above until SIGTERM; returns normally then. Throws on any error.
void runConsumer(Valkey& valkey, const Config& config, const Handler& handler);

/// True once SIGTERM has arrived.
bool stopRequested();

/// WORK_MS from the environment (default 0): milliseconds of work per entry before its transaction, as an
/// external call would take. Throws std::runtime_error naming it when it is not a number.
long long workMsFromEnv();

/// Sleeps `ms` milliseconds in slices of at most 50 ms unless SIGTERM arrives; true when the full time passed.
bool workFor(long long ms);

/// Installs the SIGTERM flag, runs `body`, and maps the outcome to an exit status: 0 when it returns,
/// 1 (after printing "<name>: <what>" to stderr) when it throws.
int consumerMain(const char* name, const std::function<void()>& body);

/// Parses a decimal integer field; throws std::runtime_error naming the field on anything else.
long long integerField(const Entry& e, std::string_view name);

/// `text` on one line: every run of whitespace (libpq's messages end in a newline and may span several
/// lines) becomes one space, and none is left at either end.
std::string oneLine(std::string_view text);

} // namespace idem::targets
