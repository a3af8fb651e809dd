#include "target/manifest.h"
#include "target/target_env.h"

#include "core/error.h"
#include "core/json_file.h"
#include "scenario/json_fields.h"

#include <fmt/format.h>

#include <algorithm>

#include <unistd.h>

namespace idem {

namespace {

namespace fs = std::filesystem;

bool validEnvName(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::map<std::string, std::string> readEnv(const detail::FieldReader& r) {
  std::map<std::string, std::string> env;
  if (!r.has("env")) return env;
  const auto& j = r.raw("env");
  if (!j.is_object()) r.fail("env", "must be an object of strings");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!validEnvName(it.key())) r.fail("env." + it.key(), "is not a valid environment variable name");
    if (isReservedEnv(it.key()))
      r.fail("env." + it.key(), it.key().rfind("LD_", 0) == 0
                                    ? "the dynamic loader's variables (LD_*) cannot be set by a target"
                                    : "is set by idemproof (docs/target-contract.md) and cannot be overridden");
    if (!it.value().is_string()) r.fail("env." + it.key(), "must be a string");
    env[it.key()] = it.value().get<std::string>();
  }
  // What a value may name (${NAME}): a variable idemproof sets for the process, or one of its own
  // environment. Checked here, before any server starts; expanded at each start (supervisor/workspace.cc).
  std::map<std::string, std::string> known;
  for (const auto& name : reservedEnv()) known[name];
  for (char** e = environ; e && *e; ++e) {
    const std::string_view kv(*e);
    known[std::string(kv.substr(0, kv.find('=')))];
  }
  for (const auto& [k, v] : env) {
    try {
      expandVars(v, known, "");
    } catch (const UsageError& e) {
      r.fail("env." + k, std::string(e.what()).substr(2)); // without expandVars' empty "what: "
    }
  }
  return env;
}

} // namespace

const Expectation& Target::expected(const std::string& scenario, const std::string& sinkPolicy) const {
  if (auto s = expectBySinkPolicy.find(scenario); s != expectBySinkPolicy.end())
    if (auto p = s->second.find(sinkPolicy); p != s->second.end()) return p->second;
  return expect.at(scenario);
}

bool Target::implements(const std::string& scenario) const {
  return std::find(scenarios.begin(), scenarios.end(), scenario) != scenarios.end();
}

Target loadTarget(const fs::path& dirOrFile) {
  std::error_code ec;
  fs::path manifest = dirOrFile;
  if (fs::is_directory(dirOrFile, ec)) {
    manifest = dirOrFile / "target.json";
    if (!fs::exists(manifest, ec)) throw UsageError(fmt::format("{}: no target.json", dirOrFile.string()));
  } else if (dirOrFile.extension() != ".json") {
    throw UsageError(fmt::format("{}: no such target folder", dirOrFile.string()));
  }
  return targetFromJson(readJsonFile(manifest, manifest.string(), kManifestMaxBytes), manifest);
}

Target targetFromJson(const nlohmann::json& j, const fs::path& manifest) {
  std::error_code ec;
  const std::string what = manifest.string();
  detail::FieldReader r(j, what, "");
  r.onlyKnown({"name", "kind", "broker", "health", "command", "processes", "outbox", "env", "schema", "scenarios", "expect",
               "files_outside",
               "dedup_ttl_ms"});

  Target t;
  t.manifest = fs::absolute(manifest).lexically_normal();
  t.dir = t.manifest.parent_path();
  t.name = *r.str("name", true);
  if (t.name.size() > kMaxNameBytes) r.fail("name", fmt::format("{} bytes, more than {}", t.name.size(), kMaxNameBytes));
  if (r.has("kind")) t.kind = r.oneOf("kind", {"consumer", "http"});
  if (r.has("broker")) {
    t.broker = r.oneOf("broker", {"valkey", "kafka", "nats", "rabbitmq"});
    if (t.kind != "consumer") r.fail("broker", "only a consumer reads from a broker; an HTTP target has none");
  }
  if (auto health = r.str("health", false)) {
    if (t.kind != "http") r.fail("health", "only an HTTP target (\"kind\": \"http\") has a health path");
    if ((*health)[0] != '/' || health->find_first_of(" \r\n\t") != std::string::npos)
      r.fail("health", fmt::format("'{}' is not an absolute request path (\"/healthz\")", *health));
    t.health = *health;
  }
  if (r.has("files_outside") && !r.raw("files_outside").is_boolean()) r.fail("files_outside", "must be true or false");
  const bool outsideAllowed = r.has("files_outside") && r.raw("files_outside").get<bool>();
  // A file the manifest names (schema, a relative program path) stays inside the target's folder, unless
  // the manifest says "files_outside": true.
  auto inside = [&](const std::string& field, const fs::path& p) {
    if (outsideAllowed) return;
    fs::path dir = fs::weakly_canonical(t.dir, ec), file = fs::weakly_canonical(p, ec);
    auto rel = file.lexically_relative(dir);
    if (rel.empty() || *rel.begin() == "..")
      r.fail(field, fmt::format("'{}' is outside the target's folder {} (set \"files_outside\": true to allow it)",
                                p.string(), t.dir.string()));
  };
  // The consumer's argv: "command", or "processes": {"consumer": [...], "relay": [...]}.
  auto argv = [&](const detail::FieldReader& in, const std::string& key, const std::string& field) {
    if (!in.has(key) || !in.raw(key).is_array() || in.raw(key).empty() ||
        !std::all_of(in.raw(key).begin(), in.raw(key).end(), [](const nlohmann::json& a) { return a.is_string(); }))
      r.fail(field, "must be a non-empty array of strings");
    std::vector<std::string> out = in.raw(key).get<std::vector<std::string>>();
    if (out[0].empty()) r.fail(field + "[0]", "the program must not be empty");
    fs::path prog(out[0]);
    if (prog.is_relative() && out[0].find('/') != std::string::npos) {
      out[0] = (t.dir / prog).lexically_normal().string();
      inside(field + "[0]", out[0]);
    }
    return out;
  };
  if (r.has("command") && r.has("processes"))
    r.fail("processes", "give either \"command\" or \"processes\", not both");
  if (r.has("processes")) {
    if (!r.raw("processes").is_object()) r.fail("processes", "must be an object: {\"consumer\": [argv], \"relay\": [argv]}");
    if (t.kind != "consumer") r.fail("processes", "only a consumer target runs a relay beside it");
    detail::FieldReader p(r.raw("processes"), what, "processes");
    for (auto it = r.raw("processes").begin(); it != r.raw("processes").end(); ++it)
      if (it.key() != "consumer" && it.key() != "relay")
        r.fail("processes." + it.key(), "is not a process role (known: consumer, relay)");
    if (!p.has("consumer")) r.fail("processes.consumer", "is required: the consumer's argv");
    t.command = argv(p, "consumer", "processes.consumer");
    if (p.has("relay")) t.relay = argv(p, "relay", "processes.relay");
  } else {
    t.command = argv(r, "command", "command");
  }
  if (r.has("outbox")) {
    if (t.relay.empty()) r.fail("outbox", "only a target with a relay (\"processes\": {\"relay\": [...]}) has an outbox");
    if (!r.raw("outbox").is_object()) r.fail("outbox", "must be an object: {\"pending\": \"SELECT count(*) ...\"}");
    detail::FieldReader o(r.raw("outbox"), what, "outbox");
    o.onlyKnown({"pending"});
    t.outboxPending = *o.text("pending", true);
    while (!t.outboxPending.empty() && std::isspace(static_cast<unsigned char>(t.outboxPending.back())))
      t.outboxPending.pop_back();
    if (t.outboxPending.find_first_not_of(" \t\r\n") == std::string::npos)
      o.fail("pending", "must be SQL returning one row with the count of unsent outbox rows");
  } else if (!t.relay.empty()) {
    r.fail("outbox", "a target with a relay declares \"outbox\": {\"pending\": \"<SQL counting unsent rows>\"}, "
                     "so that a run is settled only once the relay drained it");
  }
  t.env = readEnv(r);
  if (r.has("dedup_ttl_ms")) {
    t.dedupTtlMs = *r.integer("dedup_ttl_ms", true);
    if (*t.dedupTtlMs < 1) r.fail("dedup_ttl_ms", fmt::format("{} is not a retention of at least 1 ms", *t.dedupTtlMs));
    // An HTTP server's is how long it keeps its keys: what an aged request's simulated time prunes against.
    if (t.kind != "consumer" && t.kind != "http")
      r.fail("dedup_ttl_ms", "only a consumer or an HTTP server is told its dedup retention");
  }
  if (auto schema = r.str("schema", false)) {
    fs::path p = (t.dir / *schema).lexically_normal();
    inside("schema", p);
    if (!fs::is_regular_file(p, ec)) r.fail("schema", fmt::format("no such file '{}'", p.string()));
    t.schema = p;
  }
  if (!r.has("scenarios") || !r.raw("scenarios").is_array() || r.raw("scenarios").empty())
    r.fail("scenarios", "must be a non-empty array of scenario names");
  t.scenarios = *r.strings("scenarios", true, true);
  for (size_t i = 0; i < t.scenarios.size(); ++i) {
    if (t.scenarios[i].empty()) r.fail(fmt::format("scenarios[{}]", i), "must be a non-empty string");
  }
  if (r.has("expect")) {
    const auto& ex = r.raw("expect");
    if (!ex.is_object()) r.fail("expect", "must be an object: scenario -> {verdict, kinds, why, pattern, sink_policy}");
    auto read = [&](const detail::FieldReader& e) {
      Expectation x;
      x.verdict = *e.str("verdict", true);
      if (x.verdict != "pass" && x.verdict != "fail") e.fail("verdict", "must be pass or fail");
      if (e.has("kinds")) x.kinds = *e.strings("kinds", true, true);
      if (x.verdict == "fail" && x.kinds.empty()) e.fail("kinds", "a failing target names the kinds it must show");
      if (x.verdict == "pass" && !x.kinds.empty()) e.fail("kinds", "a passing target shows no violation kinds");
      x.why = *e.str("why", true);
      if (e.has("pattern")) {
        x.pattern = *e.str("pattern", true);
        if (x.verdict != "fail" || x.pattern.empty())
          e.fail("pattern", "a failing target's anti-pattern id (docs/report.md, Anti-patterns)");
      }
      return x;
    };
    for (auto it = ex.begin(); it != ex.end(); ++it) {
      std::string path = "expect." + it.key();
      if (!t.implements(it.key())) r.fail(path, "is not one of the target's scenarios");
      detail::FieldReader e(it.value(), what, path);
      e.onlyKnown({"verdict", "kinds", "why", "pattern", "sink_policy"});
      t.expect[it.key()] = read(e);
      if (!e.has("sink_policy")) continue;
      // What it does under one sink policy when that differs (compare and demo run both: docs/sink.md).
      const auto& byPolicy = e.raw("sink_policy");
      if (!byPolicy.is_object() || byPolicy.empty())
        e.fail("sink_policy", "must be an object: honour|ignore -> {verdict, kinds, why, pattern}");
      for (auto p = byPolicy.begin(); p != byPolicy.end(); ++p) {
        if (p.key() != "honour" && p.key() != "ignore") e.fail("sink_policy." + p.key(), "is not a sink policy (honour or ignore)");
        detail::FieldReader pe(p.value(), what, path + ".sink_policy." + p.key());
        pe.onlyKnown({"verdict", "kinds", "why", "pattern"});
        t.expectBySinkPolicy[it.key()][p.key()] = read(pe);
      }
    }
  }
  return t;
}

std::string expandVars(const std::string& text, const std::map<std::string, std::string>& vars,
                       const std::string& what) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c != '$' || i + 1 >= text.size()) {
      out += c;
      continue;
    }
    if (text[i + 1] == '$') {
      out += '$';
      ++i;
    } else if (text[i + 1] == '{') {
      auto close = text.find('}', i + 2);
      if (close == std::string::npos)
        throw UsageError(fmt::format("{}: '{}': unterminated '${{' (write $$ for a literal '$')", what, text));
      std::string name = text.substr(i + 2, close - i - 2);
      auto it = vars.find(name);
      if (it == vars.end()) throw UsageError(fmt::format("{}: unknown variable '${{{}}}'", what, name));
      out += it->second;
      i = close;
    } else {
      out += c; // a '$' not followed by '{' or '$' is literal
    }
  }
  return out;
}

} // namespace idem
