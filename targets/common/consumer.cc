#include "consumer.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <thread>

#include <unistd.h>

namespace idem::targets {
namespace {

constexpr size_t kCount = 10; // entries per read
constexpr const char* kCountText = "10";

volatile std::sig_atomic_t stopFlag = 0;
volatile std::sig_atomic_t inIdleRead = 0; // blocked in XREADGROUP ... BLOCK with nothing in hand

/// SIGTERM: finish the entry in hand, then stop. Blocked in an idle read (hiredis retries a read that
/// EINTR interrupted, so the flag alone would wait out the BLOCK timeout), there is nothing to finish:
/// exit at once.
void onSigterm(int) {
  stopFlag = 1;
  if (inIdleRead) _exit(0);
}

std::string requireEnv(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0')
    throw std::runtime_error(std::string("missing environment variable ") + name);
  return v;
}

/// One entry of a read reply: [id, [field, value, ...]] (the field array is nil for an entry that was
/// deleted from the stream while pending).
Entry parseEntry(const redisReply* r) {
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2)
    throw std::runtime_error("valkey: unexpected entry shape");
  Entry e;
  e.id = replyText(r->element[0], "entry id");
  const redisReply* f = r->element[1];
  if (f->type == REDIS_REPLY_ARRAY)
    for (size_t i = 0; i + 1 < f->elements; i += 2)
      e.fields.emplace_back(replyText(f->element[i], "field"), replyText(f->element[i + 1], "value"));
  return e;
}

std::vector<Entry> parseEntries(const redisReply* list) {
  if (list->type != REDIS_REPLY_ARRAY)
    throw std::runtime_error("valkey: unexpected entry list shape");
  std::vector<Entry> out;
  for (size_t i = 0; i < list->elements; ++i)
    out.push_back(parseEntry(list->element[i]));
  return out;
}

/// XREADGROUP reply: nil on a BLOCK timeout, else [[stream, [entry...]]].
std::vector<Entry> parseRead(const redisReply* r) {
  if (r->type == REDIS_REPLY_NIL)
    return {};
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 1 || r->element[0]->type != REDIS_REPLY_ARRAY ||
      r->element[0]->elements != 2)
    throw std::runtime_error("valkey: unexpected XREADGROUP reply shape");
  return parseEntries(r->element[0]->element[1]);
}

class Loop {
public:
  Loop(Valkey& v, const Config& c, const Handler& h) : valkey_(v), config_(c), handler_(h) {}

  void run() {
    readOwnPending();
    std::string claimCursor = "0-0";
    while (!stopRequested()) {
      // Redis 7: [next cursor, [entry...], [deleted id...]]; Redis 6.2 has no third element.
      ReplyPtr r = valkey_.command({"XAUTOCLAIM", config_.stream, config_.group, config_.consumer,
                                    config_.claimIdleMs, claimCursor, "COUNT", kCountText});
      if (r->type != REDIS_REPLY_ARRAY || r->elements < 2)
        throw std::runtime_error("valkey: unexpected XAUTOCLAIM reply shape");
      claimCursor = replyText(r->element[0], "XAUTOCLAIM cursor");
      handle(parseEntries(r->element[1]));
      if (!stopRequested()) {
        inIdleRead = 1;
        std::vector<Entry> batch = readGroup({"BLOCK", "100", "STREAMS", config_.stream, ">"});
        inIdleRead = 0;
        handle(batch);
      }
    }
  }

private:
  /// XREADGROUP GROUP $GROUP $CONSUMER COUNT 10 <tail...>
  std::vector<Entry> readGroup(std::vector<std::string> tail) {
    std::vector<std::string> argv{"XREADGROUP", "GROUP", config_.group, config_.consumer, "COUNT", kCountText};
    argv.insert(argv.end(), tail.begin(), tail.end());
    return parseRead(valkey_.command(argv).get());
  }

  void readOwnPending() {
    std::string cursor = "0";
    while (!stopRequested()) {
      std::vector<Entry> batch = readGroup({"STREAMS", config_.stream, cursor});
      if (batch.empty())
        return;
      cursor = batch.back().id;
      handle(batch);
      if (batch.size() < kCount)
        return; // a short batch is the end of the list: no need to read an empty one
    }
  }

  void handle(const std::vector<Entry>& batch) {
    for (const Entry& e : batch) {
      if (stopRequested())
        return; // what is left stays pending: this consumer or another one claims it later
      if (e.fields.empty()) {
        std::cerr << "entry " << e.id << " was deleted from the stream; acknowledging it\n";
        ack(e);
        continue;
      }
      if (handler_(e) == Outcome::Ack)
        ack(e);
    }
  }

  void ack(const Entry& e) { valkey_.command({"XACK", config_.stream, config_.group, e.id}); }

  Valkey& valkey_;
  const Config& config_;
  const Handler& handler_;
};

} // namespace

Config configFromEnv() {
  Config c;
  c.databaseUrl = requireEnv("DATABASE_URL");
  const char* v = std::getenv("VALKEY_URL");
  c.valkeyUrl = (v != nullptr && *v != '\0') ? v : requireEnv("REDIS_URL");
  c.stream = requireEnv("STREAM");
  c.group = requireEnv("GROUP");
  c.consumer = requireEnv("CONSUMER");
  c.claimIdleMs = requireEnv("CLAIM_IDLE_MS");
  return c;
}

const std::string& Entry::field(std::string_view name) const {
  for (const auto& [k, v] : fields)
    if (k == name)
      return v;
  throw std::runtime_error("entry " + id + ": missing field '" + std::string(name) + "'");
}

long long integerField(const Entry& e, std::string_view name) {
  const std::string& text = e.field(name);
  long long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    throw std::runtime_error("entry " + e.id + ": field '" + std::string(name) + "' is not an integer: " +
                             text);
  return value;
}

std::string oneLine(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

void runConsumer(Valkey& valkey, const Config& config, const Handler& handler) {
  Loop(valkey, config, handler).run();
}

bool stopRequested() { return stopFlag != 0; }

long long workMsFromEnv() {
  const char* v = std::getenv("WORK_MS");
  if (v == nullptr || *v == '\0') return 0;
  long long ms = 0;
  auto [end, ec] = std::from_chars(v, v + std::strlen(v), ms);
  if (ec != std::errc() || *end != '\0' || ms < 0)
    throw std::runtime_error(std::string("WORK_MS is not a number of milliseconds: ") + v);
  return ms;
}

bool workFor(long long ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (!stopRequested()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) return true;
    std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(50)));
  }
  return false;
}

int consumerMain(const char* name, const std::function<void()>& body) {
  struct sigaction sa {};
  sa.sa_handler = onSigterm;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  try {
    body();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << name << ": " << e.what() << std::endl;
    return 1;
  }
}

} // namespace idem::targets
