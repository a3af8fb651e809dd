/// Redis/Valkey tracker: every command is a step; replies (RESP2 or RESP3) end them in FIFO order.
/// See docs/steps.md.
#include "proxy/abbrev.h"
#include "proxy/resp_command.h"
#include "proxy/resp_reply.h"
#include "proxy/resp_script.h"
#include "proxy/resp_value.h"
#include "proxy/tracker.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <deque>
#include <optional>

namespace idem::proxy {
namespace {

char upperAscii(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }

/// `s` upper-cased is `word` (upper case): no copy.
bool equalsUpper(std::string_view s, std::string_view word) {
  if (s.size() != word.size())
    return false;
  for (size_t i = 0; i < s.size(); ++i)
    if (upperAscii(s[i]) != word[i])
      return false;
  return true;
}

bool isAny(std::string_view verb, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), verb) != names.end();
}

/// True when one of args[from…] is `word` (case-insensitive), looking no further than `stop`.
bool hasWord(const std::vector<std::string_view>& args, size_t from, std::string_view word,
             std::string_view stop = {}) {
  for (size_t i = from; i < args.size(); ++i) {
    if (equalsUpper(args[i], word))
      return true;
    if (!stop.empty() && equalsUpper(args[i], stop))
      return false;
  }
  return false;
}

/// The arguments joined by spaces, escaped, within `max` bytes; false when they do not fit.
bool joinArgs(std::string& out, const std::vector<std::string_view>& args, size_t max) {
  out.clear();
  for (const std::string_view a : args) {
    if (!out.empty()) {
      if (out.size() + 1 > max)
        return false;
      out += ' ';
    }
    if (!appendEscaped(out, a, max))
      return false;
  }
  return true;
}

/// The command line for a step detail: at most kAbbrevMax bytes, ending in "..." when cut.
std::string commandLine(const std::vector<std::string_view>& args) {
  std::string out;
  if (joinArgs(out, args, kAbbrevMax))
    return out;
  joinArgs(out, args, kAbbrevMax - 3);
  return out + "...";
}

/// `args` with the secrets it carries masked for a step's detail (the history and the report keep it, and
/// with --valkey-url the password is the user's): AUTH's password, HELLO's AUTH password, MIGRATE's AUTH
/// and AUTH2 passwords, and the value of CONFIG SET requirepass or masterauth.
std::vector<std::string_view> withoutSecrets(std::vector<std::string_view> args) {
  static constexpr std::string_view kMasked = "***";
  auto is = [](std::string_view a, std::string_view word) {
    return a.size() == word.size() && std::equal(a.begin(), a.end(), word.begin(), [](char x, char y) {
             return std::toupper(static_cast<unsigned char>(x)) == y;
           });
  };
  if (args.empty()) return args;
  if (is(args[0], "AUTH")) {
    if (args.size() >= 2) args.back() = kMasked; // AUTH password, AUTH user password
  } else if (is(args[0], "HELLO") || is(args[0], "MIGRATE")) {
    for (size_t i = 1; i < args.size(); ++i) {
      if (is(args[i], "AUTH") && i + 1 < args.size()) {
        // HELLO … AUTH user password; MIGRATE … AUTH password
        const size_t secret = is(args[0], "HELLO") ? i + 2 : i + 1;
        if (secret < args.size()) args[secret] = kMasked;
      } else if (is(args[i], "AUTH2") && i + 2 < args.size()) {
        args[i + 2] = kMasked; // MIGRATE … AUTH2 user password
      }
    }
  } else if (is(args[0], "CONFIG") && args.size() >= 4 && is(args[1], "SET")) {
    for (size_t i = 2; i + 1 < args.size(); i += 2)
      if (is(args[i], "REQUIREPASS") || is(args[i], "MASTERAUTH")) args[i + 1] = kMasked;
  }
  return args;
}

struct Pending {
  ReadShape shape = ReadShape::None;
  bool noAck = false; ///< XREADGROUP … NOACK: the group counts what it delivers acknowledged
  std::vector<ReadShape> queued = {}; ///< EXEC: the read shapes of the commands queued since MULTI
  std::vector<std::vector<std::string>> queuedAcks = {}; ///< EXEC: what each queued command acknowledges
};

/// A command queued inside MULTI: what it will be when EXEC runs it.
struct Queued {
  ReadShape shape = ReadShape::None;
  bool noAck = false, read = false, unseen = false;
  std::vector<std::string> acked;
  std::string script; ///< StepInfo::script, scriptCalls, scriptIds of a queued script or SCRIPT LOAD
  std::vector<std::string> scriptCalls, scriptIds;
};

class RespTracker final : public Tracker {
public:
  Decode onClient(std::string_view buf, ClientMsg& out) override {
    out = ClientMsg{};
    if (stream_)
      return streamPiece(buf, out);
    const Decode d = parseRespCommand(buf, out.size, args_, words_);
    if (d == Decode::NeedMoreData && buf.size() >= kRespStreamAbove && buf[0] == '*') {
      stream_.emplace(); // too large to hold until it is complete: frame it in pieces
      return streamPiece(buf, out);
    }
    if (d != Decode::Message || args_.empty())
      return d; // an empty command gets no reply: Pass
    describe(out);
    return d;
  }

  /// The next piece of a message framed in pieces by `framer`: a Stream, until the piece of its last byte,
  /// which `finish` makes the message (a RequestEnd, a ReplyEnd).
  template <class Msg, class Framer, class Finish>
  static Decode piece(std::optional<Framer>& framer, std::string_view buf, Msg& out, Finish finish) {
    bool done = false;
    const Decode d = framer->next(buf, out.size, done);
    if (d != Decode::Message)
      return d;
    if (!done) {
      out.kind = Msg::Kind::Stream;
      return d;
    }
    return finish();
  }

  Decode streamPiece(std::string_view buf, ClientMsg& out) {
    return piece(stream_, buf, out, [&] {
      words_ = stream_->args();
      args_.assign(words_.begin(), words_.end());
      stream_.reset();
      describe(out);
      return Decode::Message;
    });
  }

  /// A RequestEnd for the command in args_: its step, and what its reply will be read as.
  void describe(ClientMsg& out) {
    out.kind = ClientMsg::Kind::RequestEnd;
    StepInfo& step = out.step;
    step.verb = upperWord(args_[0]);
    step.detail = commandLine(withoutSecrets(args_));
    Pending p;
    const std::string& v = step.verb;
    step.read = isAny(v, {"XREADGROUP", "XREAD", "XAUTOCLAIM", "XCLAIM"});
    step.unseen = isAny(v, {"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"});
    if (v == "XREADGROUP" || v == "XREAD") {
      p.shape = ReadShape::Streams;
      step.blocking = hasWord(args_, 1, "BLOCK", "STREAMS");
      p.noAck = v == "XREADGROUP" && hasWord(args_, 1, "NOACK", "STREAMS");
    } else if (v == "XCLAIM") {
      p.shape = hasWord(args_, 5, "JUSTID") ? ReadShape::Ids : ReadShape::Entries;
    } else if (v == "XAUTOCLAIM") {
      p.shape = hasWord(args_, 6, "JUSTID") ? ReadShape::AutoClaimIds : ReadShape::AutoClaim;
    } else if (v == "XRANGE" || v == "XREVRANGE") {
      p.shape = ReadShape::Range;
    } else if (step.unseen) {
      p.shape = ReadShape::Script;
      describeScript(step);
    } else if (v == "SCRIPT" && args_.size() >= 3 && upperWord(args_[1]) == "LOAD") {
      step.script = scriptSha(args_[2]);
      step.scriptCalls = scriptStreamCalls(args_[2]);
    } else if (v == "XACK" && args_.size() > 3) {
      step.acked.assign(args_.begin() + 3, args_.end());
    } else if (v == "XGROUP" && args_.size() >= 5 && upperWord(args_[1]) == "DELCONSUMER") {
      step.deletesConsumer = std::string(args_[4]); // XGROUP DELCONSUMER key group consumer
    } else {
      step.blocking = isAny(v, {"BLPOP", "BRPOP", "BRPOPLPUSH", "BLMOVE", "BLMPOP", "BZPOPMIN", "BZPOPMAX",
                                "BZMPOP", "WAIT", "WAITAOF"});
    }
    transaction(step, p);
    outstanding_.push_back(p);
  }

  /// MULTI … EXEC: a queued command runs only at EXEC (its reply is +QUEUED), so what it reads or
  /// acknowledges belongs to the EXEC step, whose reply holds each command's answer in order (redis-py's
  /// default pipeline, ioredis' multi()). DISCARD drops what was queued. A queued read blocks nowhere.
  void transaction(StepInfo& step, Pending& p) {
    const std::string& v = step.verb;
    if (v == "MULTI") {
      multi_ = true;
      queued_.clear();
      step.inMulti = true;
    } else if (v == "DISCARD") {
      multi_ = false;
      queued_.clear();
      step.inMulti = true;
    } else if (v == "EXEC") {
      multi_ = false;
      for (auto& q : queued_) {
        p.queued.push_back(q.shape);
        p.queuedAcks.push_back(q.acked);
        p.noAck = p.noAck || q.noAck;
        step.read = step.read || q.read;
        step.unseen = step.unseen || q.unseen;
        step.acked.insert(step.acked.end(), q.acked.begin(), q.acked.end());
        // A step names one script: the first queued, with the ids of every call of it.
        if (step.script.empty()) {
          step.script = q.script;
          step.scriptCalls = q.scriptCalls;
        }
        if (!q.script.empty() && q.script == step.script)
          step.scriptIds.insert(step.scriptIds.end(), q.scriptIds.begin(), q.scriptIds.end());
      }
      p.shape = ReadShape::Exec;
      queued_.clear();
    } else if (multi_ && v != "WATCH") {
      queued_.push_back({p.shape, p.noAck, step.read, step.unseen, std::move(step.acked), std::move(step.script),
                         std::move(step.scriptCalls), std::move(step.scriptIds)});
      step.acked.clear();
      step.script.clear();
      step.scriptCalls.clear();
      step.scriptIds.clear();
      step.read = step.blocking = step.unseen = false;
      step.inMulti = true;
      p = Pending{};
    }
  }

  /// EVAL body numkeys key… arg…, EVALSHA sha numkeys key… arg… (and their _RO forms): the script's name,
  /// what its body calls when the step carries it, and its keys and arguments that look like entry ids.
  void describeScript(StepInfo& step) const {
    if (args_.size() < 2 || !step.verb.starts_with("EVAL")) return; // FCALL names a function, not a script
    if (step.verb.starts_with("EVALSHA")) {
      step.script = std::string(args_[1]);
      std::transform(step.script.begin(), step.script.end(), step.script.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    } else {
      step.script = scriptSha(args_[1]);
      step.scriptCalls = scriptStreamCalls(args_[1]);
    }
    step.scriptIds = entryIdArgs(args_, 3);
  }

  Decode onServer(std::string_view buf, ServerMsg& out) override {
    out = ServerMsg{};
    if (reply_)
      return replyPiece(buf, out);
    const Decode d = parseResp(buf, out.size, &value_);
    if (d == Decode::NeedMoreData && buf.size() >= kRespStreamAbove && !outstanding_.empty() && buf[0] != '>' &&
        buf[0] != '|') {
      // A reply too large to hold: framed in pieces, an outline of it kept for the step's reply info.
      reply_.emplace();
      return replyPiece(buf, out);
    }
    if (d != Decode::Message || value_.type == '>' || outstanding_.empty())
      return d; // a push is out of band; a reply nobody waits for passes
    if (value_.type == '|') { // an attribute: part of the reply that follows
      out.kind = ServerMsg::Kind::Part;
      return d;
    }
    out.kind = ServerMsg::Kind::ReplyEnd;
    out.reply = replyInfo(value_, outstanding_.front());
    outstanding_.pop_front();
    return d;
  }

  Decode replyPiece(std::string_view buf, ServerMsg& out) {
    return piece(reply_, buf, out, [&] {
      size_t size = 0;
      RespValue v;
      if (parseResp(reply_->skeleton(), size, &v) != Decode::Message)
        return Decode::Invalid; // (cannot happen: the skeleton is the value's own outline)
      out.kind = ServerMsg::Kind::ReplyEnd;
      out.reply = replyInfo(v, outstanding_.front());
      reply_.reset(); // after respReplyInfo: `v` is a view of the skeleton
      outstanding_.pop_front();
      return Decode::Message;
    });
  }

  static ReplyInfo replyInfo(const RespValue& v, const Pending& p) {
    ReplyInfo info = p.shape == ReadShape::Exec ? respExecReplyInfo(v, p.queued, p.queuedAcks) : respReplyInfo(v, p.shape);
    info.settles = p.noAck;
    return info;
  }

  void withdrawLast() override {
    if (!outstanding_.empty()) outstanding_.pop_back();
  }

private:
  std::deque<Pending> outstanding_;
  bool multi_ = false;          ///< inside MULTI: commands are queued until EXEC
  std::vector<Queued> queued_;  ///< what was queued since MULTI
  std::vector<std::string_view> args_; ///< scratch, reused: the arguments of the command being described
  std::vector<std::string> words_;     ///< scratch, reused: what args_ views when not the input bytes
  std::optional<RespCommandStream> stream_; ///< a command being framed in pieces
  std::optional<RespReplyStream> reply_;   ///< a reply being framed in pieces
  RespValue value_;               ///< scratch, reused
};

} // namespace

TrackerPtr makeRespTracker() { return std::make_unique<RespTracker>(); }

} // namespace idem::proxy
