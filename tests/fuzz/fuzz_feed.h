#pragma once
/// The body of the tracker fuzzers. The input is read as capture records (tests/captures/README.md):
/// a direction byte ('S' server->client, any other client->server), a big-endian uint32 length
/// (clamped to what is left), the bytes; so the recorded captures are seeds as they are.
///
/// Three trackers see the input: one in the recorded interleaving (crash coverage), one with each
/// direction's bytes whole (client first), one with each direction cut into pseudo-random pieces
/// chosen from the input's hash. The last two must report exactly the same messages; every reported
/// size must be > 0 and within the buffer. Any breach aborts, which libFuzzer reports as a crash.
#include "proxy/tracker.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace idem::proxy::fuzz {

/// Everything that matters of one reported message, as a string.
inline std::string key(const ClientMsg& m) {
  std::string k = "C" + std::to_string(int(m.kind)) + "/" + std::to_string(m.size) + "/" + m.step.verb + "/" +
                  m.step.detail + "/" + (m.step.blocking ? "b" : "") + "/" + m.local_reply;
  for (const auto& a : m.step.acked)
    k += "/" + a;
  return k;
}

inline std::string key(const ServerMsg& m) {
  const ReplyInfo& r = m.reply;
  std::string k = "S" + std::to_string(int(m.kind)) + "/" + std::to_string(m.size) + "/" + (r.error ? "e" : "") +
                  (r.empty_read ? "0" : "") + "/" + std::to_string(m.skipped) + "/" + r.summary + "/" + m.replacement;
  for (const auto& e : r.delivered) {
    k += "/" + e.id;
    for (const auto& [f, v] : e.fields)
      k += ":" + f + "=" + v;
  }
  return k;
}

/// One tracker and its pending bytes per direction, as the proxy keeps them.
class FuzzFeeder {
public:
  explicit FuzzFeeder(TrackerPtr t) : t_(std::move(t)) {}
  void client(std::string_view b) { drain<ClientMsg>(client_, client_done_, b, true); }
  void server(std::string_view b) { drain<ServerMsg>(server_, server_done_, b, false); }
  std::vector<std::string> log;

private:
  template <class Msg>
  void drain(std::string& pending, bool& done, std::string_view bytes, bool is_client) {
    if (done)
      return;
    pending += bytes;
    size_t at = 0;
    while (at < pending.size()) {
      const std::string_view buf = std::string_view(pending).substr(at);
      Msg m;
      Decode d;
      if constexpr (std::is_same_v<Msg, ClientMsg>)
        d = t_->onClient(buf, m);
      else
        d = t_->onServer(buf, m);
      if (d == Decode::NeedMoreData)
        break;
      if (d == Decode::Invalid) {
        log.push_back(is_client ? "C invalid" : "S invalid");
        done = true;
        break;
      }
      if (m.size == 0 || m.size > buf.size())
        abort();
      log.push_back(key(m));
      at += m.size;
    }
    pending.erase(0, at);
  }

  TrackerPtr t_;
  std::string client_, server_;
  bool client_done_ = false, server_done_ = false;
};

/// Runs the three trackers made by `make` over `data`; aborts on any breach.
inline void fuzzTracker(TrackerPtr (*make)(), const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::pair<bool, std::string_view>> chunks;
  std::string client, server;
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : in)
    hash = (hash ^ c) * 1099511628211ull;
  for (size_t pos = 0; pos < in.size();) {
    const bool is_client = in[pos] != 'S';
    size_t len = 0;
    for (size_t i = 1; i <= 4; ++i)
      len = (len << 8) | (pos + i < in.size() ? uint8_t(in[pos + i]) : 0);
    pos = std::min(in.size(), pos + 5);
    len = std::min(len, in.size() - pos);
    chunks.emplace_back(is_client, in.substr(pos, len));
    (is_client ? client : server) += in.substr(pos, len);
    pos += len;
  }
  FuzzFeeder recorded(make());
  for (const auto& [is_client, bytes] : chunks)
    is_client ? recorded.client(bytes) : recorded.server(bytes);

  FuzzFeeder whole(make()), pieces(make());
  whole.client(client);
  whole.server(server);
  for (const std::string* dir : {&client, &server}) {
    for (size_t i = 0; i < dir->size();) {
      hash = hash * 6364136223846793005ull + 1442695040888963407ull;
      const size_t n = 1 + (hash >> 33) % 97;
      const std::string_view piece = std::string_view(*dir).substr(i, n);
      dir == &client ? pieces.client(piece) : pieces.server(piece);
      i += n;
    }
  }
  if (whole.log != pieces.log)
    abort();
}

} // namespace idem::proxy::fuzz
