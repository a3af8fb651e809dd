/// error: answer the step's request with a server error instead of its result. The server's state
/// afterwards is what the client is told (docs/faults.md):
///
///   PostgreSQL 40001 serialization_failure, 40P01 deadlock_detected: the statement does nothing, and a
///     transaction it was part of is aborted on the server too (the proxy sends the server a statement that
///     raises this very error, so ReadyForQuery says 'E' and a later COMMIT rolls back);
///   PostgreSQL 57P01 admin_shutdown: FATAL, the session ends; an open transaction rolls back;
///   PostgreSQL 53300 too_many_connections, at CONNECT#k (the k-th PostgreSQL connection of the run): FATAL
///     to the startup packet, the server never sees the connection;
///   Valkey LOADING, BUSY, OOM, READONLY, NOGROUP: the command is not executed (the group stays: a
///     transient NOGROUP, as a replica that has not seen XGROUP CREATE yet answers);
///   Kafka REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION (what an OffsetCommit of a revoked
///     member gets), NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
///     NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT: the broker's own answer to the request with that code, the
///     request not executed.
///
///   the sink (HTTP): a status 500 to 599, answered by the proxy with a small JSON body. `before:` the call
///     is not forwarded (no execution); `after:` it was forwarded and executed, and its answer is replaced.
///
/// `before:` only, except at the sink's CALL steps — an error after the request took effect would tell the
/// client something that is not so; a provider that charged and then answered 500 is what `after:CALL#k`
/// plays. At a CALL step an error without CODE is 503 before and 500 after.
/// Without CODE (`error:before:COMMIT#1`) the error is the step's server's transient one: 40001 on
/// PostgreSQL (57P01 at a statement on no data, 40P01 at a blocking advisory lock call, 53300 at CONNECT:
/// defaultError), LOADING on Valkey, on Kafka
/// the broker's for that request (REBALANCE_IN_PROGRESS for a group request or an offset commit,
/// COORDINATOR_LOAD_IN_PROGRESS for an offset fetch, NOT_LEADER_OR_FOLLOWER for a fetch, produce or offset
/// list) — what sweep and check use, since a verb alone does not name its server.
#include "plan/faults/kinds.h"
#include "plan/advisory_lock.h"

#include "core/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <set>
#include <stdexcept>
#include <vector>

namespace idem::faults {

struct ServerError {
  const char* code;
  const char* server;
  const char* message;
  bool fatal;
};

namespace {

constexpr std::array<ServerError, 20> kErrors{{
    {"40001", "pg", "could not serialize access due to concurrent update", false},
    {"40P01", "pg", "deadlock detected", false},
    {"57P01", "pg", "terminating connection due to administrator command", true},
    {"53300", "pg", "sorry, too many clients already", true},
    {"LOADING", "valkey", "the server is loading the dataset in memory", false},
    {"BUSY", "valkey", "the server is busy running a script", false},
    {"OOM", "valkey", "command not allowed when used memory > 'maxmemory'", false},
    {"READONLY", "valkey", "You can't write against a read only replica.", false},
    {"NOGROUP", "valkey", "No such key or consumer group", false},
    // Kafka: the code in the broker's own answer to the request (on each partition, the group, the
    // transaction), the request not executed; what a broker answers in a rebalance, a coordinator move or
    // a leader change.
    {"REBALANCE_IN_PROGRESS", "kafka", "The group is rebalancing, so a rejoin is needed.", false},
    {"UNKNOWN_MEMBER_ID", "kafka", "The coordinator is not aware of this member.", false},
    {"ILLEGAL_GENERATION", "kafka", "Specified group generation id is not valid.", false},
    {"NOT_COORDINATOR", "kafka", "This is not the correct coordinator.", false},
    {"COORDINATOR_LOAD_IN_PROGRESS", "kafka", "The coordinator is loading and hence can't process requests.", false},
    {"COORDINATOR_NOT_AVAILABLE", "kafka", "The coordinator is not available.", false},
    {"NOT_LEADER_OR_FOLLOWER", "kafka", "This server is not the leader for that topic-partition.", false},
    {"REQUEST_TIMED_OUT", "kafka", "The request timed out.", false},
    // NATS: the server refuses a publish (a pull request, an acknowledgement) as its permissions would;
    // the message is dropped, the connection stays.
    {"PERMISSIONS_VIOLATION", "nats", "Permissions Violation for Publish", false},
    // RabbitMQ: a connection.close in the broker's name (AMQP's errors end the channel or the connection).
    {"CONNECTION_FORCED", "rabbitmq", "broker forced connection closure with reason 'shutdown'", true},
    {"INTERNAL_ERROR", "rabbitmq", "internal error", true},
}};

/// The named errors' codes, in the table's order.
std::vector<std::string> namedCodes() {
  std::vector<std::string> codes;
  for (const auto& e : kErrors) codes.push_back(e.code);
  return codes;
}

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

} // namespace

/// The sink's errors: an HTTP status of three digits, 500 to 599 (as SQLSTATE codes are PostgreSQL's).
const ServerError* httpError(const std::string& code) {
  static const std::vector<ServerError> table = [] {
    static std::vector<std::string> codes;
    codes.reserve(100);
    std::vector<ServerError> t;
    for (int status = 500; status <= 599; ++status) {
      codes.push_back(std::to_string(status));
      const char* text = status == 500   ? "Internal Server Error"
                         : status == 502 ? "Bad Gateway"
                         : status == 503 ? "Service Unavailable"
                         : status == 504 ? "Gateway Timeout"
                                         : "Server Error";
      t.push_back({codes.back().c_str(), "sink", text, false});
    }
    return t;
  }();
  if (code.size() != 3 || code[0] != '5' || !std::isdigit(static_cast<unsigned char>(code[1])) ||
      !std::isdigit(static_cast<unsigned char>(code[2])))
    return nullptr;
  return &table[static_cast<size_t>(std::stoi(code) - 500)];
}

const ServerError* findError(const std::string& code) {
  for (const auto& e : kErrors)
    if (upper(code) == e.code) return &e;
  return httpError(code);
}

namespace {

/// A round trip of the extended protocol that only closes statements or portals (CLOSE: closing one that does
/// not exist is no error either) or only syncs (SYNC): PostgreSQL fails it only by ending the session, and a
/// client need not wait for its answer — tokio-postgres sends a Close when it drops a statement and discards
/// what comes back — so a transient error there aborted a transaction unseen, and the COMMIT after it rolled
/// back without an error.
bool closesOrSyncsOnly(const std::string& verb) { return verb == "CLOSE" || verb == "SYNC"; }

class ErrorReply : public FaultKind {
public:
  std::string name() const override { return "error"; }
  std::string usage() const override {
    return fmt::format("error:before|after:VERB#k[:CODE]   answer a server error instead of the result (CODE: {}; "
                       "500 to 599 at the sink's CALL#k, also after; 53300 at CONNECT#k; default 40001 on "
                       "PostgreSQL, LOADING on Valkey, the request's transient one on Kafka, 503 before and 500 "
                       "after a CALL)",
                       fmt::join(namedCodes(), ", "));
  }
  void check(const Fault& f, const std::string& what) const override {
    // After a step, only at the sink's CALL steps: a provider may execute a call and still answer an error.
    const char* why = "an error after the request took effect would not be what the server did (only a CALL step "
                      "of the sink may answer an error after executing)";
    if (f.verb != "CALL") requireWhen(f, When::Before, what, why);
    if (f.args.empty()) return;
    requireArgs(f, 1, what, "error:before|after:VERB#k[:CODE]");
    const ServerError* e = findError(f.args[0]);
    if (!e) {
      std::vector<std::string> codes = namedCodes();
      codes.push_back("500 to 599 (HTTP, the sink)");
      throw UsageError(fmt::format("{}: no error '{}' (errors: {})", what, f.args[0], fmt::join(codes, ", ")));
    }
    // A number of three digits is the sink's HTTP status, answered only at its CALL steps: anywhere else the
    // fault would never be applied, and the run would end unknown for a fault that "never fired".
    if (std::string(e->server) == "sink" && f.verb != "CALL")
      throw UsageError(fmt::format("{}: {} is an HTTP status, which only the sink's CALL steps answer; at {} give "
                                   "the server's own error by name (RabbitMQ: CONNECTION_FORCED for 320, "
                                   "INTERNAL_ERROR for 541; errors: {})",
                                   what, f.args[0], f.verb, fmt::join(namedCodes(), ", ")));
    if (closesOrSyncsOnly(f.verb) && std::string(e->server) == "pg" && !e->fatal)
      throw UsageError(fmt::format("{}: PostgreSQL answers {} with no {} (it fails a Close or a Sync only by ending the "
                                   "session): give 57P01, or leave out the code", what, f.verb, e->code));
    if (f.when == When::After && std::string(e->server) != "sink")
      throw UsageError(fmt::format("{}: {} after a step: only an HTTP status (500 to 599) of the sink may answer "
                                   "after the call executed", what, f.args[0]));
  }
  Effect effect(const Fault& f) const override {
    if (f.args.empty()) return Effect{Effect::Action::Error, {}, {}, {}, {}, false}; // the server's own: defaultError
    const ServerError* e = findError(f.args[0]);
    return Effect{Effect::Action::Error, {}, e->code, e->message, e->server, e->fatal};
  }
  bool atHttpServer() const override { return true; }
  /// Before a step only: an error after the request took effect would not be what the server did.
  std::optional<Fault> sweptAt(const Fault& point, const std::string& server, int) const override {
    if (point.when != When::Before && server != "sink") return std::nullopt;
    Fault f = point;
    f.kind = "error";
    return f;
  }
  std::string phrase(const Fault& f, const std::string& process,
                     const std::function<std::string(const std::string&)>&) const override {
    return process + " got an error answer at " + f.str();
  }
  FaultClass sweepClass(const Fault&) const override {
    return {"error", "error reply",
            "error:before:VERB#k: 40001 serialization_failure on PostgreSQL (57P01 at BEGIN, ROLLBACK, SET: statements on "
            "no data; at a Close or a Sync alone), LOADING on Valkey"};
  }
};

} // namespace

std::unique_ptr<FaultKind> makeError() { return std::make_unique<ErrorReply>(); }

} // namespace idem::faults

namespace idem {

Effect errorEffect(const std::string& code) {
  const faults::ServerError* e = faults::findError(code);
  if (!e) throw std::logic_error("no error " + code + " in the error table");
  return Effect{Effect::Action::Error, {}, e->code, e->message, e->server, e->fatal};
}

namespace {

/// What a SELECT that names no table can fail with, short of its session (""): a blocking advisory lock
/// call waits on a lock, so 40P01 deadlock_detected; a call that waits on nothing and reads no data (a try
/// form, an unlock) and a SELECT of values only (no call: `SELECT 1`) fail only with the session; any other
/// call (a function of the application's, which may read data) 40001.
std::string tablelessSelectError(const std::string& sql) {
  const AdvisoryLockCall lock = advisoryLockCall(sql);
  if (lock.waits) return "40P01";
  if (lock.tries || lock.unlocks || sql.find('(') == std::string::npos) return "";
  return "40001";
}

} // namespace

Effect defaultError(const std::string& server, When when, const std::string& verb, bool namesTables,
                    const std::string& sql) {
  if (server == "sink") return errorEffect(when == When::After ? "500" : "503");
  if (server != "pg") return errorEffect("LOADING");
  // A serialization failure or a deadlock comes from reading or locking data. A statement that touches none
  // fails only with its session: answering BEGIN with 40001 would leave a client in a state no server can
  // put it in (psycopg 3.1 then counts a transaction that never began, and refuses the next one).
  // So does a Close or a Sync alone (faults::closesOrSyncsOnly).
  static const std::set<std::string> sessionOnly{"BEGIN",   "START", "ROLLBACK", "ABORT",   "SAVEPOINT", "RELEASE",
                                                 "SET",     "RESET", "SHOW",     "DISCARD", "DEALLOCATE",
                                                 "LISTEN",  "UNLISTEN"};
  if (verb == "CONNECT") return errorEffect("53300");
  const bool sessionEnds = faults::closesOrSyncsOnly(verb) || (!namesTables && sessionOnly.count(verb) > 0);
  if (sessionEnds) return errorEffect("57P01");
  // A SELECT on no table with its text known: a serialization failure there would be no server's (it reads
  // nothing), and one in place of an unlock keeps a lock no server would have kept. So at the Parse that
  // prepares one (PARSE: its text is the statement's).
  std::string upper = sql;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  // A Parse names no table in its step (tables are decoded where a statement executes): a SELECT with no
  // FROM names none.
  const bool select = verb == "SELECT" || (verb == "PARSE" && upper.rfind("SELECT", 0) == 0 &&
                                           upper.find(" FROM ") == std::string::npos);
  if (select && !namesTables && !sql.empty()) {
    const std::string code = tablelessSelectError(upper);
    return errorEffect(code.empty() ? "57P01" : code);
  }
  return errorEffect("40001");
}

} // namespace idem
