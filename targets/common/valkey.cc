#include "valkey.h"

#include <charconv>
#include <stdexcept>

namespace idem::targets {
namespace {

int parseNumber(std::string_view text, const std::string& url, const char* what) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0)
    throw std::runtime_error("VALKEY_URL " + url + ": bad " + what);
  return value;
}

std::string percentDecoded(std::string_view text, const std::string& url) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    int value = 0;
    if (i + 2 >= text.size() || std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16).ptr != text.data() + i + 3)
      throw std::runtime_error("VALKEY_URL " + url + ": bad percent-encoding");
    out += static_cast<char>(value);
    i += 2;
  }
  return out;
}

} // namespace

ValkeyUrl parseValkeyUrl(const std::string& url) {
  constexpr std::string_view scheme = "redis://";
  if (url.rfind(scheme, 0) != 0)
    throw std::runtime_error("VALKEY_URL " + url + ": expected redis://host[:port][/db]");
  std::string_view rest = std::string_view(url).substr(scheme.size());
  if (rest.find('?') != std::string_view::npos)
    throw std::runtime_error("VALKEY_URL " + url + ": options are not supported");
  ValkeyUrl out;
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    std::string_view userInfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    auto colon = userInfo.find(':');
    out.user = percentDecoded(userInfo.substr(0, colon), url);
    if (colon != std::string_view::npos) out.password = percentDecoded(userInfo.substr(colon + 1), url);
  }
  std::string_view hostPort = rest.substr(0, rest.find('/'));
  if (auto slash = rest.find('/'); slash != std::string_view::npos && slash + 1 < rest.size())
    out.db = parseNumber(rest.substr(slash + 1), url, "db");
  auto colon = hostPort.rfind(':');
  if (colon != std::string_view::npos) {
    out.port = parseNumber(hostPort.substr(colon + 1), url, "port");
    hostPort = hostPort.substr(0, colon);
  }
  if (hostPort.empty())
    throw std::runtime_error("VALKEY_URL " + url + ": missing host");
  out.host = std::string(hostPort);
  return out;
}

Valkey::Valkey(const std::string& url) {
  ValkeyUrl u = parseValkeyUrl(url);
  ctx_ = redisConnect(u.host.c_str(), u.port);
  if (ctx_ == nullptr)
    throw std::runtime_error("valkey: cannot allocate a context");
  if (ctx_->err) {
    std::string msg = "valkey: connect to " + url + ": " + ctx_->errstr;
    redisFree(ctx_);
    ctx_ = nullptr;
    throw std::runtime_error(msg);
  }
  if (!u.password.empty()) {
    if (u.user.empty())
      command({"AUTH", u.password});
    else
      command({"AUTH", u.user, u.password});
  }
  if (u.db != 0)
    command({"SELECT", std::to_string(u.db)});
}

Valkey::~Valkey() {
  if (ctx_ != nullptr)
    redisFree(ctx_);
}

ReplyPtr Valkey::command(const std::vector<std::string>& argv) {
  std::vector<const char*> args;
  std::vector<size_t> lens;
  for (const auto& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  ReplyPtr reply(static_cast<redisReply*>(
      redisCommandArgv(ctx_, static_cast<int>(args.size()), args.data(), lens.data())));
  if (!reply)
    throw std::runtime_error("valkey: " + argv.at(0) + ": " + (ctx_->err ? ctx_->errstr : "no reply"));
  if (reply->type == REDIS_REPLY_ERROR)
    throw std::runtime_error("valkey: " + argv.at(0) + ": " + std::string(reply->str, reply->len));
  return reply;
}

std::string replyText(const redisReply* r, const char* what) {
  if (r == nullptr || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS))
    throw std::runtime_error(std::string("valkey: unexpected reply shape: ") + what);
  return std::string(r->str, r->len);
}

} // namespace idem::targets
