#include "proxy/resp_reply.h"

#include "proxy/abbrev.h"

#include <algorithm>
#include <set>

namespace idem::proxy {
namespace {

/// "1 entry", "2 entries", "1 element", "3 pairs".
std::string countOf(size_t n, std::string_view one) {
  std::string out = std::to_string(n) + " " + std::string(one);
  if (n != 1)
    out = one.back() == 'y' ? out.substr(0, out.size() - 1) + "ies" : out + "s";
  return out;
}

/// `prefix` and (the start of) `text`, abbreviated.
std::string abbreviated(std::string_view prefix, std::string_view text) {
  std::string joined(prefix);
  joined.append(text.substr(0, kAbbrevMax));
  return abbreviate(joined);
}

std::string summarize(const RespValue& v) {
  if (v.null)
    return "(nil)";
  switch (v.type) {
  case '+': return abbreviated("+", v.str);
  case '-': case '!': return abbreviated("-", v.str);
  case ':': return std::string("(integer) ").append(v.str);
  case ',': return abbreviated("(double) ", v.str);
  case '(': return abbreviated("(big number) ", v.str);
  case '#': return v.str == "t" ? "(boolean) true" : "(boolean) false";
  case '$': case '=': {
    std::string out = "\"";
    if (appendEscaped(out, v.str, kAbbrevMax - 1))
      return out + "\"";
    out = "\"";
    appendEscaped(out, v.str, kAbbrevMax - 3);
    return out + "...";
  }
  case '%': return v.elems.empty() ? "(empty map)" : "(map) " + countOf(v.elems.size() / 2, "pair");
  case '~': return v.elems.empty() ? "(empty set)" : "(set) " + countOf(v.elems.size(), "element");
  default: return v.elems.empty() ? "(empty array)" : "(array) " + countOf(v.elems.size(), "element");
  }
}

bool isList(const RespValue& v) { return !v.null && (v.type == '*' || v.type == '~'); }

/// Appends the entries of a list of [id, fields] to `out`; false when `list` is not such a list.
bool addEntries(const RespValue& list, std::vector<EntryView>& out) {
  if (!isList(list))
    return false;
  for (const RespValue& e : list.elems) {
    if (!isList(e) || e.elems.empty() || !e.elems[0].text())
      continue; // nil in place of a deleted entry (XCLAIM, Redis 6.2 XAUTOCLAIM)
    EntryView entry;
    entry.id = e.elems[0].str;
    if (e.elems.size() > 1 && e.elems[1].aggregate()) {
      const auto& f = e.elems[1].elems;
      for (size_t i = 0; i + 1 < f.size(); i += 2)
        // Cut as a reply framed in pieces cuts them (RespReplyStream), so that a read shows the same
        // entries however its bytes arrive.
        entry.fields.emplace_back(f[i].str.substr(0, kRespSkeletonKeep), f[i + 1].str.substr(0, kRespSkeletonKeep));
    }
    out.push_back(std::move(entry));
  }
  return true;
}

/// XREAD / XREADGROUP: false when the reply has another shape.
bool addStreams(const RespValue& v, std::vector<EntryView>& out) {
  if (v.null)
    return true;
  if (v.type == '%') {
    for (size_t i = 0; i + 1 < v.elems.size(); i += 2)
      if (!addEntries(v.elems[i + 1], out))
        return false;
    return true;
  }
  if (!isList(v))
    return false;
  for (const RespValue& stream : v.elems)
    if (!isList(stream) || stream.elems.size() < 2 || !addEntries(stream.elems[1], out))
      return false;
  return true;
}

/// The ids of a JUSTID claim (ReplyInfo::claimedIds) or of a range's entries (ReplyInfo::ranged).
void claimsAndRanges(const RespValue& reply, ReadShape shape, ReplyInfo& info) {
  if (shape == ReadShape::Range) {
    std::vector<EntryView> entries;
    if (addEntries(reply, entries))
      for (auto& e : entries) info.ranged.push_back(std::move(e.id));
    return;
  }
  const RespValue* ids = &reply;
  if (shape == ReadShape::AutoClaimIds)
    ids = isList(reply) && reply.elems.size() >= 2 ? &reply.elems[1] : nullptr;
  if (!ids || !isList(*ids))
    return;
  for (const RespValue& id : ids->elems)
    if (id.text())
      info.claimedIds.emplace_back(id.str);
}

/// Whether a text of `v` (at any depth) holds what looks like a stream entry id the harness's XADD made: ten
/// digits or more (the milliseconds), '-', a digit. A script that handed entries to its client returns them.
bool carriesEntryId(const RespValue& v) {
  if (v.text()) {
    const std::string_view s = v.str;
    size_t run = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      const bool digit = s[i] >= '0' && s[i] <= '9';
      if (s[i] == '-' && run >= 10 && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '9') return true;
      run = digit ? run + 1 : 0;
    }
    return false;
  }
  return std::any_of(v.elems.begin(), v.elems.end(), [](const RespValue& e) { return carriesEntryId(e); });
}

} // namespace

ReplyInfo respReplyInfo(const RespValue& reply, ReadShape shape) {
  ReplyInfo info;
  info.error = reply.type == '-' || reply.type == '!';
  info.summary = summarize(reply);
  if (!info.error && shape == ReadShape::Script) {
    info.mayCarryEntries = carriesEntryId(reply);
    return info;
  }
  if (info.error || shape == ReadShape::None || shape == ReadShape::Exec)
    return info;
  if (shape == ReadShape::Ids || shape == ReadShape::AutoClaimIds || shape == ReadShape::Range) {
    claimsAndRanges(reply, shape, info);
    return info;
  }
  bool read = false;
  switch (shape) {
  case ReadShape::Streams: read = addStreams(reply, info.delivered); break;
  case ReadShape::Entries: read = reply.null || addEntries(reply, info.delivered); break;
  case ReadShape::AutoClaim:
    read = isList(reply) && reply.elems.size() >= 2 && addEntries(reply.elems[1], info.delivered);
    break;
  case ReadShape::None:
  case ReadShape::Exec:   // respExecReplyInfo
  case ReadShape::Ids:
  case ReadShape::AutoClaimIds:
  case ReadShape::Range:
  case ReadShape::Script: break; // answered above
  }
  if (!read) {
    info.delivered.clear();
    return info;
  }
  info.empty_read = info.delivered.empty();
  info.summary = countOf(info.delivered.size(), "entry");
  return info;
}

ReplyInfo respExecReplyInfo(const RespValue& reply, const std::vector<ReadShape>& queued,
                            const std::vector<std::vector<std::string>>& acks) {
  ReplyInfo info;
  info.error = reply.type == '-' || reply.type == '!';
  info.summary = summarize(reply);
  if (info.error || reply.null || !isList(reply)) return info;
  bool read = false;
  std::set<std::string> acked; // by the commands run so far
  for (size_t i = 0; i < reply.elems.size() && i < queued.size(); ++i) {
    if (i < acks.size() && !acks[i].empty() && reply.elems[i].type != '-' && reply.elems[i].type != '!')
      acked.insert(acks[i].begin(), acks[i].end());
    if (queued[i] == ReadShape::None) continue;
    ReplyInfo one = respReplyInfo(reply.elems[i], queued[i]);
    for (const auto& d : one.delivered)
      if (acked.count(d.id)) info.reheld.push_back(d.id);
    read = read || (queued[i] != ReadShape::Script && !one.error);
    info.mayCarryEntries = info.mayCarryEntries || one.mayCarryEntries;
    for (auto& d : one.delivered) info.delivered.push_back(std::move(d));
    info.claimedIds.insert(info.claimedIds.end(), one.claimedIds.begin(), one.claimedIds.end());
    info.ranged.insert(info.ranged.end(), one.ranged.begin(), one.ranged.end());
  }
  if (read) info.empty_read = info.delivered.empty();
  if (!info.delivered.empty()) info.summary = countOf(info.delivered.size(), "entry");
  return info;
}

} // namespace idem::proxy
