#include "proxy/resp_script.h"

#include <boost/uuid/detail/sha1.hpp>
#include <boost/version.hpp>

#include <algorithm>
#include <cctype>

namespace idem::proxy {

std::string scriptSha(std::string_view body) {
  boost::uuids::detail::sha1 sha;
  sha.process_bytes(body.data(), body.size());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(40);
#if BOOST_VERSION >= 108600
  boost::uuids::detail::sha1::digest_type digest; // 20 bytes
  sha.get_digest(digest);
  for (unsigned char b : digest) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
#else
  unsigned int digest[5]; // five big-endian 32-bit words
  sha.get_digest(digest);
  for (unsigned int w : digest)
    for (int shift = 28; shift >= 0; shift -= 4) out += kHex[(w >> shift) & 15];
#endif
  return out;
}

namespace {

bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/// After `i` (just past "call" or "pcall"): `(`, blanks, a quoted word; the word uppercased, or "".
std::string quotedVerbAt(std::string_view body, size_t i) {
  while (i < body.size() && space(body[i])) ++i;
  if (i >= body.size() || body[i] != '(') return {};
  ++i;
  while (i < body.size() && space(body[i])) ++i;
  if (i >= body.size() || (body[i] != '\'' && body[i] != '"')) return {};
  const char quote = body[i++];
  std::string verb;
  for (; i < body.size() && body[i] != quote; ++i) {
    const auto c = static_cast<unsigned char>(body[i]);
    if (!std::isalpha(c)) return {};
    verb += static_cast<char>(std::toupper(c));
  }
  return i < body.size() ? verb : std::string{};
}

} // namespace

std::vector<std::string> scriptStreamCalls(std::string_view body) {
  std::vector<std::string> out;
  for (std::string_view prefix : {std::string_view("redis."), std::string_view("server.")}) {
    for (size_t at = body.find(prefix); at != std::string_view::npos; at = body.find(prefix, at + 1)) {
      size_t i = at + prefix.size();
      if (body.substr(i, 4) == "call") i += 4;
      else if (body.substr(i, 5) == "pcall") i += 5;
      else continue;
      const std::string verb = quotedVerbAt(body, i);
      if (verb.size() > 1 && verb[0] == 'X' && std::find(out.begin(), out.end(), verb) == out.end())
        out.push_back(verb);
    }
  }
  return out;
}

std::vector<std::string> entryIdArgs(const std::vector<std::string_view>& args, size_t from) {
  std::vector<std::string> out;
  for (size_t i = from; i < args.size(); ++i) {
    const std::string_view a = args[i];
    const size_t dash = a.find('-');
    auto digits = [](std::string_view s) {
      return !s.empty() && s.size() <= 20 &&
             std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (dash != std::string_view::npos && digits(a.substr(0, dash)) && digits(a.substr(dash + 1)))
      out.emplace_back(a);
  }
  return out;
}

} // namespace idem::proxy
