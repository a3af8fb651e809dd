#include "direct.h"

#include "supervisor/broker_registry.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <fstream>
#include <set>
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

int64_t DirectDatabase::count(const std::string& sql) {
  return std::stoll(pg_->query(sql).at(0).at(0).get<std::string>());
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

DirectBroker::DirectBroker(Session& session, const Target& t)
    : t_(t), sc_(session.scenario()), logs_("idemproof-bench"),
      db_(session.servers(), sc_, t, fmt::format("idem_bench_direct_{}", t.broker)) {
  ServerEndpoints sv = session.servers();
  sv.valkey_db = 62; // of the session's Valkey: none of the pool's workspaces uses it
  broker_ = makeBroker(sv, t, "idemproof:bench", "bench", 20);
}

DirectBroker::~DirectBroker() = default;

void DirectBroker::reset() {
  broker_->reset();
  db_.reset();
}

double DirectBroker::run(const Schedule& s) {
  // The messages as Workspace::send makes them: fields in the scenario's order, a fresh value for each
  // uuid field, keyed by the scenario's key field (else the event id).
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
  std::vector<brokers::Message> messages;
  for (const auto& e : s.stream) {
    const auto& f = fields.at(e.event);
    brokers::Message m;
    for (const auto& g : sc_.fields)
      if (auto it = f.find(g.name); it != f.end()) m.fields.emplace_back(g.name, it->second);
    m.eventId = f.count(idField) ? f.at(idField) : "";
    m.key = !keyField.empty() && f.count(keyField) ? f.at(keyField) : m.eventId;
    messages.push_back(std::move(m));
  }

  std::set<int> events;
  for (const auto& e : s.stream) events.insert(e.event);
  const int64_t distinct = static_cast<int64_t>(events.size());

  auto t0 = Clock::now();
  broker_->publish(messages);
  auto vars = broker_->connectionEnv(broker_->upstream().port);
  for (const auto& [k, v] : broker_->consumerEnv()) vars[k] = v;
  vars["CONSUMER"] = "c1";
  vars["DATABASE_URL"] = db_.url();
  vars["CLAIM_IDLE_MS"] = "20";
  Child c = Child::spawn(consumerSpec(t_, "c1", std::move(vars), logs_.path()));
  for (;; std::this_thread::sleep_for(std::chrono::milliseconds(1))) {
    if (msSince(t0) > 60000) throw std::runtime_error(fmt::format("direct driver: {} did not settle within 60 s", broker_->title()));
    if (c.poll()) throw std::runtime_error("direct driver: the consumer exited before everything was acknowledged");
    // Settled once every distinct event's row is in processed_messages (the dedup-table targets' mark,
    // written in the transaction of its effect) and the broker has nothing pending: its lag, its stream's
    // pending entries, its queue's ready messages. (What a RabbitMQ consumer holds unacknowledged only the
    // proxies see; its ack follows the commit at once.)
    if (db_.count("SELECT count(*) FROM processed_messages") < distinct) continue;
    const brokers::Progress p = broker_->progress();
    if (p.pending == 0) break;
  }
  c.stop(std::chrono::milliseconds(2000));
  return msSince(t0);
}

} // namespace idem::bench
