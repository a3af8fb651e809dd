#include "plan/kill_point.h"

#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <tuple>

namespace idem {

std::string KillPoint::str() const {
  return fmt::format("{}:{}#{}", when == When::Before ? "before" : "after", verb, k);
}

bool KillPoint::operator<(const KillPoint& o) const {
  return std::tie(verb, k, when) < std::tie(o.verb, o.k, o.when);
}

KillPoint KillPoint::parse(const std::string& text, const std::string& what) {
  auto bad = [&](const std::string& why) {
    return UsageError(fmt::format("{}: '{}': {} (expected before:VERB#k or after:VERB#k, e.g. after:COMMIT#3)",
                                  what, text, why));
  };
  auto colon = text.find(':');
  if (colon == std::string::npos) throw bad("missing ':'");
  std::string when = text.substr(0, colon);
  std::transform(when.begin(), when.end(), when.begin(), ::tolower);
  KillPoint p;
  if (when == "before") p.when = When::Before;
  else if (when == "after") p.when = When::After;
  else throw bad("must start with before: or after:");
  auto hash = text.find('#', colon);
  if (hash == std::string::npos) throw bad("missing '#k'");
  p.verb = text.substr(colon + 1, hash - colon - 1);
  if (p.verb.empty()) throw bad("empty verb");
  for (char& c : p.verb) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
      throw bad("verb has a character that is not a letter, digit, '_', '-' or '.'");
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  std::string num = text.substr(hash + 1);
  if (num.empty() || num.size() > 6 || !std::all_of(num.begin(), num.end(), ::isdigit)) throw bad("k must be a number");
  p.k = std::stoi(num);
  if (p.k < 1) throw bad("k counts from 1");
  return p;
}

void to_json(nlohmann::json& j, const KillPoint& p) { j = p.str(); }
void from_json(const nlohmann::json& j, KillPoint& p) { p = KillPoint::parse(j.get<std::string>(), "kill point"); }

} // namespace idem
