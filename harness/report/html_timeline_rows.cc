/// The rows of a timeline: which ops are hot (cited by a violation, touching its entries or events, or
/// made while a consumer handled one of its entries), which are elided, and what each one says.
#include "report/html_timeline.h"

#include <fmt/format.h>

#include <map>

namespace idem::html::tl {

namespace {

/// Marks as hot the steps a consumer made while handling a hot entry: per process, the steps between
/// the delivery of an entry (or the ack of the entry before it) and its own ack. That holds for consumers
/// that handle one entry at a time; as soon as a process acknowledges out of delivery order, its steps
/// are no longer attributed.
void attribute(Context& c, const json& history) {
  std::map<std::string, std::vector<std::string>> queue; // process -> delivered, not yet acked
  std::set<std::string> unordered;
  for (const auto& op : history) {
    if (str(op, "type") != "step") continue;
    std::string proc = str(op, "process");
    if (unordered.count(proc)) continue;
    const json& v = arr(op, "value");
    auto& q = queue[proc];
    if (v.contains("delivered")) {
      for (const auto& d : arr(v, "delivered")) q.push_back(str(d, "entry"));
      continue;
    }
    if (!q.empty() && c.hotEntries.count(q.front())) c.hotOps.insert(num(op, "index", -1));
    for (const auto& a : arr(v, "acked")) {
      if (q.empty() || !a.is_string() || a.get<std::string>() != q.front()) {
        unordered.insert(proc);
        break;
      }
      q.erase(q.begin());
    }
  }
}

} // namespace

Context contextOf(const json& run) {
  Context c;
  c.lanes.push_back("producer");
  for (const auto& op : arr(run, "history")) {
    const json& v = arr(op, "value");
    std::string type = str(op, "type");
    if (type == "spawn" && std::find(c.lanes.begin(), c.lanes.end(), str(op, "process")) == c.lanes.end())
      c.lanes.push_back(str(op, "process"));
    if (type == "send")
      c.tags[str(v, "entry")] = fmt::format("e{}{}", num(v, "n"), v.value("retry", false) ? "′" : "");
  }
  c.lanes.push_back("valkey");
  c.lanes.push_back("pg");
  for (const auto& viol : arr(run, "violations")) {
    for (const auto& i : arr(viol, "ops"))
      if (i.is_number()) c.hotOps.insert(i.get<int64_t>());
    for (const auto& e : arr(viol, "entries"))
      if (e.is_string()) c.hotEntries.insert(e.get<std::string>());
    for (const auto& n : arr(viol, "events"))
      if (n.is_number()) c.hotEvents.insert(n.get<int64_t>());
  }
  attribute(c, arr(run, "history"));
  for (const auto& op : arr(run, "history")) {
    const json& v = arr(op, "value");
    if (str(op, "type") == "send" && (c.hotEvents.count(num(v, "n")) || c.hotEntries.count(str(v, "entry"))) &&
        str(v, "event_id").size() >= 8)
      c.hotIds.insert(str(v, "event_id"));
  }
  return c;
}

namespace {

bool touchesHot(const Context& c, const json& op) {
  if (c.hotOps.count(num(op, "index", -1))) return true;
  const json& v = arr(op, "value");
  if (str(op, "type") == "send") return c.hotEvents.count(num(v, "n")) || c.hotEntries.count(str(v, "entry"));
  for (const auto& d : arr(v, "delivered"))
    if (c.hotEntries.count(str(d, "entry"))) return true;
  for (const auto& a : arr(v, "acked"))
    if (a.is_string() && c.hotEntries.count(a.get<std::string>())) return true;
  std::string detail = str(v, "detail");
  for (const auto& id : c.hotIds)
    if (detail.find(id) != std::string::npos) return true;
  return false;
}

} // namespace

std::vector<Row> rowsOf(const Context& c, const json& history) {
  std::vector<Row> all;
  for (const auto& op : history) {
    std::string type = str(op, "type");
    if (type == "plan") continue;
    all.push_back({&op, 0, touchesHot(c, op), type == "kill"});
  }
  if (all.size() <= static_cast<size_t>(kMaxRows)) return all;
  std::vector<bool> keep(all.size(), false);
  for (size_t i = 0; i < all.size(); ++i) {
    std::string type = str(*all[i].op, "type");
    bool anchor = all[i].hot || all[i].kill || type == "spawn" || type == "exit" || type == "error" || type == "final";
    if (i < 8 || i + 8 >= all.size()) keep[i] = true;
    if (anchor)
      for (size_t k = i >= 3 ? i - 3 : 0; k < std::min(all.size(), i + 4); ++k) keep[k] = true;
  }
  std::vector<Row> rows;
  for (size_t i = 0; i < all.size(); ++i) {
    if (keep[i]) rows.push_back(all[i]);
    else if (!rows.empty() && rows.back().op == nullptr) ++rows.back().elided;
    else rows.push_back({nullptr, 1, false, false});
  }
  return rows;
}

namespace {

std::string tagsOf(const Context& c, const json& list, bool entriesAreObjects) {
  std::string out;
  for (const auto& e : list) {
    std::string id = entriesAreObjects ? str(e, "entry") : (e.is_string() ? e.get<std::string>() : "");
    auto it = c.tags.find(id);
    out += (out.empty() ? "" : " ") + (it == c.tags.end() ? id : it->second);
  }
  return out;
}

std::string observedText(const json& observed) {
  std::string out;
  for (const auto& [name, rows] : observed.items()) {
    out += (out.empty() ? "" : "; ") + name + ":";
    for (const auto& r : rows) {
      std::string key, rest;
      size_t n = 0;
      for (const auto& cell : r) {
        std::string text = cell.is_string() && cell.get<std::string>().empty() ? "''" : show(cell);
        if (n++ == 0) key = text;
        else rest += (rest.empty() ? "" : ", ") + text;
      }
      out += " " + key + "=" + (n > 2 ? "(" + rest + ")" : rest);
    }
  }
  return out;
}

} // namespace

std::string describe(const Context& c, const json& op) {
  const json& v = arr(op, "value");
  std::string type = str(op, "type"), proc = str(op, "process");
  if (type == "send") {
    std::string fields;
    for (const auto& [k, val] : arr(v, "fields").items())
      if (k != "event_id" && k != "n") fields += (fields.empty() ? "" : " ") + k + "=" + show(val);
    return fmt::format("send event {}{} as {}  {}", num(v, "n"), v.value("retry", false) ? " again (retry)" : "",
                       str(v, "entry"), fields);
  }
  if (type == "spawn") return fmt::format("{} starts (pid {}, {})", proc, num(v, "pid"), str(v, "restart"));
  if (type == "kill") return fmt::format("✕ {} SIGKILLed at {}", proc, str(v, "point"));
  if (type == "exit") {
    std::string how = v.contains("signal") ? fmt::format("signal {}", num(v, "signal")) : fmt::format("status {}", num(v, "status"));
    return fmt::format("{} exits: {}{}", proc, how, str(v, "by") == "harness" ? " (stopped by idemproof)" : " (by itself)");
  }
  if (type == "initial") return "initial state: " + observedText(arr(v, "observed"));
  if (type == "final") {
    std::string pending = arr(v, "pending").empty() ? "" : fmt::format(", {} pending", arr(v, "pending").size());
    return "final state: " + observedText(arr(v, "observed")) + pending;
  }
  if (type == "stall") return "stall: no broker progress" + std::string(v.value("restart", false) ? ", restarting" : "");
  if (type == "error") return "error: " + str(v, "message");
  if (type != "step") return type;
  std::string verb = str(v, "verb"), detail = str(v, "detail");
  std::string head = fmt::format("{}#{}", verb, num(v, "k"));
  if (detail == verb) detail.clear();
  else if (detail.rfind(verb + " ", 0) == 0) detail = detail.substr(verb.size() + 1);
  detail = detail.empty() ? "" : " " + cut(detail, 56);
  std::string result;
  if (v.contains("delivered")) result = v.value("empty", false) ? "nothing" : tagsOf(c, arr(v, "delivered"), true);
  else if (v.contains("acked")) result = "ack " + tagsOf(c, arr(v, "acked"), false);
  else result = cut(str(v, "summary"), 24);
  if (result == verb) result.clear();
  std::string outcome = str(v, "outcome");
  if (outcome == "killed-before") result = "withheld: never reached the server";
  else if (outcome == "killed-after") result += "  (reply withheld)";
  else if (outcome == "cut") result = "in flight at the end";
  if (v.value("error", false)) result += " (error)";
  return head + detail + (result.empty() ? "" : "  → " + result);
}

} // namespace idem::html::tl
