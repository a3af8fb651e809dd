#include "brokers/kafka/rewrite.h"

#include "brokers/kafka/api.h"
#include "brokers/kafka/walk.h"

#include <map>

namespace idem::kafka {
namespace {

class Rewriter final : public Visitor {
public:
  Rewriter(const std::map<int32_t, Address>& to, bool cap) : to_(to), cap_(cap) {}

  void value(Role role, int64_t v) override {
    if (role == Role::NodeId)
      node_ = static_cast<int32_t>(v);
    else if (role == Role::ApiKey)
      apiKey_ = static_cast<int16_t>(v);
  }
  std::optional<std::string> replaceText(Role role, std::optional<std::string_view> v) override {
    const auto it = to_.find(node_);
    if (role != Role::Host || it == to_.end() || (v && *v == it->second.host))
      return std::nullopt;
    return it->second.host;
  }
  std::optional<int64_t> replaceValue(Role role, int64_t v) override {
    if (role == Role::Port) {
      const auto it = to_.find(node_);
      if (it != to_.end() && it->second.port != v)
        return it->second.port;
    } else if (role == Role::MaxVersion && cap_) {
      const ApiInfo a = apiInfo(apiKey_);
      if (a.maxVersion >= 0 && v > a.maxVersion)
        return a.maxVersion;
    }
    return std::nullopt;
  }

private:
  const std::map<int32_t, Address>& to_;
  bool cap_;
  int32_t node_ = -1;
  int16_t apiKey_ = -1;
};

} // namespace

RewriteResult rewriteResponse(int16_t key, int16_t version, std::string_view body, const AddressFor& addressFor,
                              bool capVersions, TopicNames& names) {
  RewriteResult res;
  const ApiInfo a = apiInfo(key);
  // An ApiVersions error (UNSUPPORTED_VERSION: the client asked a version the broker lacks) lists only the
  // ApiVersions range, in whatever layout the broker picks (Kafka: version 0; librdkafka's mock: a
  // flexible one with a miscounted array): the client retries lower, and there is nothing to cap.
  if (key == api::kApiVersions && (body.size() < 2 || body[0] != 0 || body[1] != 0))
    return res;
  const bool flexible = isFlexible(a, version);
  const int ver = version;
  Collector c(names);
  if (!walk(body, responseSchema(key), ver, flexible, c)) {
    res.ok = false;
    return res;
  }
  res.brokers = c.nodes;
  res.maxVersions = c.maxVersions;
  std::map<int32_t, Address> to;
  if (addressFor)
    for (const Node& n : c.nodes)
      if (n.id >= 0)
        if (auto addr = addressFor(n.id, Address{n.host, n.port}))
          to[n.id] = *addr;
  const bool cap = capVersions && key == api::kApiVersions;
  if (to.empty() && !cap)
    return res;
  Rewriter rw(to, cap);
  Writer w;
  if (!walk(body, responseSchema(key), ver, flexible, rw, &w)) {
    res.ok = false;
    return res;
  }
  if (w.out != body)
    res.body = std::move(w.out);
  return res;
}

} // namespace idem::kafka
