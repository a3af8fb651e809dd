#include "direct.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <fstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace idem::bench {

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

DirectDatabase::DirectDatabase(const ServerEndpoints& sv, const Scenario& sc, const Target& t, const std::string& name)
    : sv_(sv), sc_(sc), name_(name) {
  PgAdmin root(pgUrl(sv_, sv_.pg_host, sv_.pg_port, sv_.pg_database, ""));
  root.exec(fmt::format("DROP DATABASE IF EXISTS {}", name_));
  root.exec(fmt::format("CREATE DATABASE {} TEMPLATE template0", name_));
  pg_ = std::make_unique<PgAdmin>(url());
  pg_->exec(sc_.create_sql);
  if (t.schema) {
    std::ifstream in(*t.schema);
    pg_->exec(std::string(std::istreambuf_iterator<char>(in), {}));
  }
  for (const auto& r : pg_->query("SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = current_schema()"))
    tables_.push_back(r[0].get<std::string>());
}

void DirectDatabase::reset() {
  std::string sql = "BEGIN;";
  for (const auto& t : tables_) sql += "DELETE FROM " + t + ";";
  pg_->exec(sql + sc_.initial_sql + ";COMMIT;");
}

std::string DirectDatabase::url() const { return pgUrl(sv_, sv_.pg_host, sv_.pg_port, name_, ""); }

ChildSpec consumerSpec(const Target& t, const std::string& name, std::map<std::string, std::string> vars,
                       const std::filesystem::path& logDir) {
  ChildSpec spec;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) spec.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : vars) spec.env[k] = v;
  auto expandOver = spec.env;
  for (const auto& [k, v] : t.env) spec.env[k] = expandVars(v, expandOver, "env." + k);
  spec.argv = t.command;
  if (spec.argv[0].find('/') != std::string::npos && spec.argv[0][0] != '/') spec.argv[0] = (t.dir / spec.argv[0]).string();
  spec.cwd = t.dir;
  spec.log = logDir / (name + ".log");
  spec.what = "direct " + name;
  return spec;
}

namespace {
constexpr const char* kStream = "idemproof:stream";
constexpr const char* kGroup = "idemproof";
} // namespace

DirectValkey::DirectValkey(Session& session, const Target& t, int slot)
    : sv_(session.servers()), t_(t), sc_(session.scenario()), logs_("idemproof-bench"),
      db_(sv_, sc_, t, fmt::format("idem_bench_direct{}", slot)), vdb_(63 - slot) {
  vk_ = std::make_unique<ValkeyAdmin>(sv_.valkey_host, sv_.valkey_port, sv_.valkey_password, vdb_);
}

void DirectValkey::reset() {
  db_.reset();
  vk_->pipeline({{"FLUSHDB"}, {"XGROUP", "CREATE", kStream, kGroup, "0", "MKSTREAM"}});
}

double DirectValkey::run(const Schedule& s) {
  auto t0 = Clock::now();
  std::vector<std::vector<std::string>> cmds;
  for (const auto& e : s.stream) {
    std::vector<std::string> argv{"XADD", kStream, "*"};
    for (const auto& [k, v] : s.events[e.event - 1].fields) argv.insert(argv.end(), {k, v});
    argv.insert(argv.end(), {sc_.idField(), fmt::format("{}-{}", e.event, counter_)});
    cmds.push_back(std::move(argv));
  }
  ++counter_;
  std::string last = vk_->pipeline(cmds).back().get<std::string>();
  Child c = spawn("c1");
  if (!s.faults.empty()) {
    waitUntil(last, static_cast<int64_t>(s.stream.size() / 2));
    c.signalGroup(SIGKILL);
    c.waitFor(std::chrono::milliseconds(5000));
    std::this_thread::sleep_for(std::chrono::milliseconds(21));
    c = spawn("c2");
  }
  waitUntil(last, 0);
  c.stop(std::chrono::milliseconds(2000));
  return msSince(t0);
}

Child DirectValkey::spawn(const std::string& name) {
  std::map<std::string, std::string> vars;
  vars["DATABASE_URL"] = db_.url();
  vars["VALKEY_URL"] = vars["REDIS_URL"] =
      sv_.valkey_password.empty()
          ? fmt::format("redis://{}:{}/{}", sv_.valkey_host, sv_.valkey_port, vdb_)
          : fmt::format("redis://:{}@{}:{}/{}", sv_.valkey_password, sv_.valkey_host, sv_.valkey_port, vdb_);
  vars["STREAM"] = kStream;
  vars["GROUP"] = kGroup;
  vars["CONSUMER"] = name;
  vars["CLAIM_IDLE_MS"] = "20";
  return Child::spawn(consumerSpec(t_, name, std::move(vars), logs_.path()));
}

void DirectValkey::waitUntil(const std::string& last, int64_t pending) {
  for (auto t0 = Clock::now(); msSince(t0) < 30000; std::this_thread::sleep_for(std::chrono::microseconds(500))) {
    for (const auto& g : vk_->command({"XINFO", "GROUPS", kStream})) {
      std::map<std::string, nlohmann::json> m;
      for (size_t i = 0; i + 1 < g.size(); i += 2) m[g[i].get<std::string>()] = g[i + 1];
      if (m["last-delivered-id"] == last && m["pending"].get<int64_t>() <= pending) return;
    }
  }
  throw std::runtime_error("direct driver: the consumer did not acknowledge everything within 30 s");
}

DirectKafka::DirectKafka(Session& session, const Target& t, int partitions)
    : t_(t), sc_(session.scenario()), partitions_(partitions), logs_("idemproof-bench"),
      db_(session.servers(), sc_, t, "idem_bench_direct_kafka"), admin_(server_.bootstrap()) {}

void DirectKafka::reset() {
  ++run_;
  topic_ = fmt::format("events.{}", run_);
  group_ = fmt::format("consumers.{}", run_);
  server_.command(fmt::format("topic {} {}", topic_, partitions_));
  db_.reset();
}

double DirectKafka::run(const Schedule& s) {
  // The records as Workspace::send and KafkaBroker::publish make them: fields in the scenario's order,
  // a fresh value for each uuid field, keyed by the scenario's key field (else the event id).
  const std::string idField = sc_.idField();
  std::string keyField;
  for (const auto& f : sc_.fields)
    if (f.gen == "key" && keyField.empty()) keyField = f.name;
  std::map<int, std::map<std::string, std::string>> fields;
  for (const auto& e : s.events) {
    auto f = e.fields;
    for (const auto& g : sc_.fields)
      if (g.gen == "uuid") f[g.name] = freshUuid();
    fields[e.n] = std::move(f);
  }
  std::vector<kafka::client::Record> recs;
  for (const auto& e : s.stream) {
    const auto& f = fields.at(e.event);
    nlohmann::json value = nlohmann::json::object();
    for (const auto& g : sc_.fields)
      if (auto it = f.find(g.name); it != f.end()) value[g.name] = it->second;
    kafka::client::Record r{"", value.dump(), {}};
    const std::string id = f.count(idField) ? f.at(idField) : "";
    if (!id.empty()) r.headers["event_id"] = id;
    r.key = !keyField.empty() && f.count(keyField) ? f.at(keyField) : id;
    recs.push_back(std::move(r));
  }

  auto t0 = Clock::now();
  admin_.produce(topic_, recs);
  Child c = Child::spawn(consumerSpec(t_, "c1",
                                      {{"KAFKA_BOOTSTRAP", server_.bootstrap()},
                                       {"TOPIC", topic_},
                                       {"GROUP", group_},
                                       {"CONSUMER", "c1"},
                                       {"DATABASE_URL", db_.url()}},
                                      logs_.path()));
  for (;; std::this_thread::sleep_for(std::chrono::milliseconds(2))) {
    bool settled = true;
    for (const auto& p : admin_.progress(topic_, group_, std::chrono::milliseconds(5000)))
      settled = settled && std::max<int64_t>(p.committed, 0) >= p.logEnd;
    if (settled) break;
    if (msSince(t0) > 60000) throw std::runtime_error("direct driver: the group did not commit the log end within 60 s");
    if (c.poll()) throw std::runtime_error("direct driver: the Kafka consumer exited before it committed everything");
  }
  c.stop(std::chrono::milliseconds(2000));
  return msSince(t0);
}

} // namespace idem::bench
