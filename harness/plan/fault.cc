#include "plan/fault.h"

#include "core/error.h"
#include "plan/fault_kind.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <tuple>

namespace idem {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t from = 0;
  for (size_t at; (at = s.find(sep, from)) != std::string::npos; from = at + 1) out.push_back(s.substr(from, at - from));
  out.push_back(s.substr(from));
  return out;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

} // namespace

std::string Fault::step() const { return process.empty() ? fmt::format("{}#{}", verb, k) : fmt::format("{}:{}#{}", process, verb, k); }

std::string Fault::point() const {
  return fmt::format("{}{}:{}#{}", process.empty() ? "" : process + ":", when == When::Before ? "before" : "after",
                     verb, k);
}

std::string Fault::str() const {
  std::string s = isKill() ? point() : kind + ":" + point();
  for (const auto& a : args) s += ":" + a;
  return s;
}

Fault Fault::kill(When when, std::string verb, int k) {
  Fault f;
  f.when = when;
  f.verb = std::move(verb);
  f.k = k;
  return f;
}

Fault Fault::parse(const std::string& text, const std::string& what) {
  auto bad = [&](const std::string& why) {
    return UsageError(fmt::format("{}: '{}': {} (expected [KIND:][cN:|rN:|sN:]before|after:VERB#k[:ARG...], e.g. after:COMMIT#3 "
                                  "or drop:after:XACK#2 or c2:after:COMMIT#1 or kill:r1:after:COMMIT#1 or kill:s2:after:COMMIT#1; kinds: {})",
                                  what, text, why, fmt::join(faultKinds(), ", ")));
  };
  std::vector<std::string> parts = split(text, ':');
  Fault f;
  size_t at = 0;
  auto isProcess = [](const std::string& p) { return isProcessLabel(p); };
  std::string first = lower(parts[0]);
  if (first != "before" && first != "after" && !isProcess(first)) {
    if (parts.size() < 2) throw bad("missing ':'");
    f.kind = first;
    at = 1;
    try {
      faultKind(f.kind, what);
    } catch (const UsageError&) {
      throw bad(fmt::format("'{}' is no fault kind, nor before or after", parts[0]));
    }
  }
  if (at < parts.size() && isProcess(lower(parts[at]))) f.process = lower(parts[at++]);
  if (at >= parts.size()) throw bad("missing before: or after:");
  std::string when = lower(parts[at]);
  if (when == "before") f.when = When::Before;
  else if (when == "after") f.when = When::After;
  else throw bad("must say before: or after:");
  if (at + 1 >= parts.size()) throw bad("missing VERB#k");
  const std::string& step = parts[at + 1];
  auto hash = step.find('#');
  if (hash == std::string::npos) throw bad("missing '#k'");
  f.verb = step.substr(0, hash);
  if (f.verb.empty()) throw bad("empty verb");
  for (char& c : f.verb) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
      throw bad("verb has a character that is not a letter, digit, '_', '-' or '.'");
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  std::string num = step.substr(hash + 1);
  if (num.empty() || num.size() > 6 || !std::all_of(num.begin(), num.end(), ::isdigit)) throw bad("k must be a number");
  f.k = std::stoi(num);
  if (f.k < 1) throw bad("k counts from 1");
  f.args.assign(parts.begin() + static_cast<long>(at) + 2, parts.end());
  faultKind(f.kind, what).check(f, fmt::format("{}: '{}'", what, text));
  return f;
}

bool isProcessLabel(const std::string& p) {
  return p.size() >= 2 && p.size() <= 4 && (p[0] == 'c' || p[0] == 'r' || p[0] == 's') &&
         std::all_of(p.begin() + 1, p.end(), ::isdigit) && p[1] != '0';
}

bool isRelayLabel(const std::string& p) { return isProcessLabel(p) && p[0] == 'r'; }

bool isServerLabel(const std::string& p) { return isProcessLabel(p) && p[0] == 's'; }

bool Fault::operator==(const Fault& o) const {
  return kind == o.kind && samePoint(o) && args == o.args;
}

bool Fault::operator<(const Fault& o) const {
  return std::tie(process, verb, k, when, kind, args) < std::tie(o.process, o.verb, o.k, o.when, o.kind, o.args);
}

void to_json(nlohmann::json& j, const Fault& f) { j = f.str(); }
void from_json(const nlohmann::json& j, Fault& f) { f = Fault::parse(j.get<std::string>(), "fault"); }

std::string serverTitle(const std::string& server) {
  if (server == "pg") return "PostgreSQL";
  if (server == "nats") return "NATS";
  if (server == "rabbitmq") return "RabbitMQ";
  std::string t = server;
  if (!t.empty()) t[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(t[0])));
  return t;
}

} // namespace idem
