#include "core/history.h"

namespace idem {

void to_json(nlohmann::json& j, const Op& op) {
  j = nlohmann::json{{"index", op.index}, {"time_us", op.time_us}, {"type", op.type},
                     {"process", op.process}, {"value", op.value}};
}

void from_json(const nlohmann::json& j, Op& op) {
  op.index = j.at("index").get<int64_t>();
  op.time_us = j.at("time_us").get<int64_t>();
  op.type = j.at("type").get<std::string>();
  op.process = j.at("process").get<std::string>();
  op.value = j.value("value", nlohmann::json::object());
}

History::History() : start_(std::chrono::steady_clock::now()) {}

History::History(const History& o) {
  std::lock_guard<std::mutex> lock(o.mu_);
  ops_ = o.ops_;
  start_ = o.start_;
}

History& History::operator=(const History& o) {
  if (this == &o) return *this;
  std::scoped_lock lock(mu_, o.mu_);
  ops_ = o.ops_;
  start_ = o.start_;
  return *this;
}

int64_t History::nowUs() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start_)
      .count();
}

int64_t History::append(std::string type, std::string process, nlohmann::json value) {
  std::lock_guard<std::mutex> lock(mu_);
  Op op;
  op.index = static_cast<int64_t>(ops_.size());
  op.time_us = nowUs();
  op.type = std::move(type);
  op.process = std::move(process);
  op.value = std::move(value);
  ops_.push_back(std::move(op));
  return ops_.back().index;
}

std::vector<Op> History::ops() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ops_;
}

nlohmann::json History::toJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  return nlohmann::json(ops_);
}

History History::fromJson(const nlohmann::json& j) {
  History h;
  h.ops_ = j.get<std::vector<Op>>();
  return h;
}

} // namespace idem
