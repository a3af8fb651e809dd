#include "brokers/valkey/valkey_broker.h"
#include "brokers/valkey/admin.h"

#include "core/cleanup.h"

#include <fmt/format.h>

namespace idem::brokers {

namespace {

std::vector<int64_t> idParts(const std::string& id) {
  auto dash = id.find('-');
  if (dash == std::string::npos) return {std::stoll(id), 0};
  return {std::stoll(id.substr(0, dash)), std::stoll(id.substr(dash + 1))};
}

/// The group's pending count and last-delivered id in an XINFO GROUPS reply.
std::pair<int64_t, std::string> groupOf(const nlohmann::json& groups, const std::string& group) {
  std::pair<int64_t, std::string> out{0, "0-0"};
  for (const auto& g : groups) {
    std::map<std::string, nlohmann::json> m;
    for (size_t i = 0; i + 1 < g.size(); i += 2) m[g[i].get<std::string>()] = g[i + 1];
    if (m["name"] != group) continue;
    out = {m["pending"].get<int64_t>(), m["last-delivered-id"].get<std::string>()};
  }
  return out;
}

/// Compares stream ids "ms-seq" numerically.
int compareIds(const std::string& a, const std::string& b) {
  auto x = idParts(a), y = idParts(b);
  if (x < y) return -1;
  if (y < x) return 1;
  return 0;
}

} // namespace

ValkeyBroker::ValkeyBroker(ValkeyEndpoint endpoint, std::string stream, std::string group)
    : ep_(std::move(endpoint)), stream_(std::move(stream)), group_(std::move(group)) {
  admin_ = std::make_unique<ValkeyAdmin>(ep_.host, ep_.port, ep_.password, ep_.db);
  if (!ep_.owned) {
    // The server is the user's: on a signal, delete what we made.
    auto ep = ep_;
    auto str = stream_;
    cleanupId_ = Cleanup::instance().add("stream " + stream_, [ep, str] {
      try {
        ValkeyAdmin(ep.host, ep.port, ep.password, ep.db).command({"DEL", str});
      } catch (const std::exception&) {
      }
    });
  }
}

ValkeyBroker::~ValkeyBroker() {
  if (cleanupId_ < 0) return;
  Cleanup::instance().remove(cleanupId_);
  try {
    admin_->command({"DEL", stream_});
    if (!deadLetter_.empty()) admin_->command({"DEL", deadLetter_});
  } catch (const std::exception&) {
  }
}

proxy::TrackerPtr ValkeyBroker::tracker(int) { return proxy::makeRespTracker(); }

void ValkeyBroker::reconnect() { admin_ = std::make_unique<ValkeyAdmin>(ep_.host, ep_.port, ep_.password, ep_.db); }

void ValkeyBroker::reset() {
  std::vector<std::vector<std::string>> cmds;
  if (ep_.owned) {
    // The scripts and functions a consumer loaded go too: a client that sends EVALSHA first (redis-py's
    // register_script) then loads its script in every run alike, so its steps, and the points on them, are
    // the same from run to run.
    cmds.push_back({"FLUSHDB"});
    cmds.push_back({"SCRIPT", "FLUSH"});
    cmds.push_back({"FUNCTION", "FLUSH"});
  } else {
    cmds.push_back({"DEL", stream_});
  }
  cmds.push_back({"XGROUP", "CREATE", stream_, group_, "0", "MKSTREAM"});
  admin_->pipeline(cmds);
  lastPublished_ = "0-0";
}

std::vector<std::string> ValkeyBroker::publish(const std::vector<Message>& messages) {
  std::vector<std::vector<std::string>> cmds;
  for (const auto& m : messages) {
    std::vector<std::string> argv{"XADD", stream_, "*"};
    for (const auto& [k, v] : m.fields) {
      argv.push_back(k);
      argv.push_back(v);
    }
    cmds.push_back(std::move(argv));
  }
  std::vector<std::string> ids;
  if (cmds.empty()) return ids;
  for (const auto& r : admin_->pipeline(cmds)) ids.push_back(r.get<std::string>());
  lastPublished_ = ids.back();
  return ids;
}

Progress ValkeyBroker::progress() {
  auto [pending, last] = groupOf(admin_->command({"XINFO", "GROUPS", stream_}), group_);
  // Delivered: the group has read past every entry published, or none it has not read is left in the stream
  // (a consumer that XDELs what it acknowledged, and a forget that set the group back: the deleted entries
  // can never be delivered again, and waiting for them would never end).
  bool delivered = compareIds(last, lastPublished_) >= 0;
  if (!delivered && !last.empty()) delivered = admin_->command({"XRANGE", stream_, "(" + last, "+", "COUNT", "1"}).empty();
  return {pending, delivered, last};
}

void ValkeyBroker::forget() {
  // Entries re-read with '>' replace their pending records (same id, this consumer, one delivery).
  admin_->command({"XGROUP", "SETID", stream_, group_, "0"});
}

std::optional<std::pair<int64_t, int64_t>> ValkeyBroker::ageKeys(int64_t ms) {
  // SCAN the workspace's db (the consumers' own marks share it with the stream), PTTL each batch in one
  // round trip, then move what has a TTL. A key that expires on its own meanwhile answers PEXPIRE 0: as if
  // it had been deleted here.
  int64_t moved = 0, expired = 0;
  std::string cursor = "0";
  do {
    auto page = admin_->command({"SCAN", cursor, "COUNT", "1000"});
    cursor = page.at(0).get<std::string>();
    std::vector<std::string> keys;
    for (const auto& k : page.at(1)) keys.push_back(k.get<std::string>());
    if (keys.empty()) continue;
    std::vector<std::vector<std::string>> ttls;
    for (const auto& k : keys) ttls.push_back({"PTTL", k});
    auto left = admin_->pipeline(ttls);
    std::vector<std::vector<std::string>> moves;
    for (size_t i = 0; i < keys.size(); ++i) {
      const int64_t ttl = left.at(i).get<int64_t>();
      if (ttl < 0) continue; // -1: no TTL (the stream, a mark kept for good); -2: gone already
      if (ttl - ms <= 0) {
        moves.push_back({"DEL", keys[i]});
        ++expired;
      } else {
        moves.push_back({"PEXPIRE", keys[i], std::to_string(ttl - ms)});
        ++moved;
      }
    }
    if (!moves.empty()) admin_->pipeline(moves);
  } while (cursor != "0");
  return std::make_pair(moved, expired);
}

Leftover ValkeyBroker::leftover() {
  Leftover l;
  // One round trip: the pending entries, the group, the stream.
  auto replies = admin_->pipeline({{"XPENDING", stream_, group_, "-", "+", "100000"}, {"XINFO", "GROUPS", stream_},
                                   {"XRANGE", stream_, "-", "+"}});
  for (const auto& p : replies.at(0))
    l.pending.push_back({p[0].get<std::string>(), p[1].get<std::string>(), p[2].get<int64_t>(), p[3].get<int>()});
  l.position = groupOf(replies.at(1), group_).second;
  for (const auto& e : replies.at(2)) {
    std::string id = e[0].get<std::string>();
    l.stream.push_back(id);
    if (compareIds(id, l.position) > 0) l.undelivered.push_back(id);
  }
  return l;
}

std::string ValkeyBroker::deadLetter(const std::string& kind, const std::string& declared) {
  if (kind != "stream") return "";
  deadLetter_ = stream_ + "." + declared;
  if (!ep_.owned) admin_->command({"DEL", deadLetter_}); // an owned server's FLUSHDB (reset) emptied it
  return deadLetter_;
}

std::vector<DeadLetter> ValkeyBroker::deadLetters(const std::string& idField) {
  std::vector<DeadLetter> out;
  if (deadLetter_.empty()) return out;
  for (const auto& e : admin_->command({"XRANGE", deadLetter_, "-", "+"})) {
    DeadLetter d{e[0].get<std::string>(), std::nullopt};
    const auto& fields = e[1];
    for (size_t i = 0; i + 1 < fields.size(); i += 2)
      if (fields[i].is_string() && fields[i].get<std::string>() == idField && fields[i + 1].is_string())
        d.eventId = fields[i + 1].get<std::string>();
    out.push_back(std::move(d));
  }
  return out;
}

std::map<std::string, std::string> ValkeyBroker::connectionEnv(int proxyPort) const {
  std::string url = ep_.password.empty() ? fmt::format("redis://127.0.0.1:{}/{}", proxyPort, ep_.db)
                                         : fmt::format("redis://:{}@127.0.0.1:{}/{}", ep_.password, proxyPort, ep_.db);
  return {{"VALKEY_URL", url}, {"REDIS_URL", url}};
}

} // namespace idem::brokers
