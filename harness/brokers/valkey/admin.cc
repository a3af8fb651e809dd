#include "brokers/valkey/admin.h"

#include "core/error.h"

#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include <stdexcept>

namespace idem {

namespace {

nlohmann::json toJson(const redisReply* r, const std::string& where) {
  switch (r->type) {
  case REDIS_REPLY_STRING:
  case REDIS_REPLY_STATUS:
    return std::string(r->str, r->len);
  case REDIS_REPLY_INTEGER:
    return r->integer;
  case REDIS_REPLY_NIL:
    return nullptr;
  case REDIS_REPLY_ARRAY: {
    auto a = nlohmann::json::array();
    for (size_t i = 0; i < r->elements; ++i) a.push_back(toJson(r->element[i], where));
    return a;
  }
  case REDIS_REPLY_ERROR:
    throw std::runtime_error(fmt::format("{}: {}", where, std::string(r->str, r->len)));
  default:
    return nullptr;
  }
}

} // namespace

ValkeyAdmin::ValkeyAdmin(const std::string& host, int port, const std::string& password, int db)
    : where_(fmt::format("Valkey at {}:{}", host, port)) {
  struct timeval tv {5, 0};
  ctx_ = redisConnectWithTimeout(host.c_str(), port, tv);
  if (!ctx_ || ctx_->err) {
    std::string why = ctx_ ? ctx_->errstr : "out of memory";
    if (ctx_) redisFree(ctx_);
    ctx_ = nullptr;
    throw UsageError(fmt::format("cannot connect to {}: {}", where_, why));
  }
  redisSetTimeout(ctx_, tv);
  if (!password.empty()) command({"AUTH", password});
  if (db != 0) command({"SELECT", std::to_string(db)});
}

ValkeyAdmin::~ValkeyAdmin() {
  if (ctx_) redisFree(ctx_);
}

nlohmann::json ValkeyAdmin::command(const std::vector<std::string>& argv) {
  return pipeline({argv}).front();
}

std::vector<nlohmann::json> ValkeyAdmin::pipeline(const std::vector<std::vector<std::string>>& cmds) {
  for (const auto& argv : cmds) {
    std::vector<const char*> ptrs;
    std::vector<size_t> lens;
    for (const auto& a : argv) {
      ptrs.push_back(a.data());
      lens.push_back(a.size());
    }
    redisAppendCommandArgv(ctx_, static_cast<int>(argv.size()), ptrs.data(), lens.data());
  }
  std::vector<nlohmann::json> out;
  std::string firstError;
  for (size_t i = 0; i < cmds.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(ctx_, &raw) != REDIS_OK || !raw)
      throw std::runtime_error(fmt::format("{}: {}", where_, ctx_->errstr));
    auto* r = static_cast<redisReply*>(raw);
    try {
      out.push_back(toJson(r, where_));
    } catch (const std::exception& e) {
      if (firstError.empty()) firstError = e.what();
      out.push_back(nullptr);
    }
    freeReplyObject(r);
  }
  if (!firstError.empty()) throw std::runtime_error(firstError);
  return out;
}

} // namespace idem
