#include "search/shard.h"

#include "core/error.h"

#include <fmt/format.h>

#include <charconv>

namespace idem {

namespace {

std::optional<int> wholeNumber(const std::string& s) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

} // namespace

std::string Shard::str() const { return fmt::format("{}/{}", index, count); }

std::vector<size_t> shardItems(size_t n, const Shard& shard) {
  std::vector<size_t> out;
  for (size_t i = 0; i < n; ++i)
    if (shard.contains(i)) out.push_back(i);
  return out;
}

Shard parseShard(const std::string& text, const std::function<std::optional<std::string>(const std::string&)>& env) {
  auto bad = [&](const std::string& why) { return UsageError(fmt::format("--shard: '{}' {}", text, why)); };
  auto slash = text.find('/');
  if (slash == std::string::npos) throw bad("is not I/N or auto/N (e.g. 0/4: the first of 4 shards)");
  auto n = wholeNumber(text.substr(slash + 1));
  if (!n || *n < 1 || *n > kMaxShards) throw bad(fmt::format("has no number of shards N within 1..{}", kMaxShards));
  std::string head = text.substr(0, slash);
  Shard s;
  s.count = *n;
  if (head == "auto") {
    std::optional<int> i;
    if (auto k8s = env("JOB_COMPLETION_INDEX")) {
      i = wholeNumber(*k8s);
      if (!i) throw bad(fmt::format("JOB_COMPLETION_INDEX='{}' is not a whole number", *k8s));
    } else if (auto ci = env("CI_NODE_INDEX")) {
      auto one = wholeNumber(*ci);
      if (!one || *one < 1) throw bad(fmt::format("CI_NODE_INDEX='{}' is not a whole number from 1", *ci));
      i = *one - 1;
    } else {
      throw bad("needs JOB_COMPLETION_INDEX (Kubernetes Indexed Job) or CI_NODE_INDEX (GitLab parallel) set");
    }
    if (*i >= s.count) throw bad(fmt::format("the environment's shard index {} is not below N = {}", *i, s.count));
    s.index = *i;
    return s;
  }
  auto i = wholeNumber(head);
  if (!i || *i >= s.count) throw bad(fmt::format("has no shard index I within 0..{} (0-based)", s.count - 1));
  s.index = *i;
  return s;
}

} // namespace idem
