/// PostgreSQL v3 tracker: names each simple Query, FunctionCall and extended-protocol group (closed by
/// Sync, or by Flush) and matches the backend's replies to them in FIFO order. See docs/steps.md.
#include "proxy/abbrev.h"
#include "proxy/pg_codec.h"
#include "proxy/sql_verb.h"
#include "proxy/tracker.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <unordered_map>

namespace idem::proxy {
namespace {

constexpr std::string_view kFrontendTypes = "BCdcfDEHFpPQSX";
constexpr std::string_view kBackendTypes = "RKSZTDCIENAVtn123sGHWcdv";
constexpr int32_t kCancelRequest = kPgCancelRequestCode;
constexpr int32_t kSslRequest = kPgSslRequestCode;
constexpr int32_t kGssEncRequest = kPgGssEncRequestCode;
constexpr size_t kSummaryRaw = 2 * kAbbrevMax;
constexpr size_t kSqlRaw = 4 * kAbbrevMax;

/// What a prepared statement or a portal runs: its verb and (the start of) its text.
struct Sql {
  std::string verb;
  std::string text;
};
/// Shared, never changed once made: a Bind, Describe or Execute refers to its statement's text instead
/// of copying up to kSqlRaw bytes of it (copies were most of the cost of an extended-protocol group).
using SqlPtr = std::shared_ptr<const Sql>;

SqlPtr sqlOf(std::string_view sql) {
  return std::make_shared<const Sql>(Sql{sqlVerb(sql), std::string(sql.substr(0, kSqlRaw))});
}

/// BEGIN, START TRANSACTION: a statement that only opens a transaction.
bool opensTransaction(const std::string& verb) { return verb == "BEGIN" || verb == "START"; }

/// The extended-protocol messages since the last step request.
struct Group {
  size_t parses = 0, binds = 0, describes = 0, executes = 0, closes = 0;
  /// The statement that names the group: its first Execute's, or the first after a leading BEGIN (pgjdbc and
  /// Npgsql send a transaction's BEGIN under the Sync of its first statement: "BEGIN; INSERT …" is an INSERT).
  SqlPtr named_execute;
  std::string executed;   ///< the texts of the Executes' statements, joined by "; " (bounded)
  SqlPtr first_sql;       ///< the first statement parsed or described (null: none yet)

  size_t messages() const { return parses + binds + describes + executes + closes; }
  std::string verb() const {
    if (executes)
      return named_execute->verb;
    return parses ? "PARSE" : binds ? "BIND" : describes ? "DESCRIBE" : closes ? "CLOSE" : "SYNC";
  }
  StepInfo step() const {
    std::string_view sql;
    if (executes)
      sql = executed;
    else if (first_sql)
      sql = first_sql->text;
    // A round trip that only prepares runs nothing: no tables.
    return StepInfo{.verb = verb(), .detail = sqlDetail(sql), .tables = executes ? sqlTables(sql) : std::vector<std::string>{}};
  }
};

/// A step whose request reached the server and whose reply has not ended.
struct Outstanding {
  bool flushed = false;   ///< ended by Flush: the reply ends after `remaining` responses or an error
  bool sync = false;      ///< ended by Sync (the message that ends the server's skipping after an error)
  size_t remaining = 0;   ///< responses still due (ParseComplete, BindComplete, … CommandComplete)
  bool has_parts = false; ///< it holds extended-protocol messages (the server skips them after an error)
  bool error = false;
  std::string summary;    ///< raw, joined by "; "
};

/// Appends one piece (a command tag, an error message) to a raw summary, bounded.
void addPiece(Outstanding& o, std::string_view piece) {
  if (o.summary.size() >= kSummaryRaw)
    return;
  if (!o.summary.empty())
    o.summary += "; ";
  o.summary.append(piece.substr(0, kSummaryRaw));
}

ReplyInfo finish(const Outstanding& o) {
  ReplyInfo r;
  r.error = o.error;
  r.summary = abbreviate(o.summary);
  return r;
}

class PgTracker final : public Tracker {
public:
  Decode onClient(std::string_view buf, ClientMsg& out) override {
    out = ClientMsg{};
    if (big_.left > 0)
      return bigPiece(buf, out);
    PgMessage m;
    const Decode d = startup_ ? framePgStartup(buf, m) : framePgTyped(buf, kFrontendTypes, m);
    if (d == Decode::NeedMoreData && !startup_ && buf.size() >= kPgStreamAbove &&
        std::string_view("QPBd").find(buf[0]) != std::string_view::npos) {
      // A message too large to hold (framePgTyped checked its length): framed in pieces as it arrives.
      big_ = Big{buf[0], 0, uint64_t(readBe32(buf.substr(1, 4))) + 1, {}};
      return bigPiece(buf, out);
    }
    if (d != Decode::Message)
      return d;
    out.size = m.size;
    return startup_ ? onStartup(m, out) : onTyped(m, out);
  }

  /// The next piece of a client message framed in pieces. CopyData belongs to no step: every piece passes.
  /// A Query, Parse or Bind: every piece but the last byte is a Stream (the server can't act on a message
  /// it has not all of); the last byte is the message itself, as its first kPgKeep bytes describe it.
  Decode bigPiece(std::string_view buf, ClientMsg& out) {
    if (buf.empty())
      return Decode::NeedMoreData;
    const bool copy = big_.type == 'd';
    size_t take = static_cast<size_t>(std::min<uint64_t>(big_.left, buf.size()));
    if (!copy && take == big_.left && big_.left > 1)
      take = static_cast<size_t>(big_.left - 1);
    for (size_t i = 0; i < take && big_.prefix.size() < kPgKeep; ++i)
      if (big_.done + i >= 5) // after the type byte and the length: the body
        big_.prefix += buf[i];
    big_.done += take;
    big_.left -= take;
    out.size = take;
    if (copy || big_.left > 0) {
      out.kind = copy ? ClientMsg::Kind::Pass : ClientMsg::Kind::Stream;
      if (big_.left == 0)
        big_ = Big{};
      return Decode::Message;
    }
    const std::string body = std::move(big_.prefix);
    PgMessage m;
    m.type = big_.type;
    m.body = body;
    m.size = take;
    big_ = Big{};
    return onTyped(m, out);
  }

  Decode onServer(std::string_view buf, ServerMsg& out) override {
    out = ServerMsg{};
    if (serverBig_.left > 0) { // the rest of a large DataRow or CopyData, as it comes
      out.size = static_cast<size_t>(std::min<uint64_t>(serverBig_.left, buf.size()));
      out.kind = serverBig_.kind;
      serverBig_.left -= out.size;
      return buf.empty() ? Decode::NeedMoreData : Decode::Message;
    }
    PgMessage m;
    const Decode d = framePgTyped(buf, kBackendTypes, m);
    if (d == Decode::NeedMoreData && buf.size() >= kPgStreamAbove && (buf[0] == 'D' || buf[0] == 'd')) {
      // A row or COPY data too large to frame whole (framePgTyped checked its length): taken in pieces,
      // part of the oldest step's reply like any DataRow (held until the step is decided), or passed.
      out.kind = server_ready_ && !outstanding_.empty() ? ServerMsg::Kind::Part : ServerMsg::Kind::Pass;
      out.size = buf.size();
      serverBig_ = ServerBig{out.kind, uint64_t(readBe32(buf.substr(1, 4))) + 1 - buf.size()};
      return Decode::Message;
    }
    if (d != Decode::Message)
      return d;
    out.size = m.size;
    if (!server_ready_) { // authentication and the first ReadyForQuery belong to no step
      server_ready_ = m.type == 'Z';
      return d;
    }
    if (m.type == 'Z')
      onReady(out);
    else if (!outstanding_.empty())
      onReplyPart(m, out);
    return d;
  }

  void withdrawLast() override {
    if (!outstanding_.empty()) outstanding_.pop_back();
  }

private:
  Decode onStartup(const PgMessage& m, ClientMsg& out) {
    const int32_t code = PgReader(m.body).int32();
    if (code == kSslRequest || code == kGssEncRequest) {
      out.kind = ClientMsg::Kind::LocalReply;
      out.local_reply = "N";
    } else if ((code >> 16) == 3) {
      startup_ = false; // StartupMessage of protocol 3.x
    } else if (code != kCancelRequest) {
      return Decode::Invalid;
    }
    return Decode::Message;
  }

  Decode onTyped(const PgMessage& m, ClientMsg& out) {
    PgReader r(m.body);
    switch (m.type) {
    case 'Q': {
      const std::string_view sql = r.cstring(), head = sql.substr(0, kSqlRaw);
      requestEnd(out, StepInfo{.verb = sqlVerb(sql), .detail = sqlDetail(head), .tables = sqlTables(head)}, false);
      break;
    }
    case 'F':
      requestEnd(out, StepInfo{.verb = "FUNCTION", .detail = "function " + std::to_string(r.int32())}, false);
      break;
    case 'P': {
      const std::string name(r.cstring());
      const std::string_view sql = r.cstring();
      SqlPtr& st = statements_[name];
      st = sqlOf(sql); // a new one: portals bound to the statement it replaces keep theirs
      if (!group_.first_sql)
        group_.first_sql = st;
      ++group_.parses;
      out.kind = ClientMsg::Kind::Part;
      break;
    }
    case 'B': {
      const std::string portal(r.cstring());
      portals_[portal] = statement(r.cstring());
      ++group_.binds;
      out.kind = ClientMsg::Kind::Part;
      break;
    }
    case 'D': {
      const char what = r.byte();
      const std::string_view name = r.cstring();
      if (!group_.first_sql)
        group_.first_sql = what == 'P' ? portal(name) : statement(name);
      ++group_.describes;
      out.kind = ClientMsg::Kind::Part;
      break;
    }
    case 'E': {
      const SqlPtr sql = portal(r.cstring());
      if (group_.executes++ == 0 || opensTransaction(group_.named_execute->verb))
        group_.named_execute = sql;
      if (group_.executes > 1 && group_.executed.size() < kSqlRaw)
        group_.executed += "; ";
      if (group_.executed.size() < kSqlRaw)
        group_.executed += sql->text;
      out.kind = ClientMsg::Kind::Part;
      break;
    }
    case 'C': {
      const char what = r.byte();
      const std::string name(r.cstring());
      (what == 'P' ? portals_ : statements_).erase(name);
      ++group_.closes;
      out.kind = ClientMsg::Kind::Part;
      break;
    }
    case 'S':
      requestEnd(out, group_.step(), false);
      outstanding_.back().sync = true;
      break;
    case 'H': // a Flush ends the held group (the client may wait for its replies); a bare Flush passes
      if (group_.messages() > 0)
        requestEnd(out, group_.step(), true);
      break;
    default: // 'd' 'c' 'f' COPY data, 'p' authentication, 'X' Terminate
      break;
    }
    return Decode::Message;
  }

  /// Ends the held group with `step`: the server's reply to it is now due.
  void requestEnd(ClientMsg& out, StepInfo step, bool flushed) {
    out.kind = ClientMsg::Kind::RequestEnd;
    out.step = std::move(step);
    out.step.flushed = flushed;
    Outstanding o;
    o.flushed = flushed;
    o.remaining = group_.messages();
    o.has_parts = o.remaining > 0;
    outstanding_.push_back(std::move(o));
    group_ = Group{};
  }

  SqlPtr statement(std::string_view name) const { return find(statements_, name, "(statement "); }
  SqlPtr portal(std::string_view name) const { return find(portals_, name, "(portal "); }
  /// The statement or portal `name`; one that was never made (or closed) runs "EXECUTE (<kind> name)".
  static SqlPtr find(const std::unordered_map<std::string, SqlPtr>& in, std::string_view name, std::string_view kind) {
    const auto it = in.find(std::string(name));
    if (it != in.end())
      return it->second;
    return std::make_shared<const Sql>(Sql{"EXECUTE", std::string(kind) + std::string(name.substr(0, 64)) + ")"});
  }

  /// ReadyForQuery ends the oldest step that waits for it (Sync, Query, FunctionCall); older steps
  /// ended by Flush that are still outstanding were skipped by the server, and so were Queries and
  /// FunctionCalls sent after an extended-protocol error (the server skips all but Sync).
  void onReady(ServerMsg& out) {
    size_t i = 0;
    while (i < outstanding_.size() && (outstanding_[i].flushed || (discarding_ && !outstanding_[i].sync)))
      ++i;
    if (i == outstanding_.size())
      return; // Pass: no step waits for it
    Outstanding& o = outstanding_[i];
    if (discarding_ && o.has_parts && !o.error) {
      o.error = true;
      addPiece(o, "skipped: an earlier message of the pipeline failed");
    }
    out.kind = ServerMsg::Kind::ReplyEnd;
    out.reply = finish(o);
    out.skipped = i;
    outstanding_.erase(outstanding_.begin(), outstanding_.begin() + static_cast<std::ptrdiff_t>(i + 1));
    discarding_ = false;
  }

  /// Any other backend message while a step is outstanding: part of the oldest step's reply, or its
  /// end for a step ended by Flush.
  void onReplyPart(const PgMessage& m, ServerMsg& out) {
    Outstanding& o = outstanding_.front();
    out.kind = ServerMsg::Kind::Part;
    bool response = false; // one of the responses a Flush-ended step counts
    switch (m.type) {
    case 'C': addPiece(o, PgReader(m.body).cstring()); response = true; break;
    case 'I': addPiece(o, "(empty query)"); response = true; break;
    case 's': addPiece(o, "(portal suspended)"); response = true; break;
    case '1': case '2': case '3': case 'T': case 'n': response = true; break;
    case 'E':
      o.error = true;
      addPiece(o, pgErrorField(m.body, 'M'));
      if (o.flushed) { // the server now skips everything up to the next Sync
        discarding_ = true;
        o.remaining = 1;
        response = true;
      }
      break;
    case 'G': case 'W': // CopyIn/CopyBothResponse: the client waits for it before it sends its data
      out.kind = ServerMsg::Kind::Pass;
      return;
    default: break; // DataRow, RowDescription of a Query, CopyOut and CopyData, notices ...
    }
    if (!o.flushed || !response || --o.remaining > 0)
      return;
    out.kind = ServerMsg::Kind::ReplyEnd;
    out.reply = finish(o);
    outstanding_.pop_front();
  }

  bool startup_ = true;       ///< the client side still sends untyped startup packets
  /// A client message too large to hold, being framed in pieces (left > 0).
  struct Big {
    char type = 0;
    uint64_t done = 0, left = 0; ///< bytes of the whole message taken, still to take
    std::string prefix;          ///< the body's first kPgKeep bytes
  } big_;
  bool server_ready_ = false; ///< the server sent its first ReadyForQuery
  /// A server message too large to frame whole, being taken in pieces (left > 0).
  struct ServerBig {
    ServerMsg::Kind kind = ServerMsg::Kind::Pass;
    uint64_t left = 0;
  } serverBig_;
  bool discarding_ = false;   ///< an extended-protocol error: the server skips messages until Sync
  std::unordered_map<std::string, SqlPtr> statements_;
  std::unordered_map<std::string, SqlPtr> portals_;
  Group group_;
  std::deque<Outstanding> outstanding_;
};

} // namespace

TrackerPtr makePgTracker() { return std::make_unique<PgTracker>(); }

} // namespace idem::proxy
