#include "history/trace.h"

#include "plan/fault_kind.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>

namespace idem {

Trace traceOf(const std::vector<Op>& history) {
  Trace t;
  auto steps = recordsOf<ops::Step>(history);
  std::stable_sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return a.second->tReqUs < b.second->tReqUs; });
  std::vector<std::pair<const Op*, const ops::Step*>> kept;
  for (const auto& [op, s] : steps) {
    if (setUpStep(*s)) continue; // the harness's doing, not the target's work

    if (!s->replied()) t.skipped.push_back({s->name(), "in flight when the run ended"});
    else if (s->empty) t.skipped.push_back({s->name(), "a read that delivered nothing"});
    else if (s->stopping) t.skipped.push_back({s->name(), "sent while idemproof stopped its process (its shutdown)"});
    // A relay's poll of the outbox that found nothing (its count depends on timing): as a read that
    // delivered nothing, it changes no state.
    else if (isRelayLabel(op->process) && s->summary == "SELECT 0")
      t.skipped.push_back({op->process + ":" + s->name(), "a relay's poll that found nothing"});
    else kept.emplace_back(op, s);
  }
  // The neighbours of each kept step in its own process.
  std::map<std::string, std::vector<const ops::Step*>> byProcess;
  for (const auto& [op, s] : kept) byProcess[op->process].push_back(s);
  std::map<const ops::Step*, std::pair<std::string, std::string>> around;
  for (const auto& [proc, list] : byProcess) {
    for (size_t i = 0; i < list.size(); ++i)
      around[list[i]] = {i > 0 ? list[i - 1]->verb : "", i + 1 < list.size() ? list[i + 1]->verb : ""};
  }
  // A relay's steps are numbered apart from the consumers' (plan/fault.h): its points name it, rN:VERB#k with
  // k its own occurrence of the verb (set-up steps counted apart, as the proxies count them).
  std::map<const ops::Step*, int> relayK;
  {
    std::map<std::pair<std::string, std::string>, int> counts;
    for (const auto& [op, s] : steps)
      if (isRelayLabel(op->process)) relayK[s] = ++counts[{op->process, stepCounter(s->verb, setUpStep(*s))}];
  }
  for (const auto& [op, s] : kept) {
    for (When when : {When::Before, When::After}) {
      TracePoint p;
      p.fault = Fault::kill(when, s->verb, s->k);
      if (auto r = relayK.find(s); r != relayK.end()) {
        p.fault.k = r->second;
        p.fault.process = op->process;
      }
      p.process = op->process;
      p.server = s->server;
      p.detail = s->detail;
      p.prevVerb = around[s].first;
      p.nextVerb = around[s].second;
      p.opIndex = op->index;
      p.noError = s->flushed || s->inMulti;
      t.points.push_back(std::move(p));
    }
  }
  return t;
}

Fault ProcessStep::fault(const std::string& kind, When when) const {
  Fault f = Fault::kill(when, step->verb, k);
  f.kind = kind;
  f.process = op->process;
  return f;
}

std::vector<ProcessStep> processSteps(const std::vector<Op>& history, const std::string& process) {
  std::vector<ProcessStep> out;
  for (const auto& [op, s] : recordsOf<ops::Step>(history))
    if (op->process == process) out.push_back({op, s, 0});
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.step->tReqUs < b.step->tReqUs; });
  std::map<std::string, int> counts; // set-up steps apart, as the proxies count them
  for (auto& p : out) p.k = ++counts[stepCounter(p.step->verb, setUpStep(*p.step))];
  return out;
}

bool workStep(const ops::Step& s) { return !setUpStep(s) && s.replied() && !s.empty; }

std::vector<EntryWork> entryWork(const std::vector<Op>& history, const std::string& process) {
  std::map<std::string, std::pair<int, bool>> sends; // entry -> (event, retry)
  for (const auto& [op, s] : recordsOf<ops::Send>(history)) sends[s->entry] = {s->n, s->retry};
  std::vector<EntryWork> out;
  std::vector<ProcessStep> current;
  std::set<std::string> acked; // by the process's earlier acknowledgements
  bool started = false;
  for (const auto& p : processSteps(history, process)) {
    const auto& s = *p.step;
    if (!workStep(s)) continue;
    started = started || !s.delivered.empty();
    if (!started) continue;
    current.push_back(p);
    if (s.acked.empty()) continue;
    EntryWork w;
    // The entry it acknowledged first: an offset commit names again every record below its position.
    auto fresh = std::find_if(s.acked.begin(), s.acked.end(), [&](const std::string& e) { return !acked.count(e); });
    w.entry = fresh == s.acked.end() ? s.acked.front() : *fresh;
    acked.insert(s.acked.begin(), s.acked.end());
    if (auto it = sends.find(w.entry); it != sends.end()) std::tie(w.event, w.retry) = it->second;
    w.steps = std::move(current);
    current.clear();
    out.push_back(std::move(w));
  }
  return out;
}

namespace {

/// The first word of a command line after the verb, upper case ("CLIENT SETNAME c1" -> "SETNAME").
std::string subcommand(const std::string& detail) {
  auto from = detail.find(' ');
  if (from == std::string::npos) return "";
  auto to = detail.find(' ', from + 1);
  std::string word = detail.substr(from + 1, to == std::string::npos ? std::string::npos : to - from - 1);
  for (char& c : word) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return word;
}

} // namespace

bool setUpCommand(const std::string& server, const std::string& verb, const std::string& detail, bool connectionWorked) {
  if (server == "valkey") {
    if (verb == "AUTH" || verb == "SELECT" || verb == "HELLO") return true;
    if (verb == "CLIENT") {
      const std::string sub = subcommand(detail);
      // SETINFO: node-redis, redis-py 5; MAINT_NOTIFICATIONS: node-redis 5.9 and later, on every connection.
      return sub == "SETNAME" || sub == "SETINFO" || sub == "MAINT_NOTIFICATIONS";
    }
    return !connectionWorked && (verb == "INFO" || verb == "PING");
  }
  return server == "pg" && !connectionWorked && (verb == "SET" || verb == "RESET" || verb == "SHOW");
}

bool setUpStep(const ops::Step& step) {
  return step.setUp || (step.server == "valkey" && (step.verb == "SELECT" || step.verb == "AUTH"));
}

std::string stepCounter(const std::string& verb, bool setUp) { return setUp ? "set-up " + verb : verb; }

std::vector<Fault> faultsAt(const TracePoint& p, const std::vector<std::string>& kinds, int delayMs) {
  std::vector<Fault> out;
  for (const auto& kind : kinds) // each kind says where a sweep applies it
    if (kind == "error" && p.noError) continue; // the proxy can't stand in for its reply (docs/faults.md)
    else if (auto f = faultKind(kind, "--faults").sweptAt(p.fault, p.server, delayMs)) out.push_back(std::move(*f));
  return out;
}

int sweepDelayMs(int claimIdleMs) { return std::max(100, 3 * claimIdleMs); }

} // namespace idem
