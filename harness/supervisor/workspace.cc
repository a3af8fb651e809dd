#include "supervisor/workspace_impl.h"
#include "supervisor/broker_registry.h"
#include "supervisor/escapes.h"

#include "core/error.h"
#include "core/cleanup.h"

#include <fmt/format.h>

#include <fstream>
#include <set>
#include <random>
#include <sstream>
#include <unistd.h>

namespace idem {

namespace {

std::string percentEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') out += static_cast<char>(c);
    else out += fmt::format("%{:02X}", c);
  }
  return out;
}

std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw UsageError(fmt::format("{}: cannot read", p.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace

std::string pgUrl(const ServerEndpoints& s, const std::string& host, int port, const std::string& database,
                  const std::string& query) {
  std::string auth = percentEncode(s.pg_user);
  if (!s.pg_password.empty()) auth += ":" + percentEncode(s.pg_password);
  std::string q = s.pg_options;
  if (!query.empty()) q = q.empty() ? query : q + "&" + query;
  return fmt::format("postgresql://{}@{}:{}/{}{}{}", auth, host, port, percentEncode(database), q.empty() ? "" : "?", q);
}

Workspace::Workspace(const ServerEndpoints& servers, const Scenario& scenario, const Target& target, int worker,
                     RunOptions options, std::filesystem::path logDir)
    : impl_(std::make_unique<Impl>()) {
  impl_->servers = servers;
  impl_->scenario = scenario;
  impl_->target = target;
  impl_->worker = worker;
  impl_->options = options;
  impl_->logDir = std::move(logDir);
  impl_->create();
  if (scenario.sink) impl_->sink = std::make_unique<SinkServer>();
}

Workspace::~Workspace() {
  if (impl_->cleanupId >= 0) {
    Cleanup::instance().remove(impl_->cleanupId);
    if (!impl_->schema.empty()) {
      try {
        impl_->pg->exec(fmt::format("DROP SCHEMA IF EXISTS \"{}\" CASCADE", impl_->schema));
      } catch (const std::exception&) {
      }
    }
  }
}

const std::filesystem::path& Workspace::logDir() const { return impl_->logDir; }

const PhaseTimes& Workspace::phases() const { return impl_->phases; }

std::chrono::steady_clock::time_point Workspace::Impl::phase(const std::string& name,
                                                             std::chrono::steady_clock::time_point since) {
  auto now = std::chrono::steady_clock::now();
  phase(name, since, now);
  return now;
}

void Workspace::Impl::phase(const std::string& name, std::chrono::steady_clock::time_point from,
                            std::chrono::steady_clock::time_point to) {
  if (to > from) phases[name] += std::chrono::duration<double, std::milli>(to - from).count();
}

void Workspace::setRestarter(Restarter r, std::function<uint64_t()> restarts) {
  impl_->restarter = std::move(r);
  impl_->restarts = std::move(restarts);
  if (impl_->restarts) impl_->restartsSeen = impl_->restarts();
}

void Workspace::Impl::reconnect(const std::string& which) {
  const auto& s = servers;
  if (which.empty() || which == "pg") pg = std::make_unique<PgAdmin>(pgUrl(s, s.pg_host, s.pg_port, database, urlQuery), options.deadline);
  if (which != "pg") broker->reconnect();
}

void Workspace::Impl::restartServer(const std::string& which, proxy::Hub& hub) {
  struct Refusing { // the ports refuse until the restart is over, however it ends
    proxy::Hub& hub;
    proxy::Server side;
    bool listening = false;
    void listen() { // a port that cannot listen again makes the run err (an exception), never a crash
      listening = true;
      try {
        hub.refuse(side, false);
      } catch (const std::exception& e) {
        throw std::runtime_error(std::string("the proxies could not listen on their ports again after the restart: ") +
                                 e.what());
      }
    }
    ~Refusing() { // on the way out of another error: listen again if it can, and let that error be told
      if (listening) return;
      try {
        hub.refuse(side, false);
      } catch (...) {
      }
    }
  } refusing{hub, which == "pg" ? proxy::Server::Pg : proxy::Server::Broker};
  hub.refuse(refusing.side, true);
  if (which == broker->name() && broker->restart()) return refusing.listen(); // a broker that restarts its own server
  if (!restarter)
    throw std::runtime_error("a restart fault needs servers of the workspace's own (embedded servers, one pair per "
                             "worker)");
  restarter(which);
  // The harness's own connection went with the server.
  reconnect(which);
  if (restarts) restartsSeen = restarts();
  refusing.listen();
}

ops::Aged Workspace::Impl::age(int64_t ms) {
  // Every key of the database is aged, whoever wrote it: on servers of the user's own (shared by the workers,
  // maybe holding other data) that would reach what is not the run's.
  if (!servers.embedded)
    throw std::runtime_error("an age fault moves the TTL of every key of the Valkey database: it needs the embedded "
                             "servers (drop --database-url and --valkey-url)");
  ops::Aged a;
  a.ms = ms > 0 ? ms : scenario.retryWindowMs.value_or(kDefaultAgeMs);
  if (auto keys = broker->ageKeys(a.ms)) {
    a.keys = true;
    a.moved = keys->first;
    a.expired = keys->second;
  }
  if (scenario.prune.empty()) return a;
  if (!target.dedupTtlMs) {
    a.skipped = "the target declares no dedup_ttl_ms: its retention job prunes nothing";
    return a;
  }
  // The rows age by `ms` without touching their timestamps: the statement gets the retention less the
  // simulated time, so that a row older than that now is older than the retention once `ms` have passed.
  // Negative when `ms` exceeds the retention: every row up to now is pruned.
  const std::string left = fmt::format("'{} milliseconds'", *target.dedupTtlMs - a.ms);
  std::string sql = scenario.prune;
  for (size_t at = sql.find("$1"); at != std::string::npos; at = sql.find("$1", at + left.size()))
    sql.replace(at, 2, left);
  a.prune = sql;
  a.pruned = pg->execCount(sql);
  return a;
}

namespace {

/// A random word drawn once per process: with servers shared by several machines or pods (a Kubernetes
/// Indexed Job, where every pod's idemproof may have the same pid), the pid alone does not keep two
/// runs' schemas and streams apart.
const std::string& processToken() {
  static const std::string token = fmt::format("{:08x}", std::random_device{}());
  return token;
}

} // namespace

void Workspace::Impl::create() {
  const auto& s = servers;
  std::string tag = fmt::format("{}_{}_{}", ::getpid(), processToken(), worker);
  std::string stream;
  if (s.embedded) {
    database = fmt::format("idem_w{}", worker);
    PgAdmin root(pgUrl(s, s.pg_host, s.pg_port, s.pg_database, ""));
    root.exec(fmt::format("DROP DATABASE IF EXISTS {}", database));
    root.exec(fmt::format("CREATE DATABASE {} TEMPLATE template0 STRATEGY FILE_COPY", database));
    pg = std::make_unique<PgAdmin>(pgUrl(s, s.pg_host, s.pg_port, database, ""), options.deadline);
    stream = "idemproof:stream";
  } else {
    database = s.pg_database;
    schema = "idemproof_" + tag;
    urlQuery = "options=" + percentEncode("-c search_path=" + schema);
    pg = std::make_unique<PgAdmin>(pgUrl(s, s.pg_host, s.pg_port, database, urlQuery), options.deadline);
    pg->exec(fmt::format("DROP SCHEMA IF EXISTS \"{}\" CASCADE; CREATE SCHEMA \"{}\"", schema, schema));
    stream = fmt::format("idemproof:{}:stream", tag);
    // Removed by the destructor; on a signal, the servers are the user's: drop what we made.
    std::string url = pgUrl(s, s.pg_host, s.pg_port, database, "");
    std::string sch = schema;
    cleanupId = Cleanup::instance().add("schema " + schema, [url, sch] {
      try {
        PgAdmin(url).exec(fmt::format("DROP SCHEMA IF EXISTS \"{}\" CASCADE", sch));
      } catch (const std::exception&) {
      }
    });
  }
  broker = makeBroker(s, target, stream, tag, options.claim_idle_ms);
  try {
    pg->exec(scenario.create_sql);
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("{}: field 'tables.create': {}", scenario.file.string(), e.what()));
  }
  if (target.schema) {
    try {
      pg->exec(readFile(*target.schema));
    } catch (const UsageError&) {
      throw;
    } catch (const std::exception& e) {
      throw UsageError(fmt::format("{}: {}", target.schema->string(), e.what()));
    }
  }
  auto rows = pg->query("SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1");
  for (const auto& r : rows) tables.push_back(r[0].get<std::string>());
  checkScenarioShapes();
}

void Workspace::Impl::send(History& h, const Schedule& s, const std::map<int, std::map<std::string, std::string>>& fields,
                          size_t from, size_t to) {
  std::vector<brokers::Message> messages;
  std::vector<const StreamEntry*> entries;
  const std::string idField = scenario.idField();
  std::string keyField; // the event's key: what a partitioned broker keys it by
  for (const auto& f : scenario.fields)
    if (f.gen == "key" && keyField.empty()) keyField = f.name;
  for (size_t i = from; i < to && i < s.stream.size(); ++i) {
    const auto& e = s.stream[i];
    const auto& f = fields.at(e.event);
    brokers::Message m;
    for (const auto& g : scenario.fields) {
      auto it = f.find(g.name);
      if (it != f.end()) m.fields.emplace_back(g.name, it->second);
    }
    m.eventId = f.count(idField) ? f.at(idField) : "";
    m.key = !keyField.empty() && f.count(keyField) ? f.at(keyField) : m.eventId;
    messages.push_back(std::move(m));
    entries.push_back(&e);
  }
  if (messages.empty()) return;
  auto ids = broker->publish(messages);
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = *entries[i];
    // Only the first entry of a send waited for deliveries (the rest go with it); the first of a phase
    // waited for its phase's rule instead.
    bool inflight = i == 0 && e.inflight && from > 0 && s.stream[from - 1].phase == e.phase;
    bool retry = false;
    for (const auto* prev = s.stream.data(); prev != &e; ++prev) retry = retry || prev->event == e.event;
    const auto& f = fields.at(e.event);
    h.append("producer", ops::Send{ids.at(i), e.event, f.count(idField) ? f.at(idField) : "", f, e.phase, retry, inflight});
  }
}

std::map<std::string, std::string> Workspace::Impl::poisonEnv() const {
  if (!scenario.poison) return {};
  std::map<std::string, std::string> vars{{"MAX_DELIVERIES", std::to_string(scenario.poison->maxDeliveries)}};
  if (!deadLetterStream.empty()) vars[broker->deadLetterEnv()] = deadLetterStream;
  else vars["DEAD_LETTER_TABLE"] = scenario.poison->deadLetterTable;
  return vars;
}

ChildSpec Workspace::Impl::targetSpec(const proxy::Hub::Ports& ports, const std::string& label,
                                     const std::string& runTag, const std::map<std::string, std::string>& baseEnv,
                                     std::map<std::string, std::string> vars, size_t logCap,
                                     const std::string& what, const std::vector<std::string>& argv) const {
  const auto& sv = servers;
  // The embedded server has no SSL and no Kerberos: a client that reads sslmode from the URL (libpq, psycopg,
  // node-postgres, pgx, asyncpg, sqlx) skips the SSLRequest round trip, and libpq (PGGSSENCMODE) its look
  // for Kerberos credentials. External servers get the user's URL options only.
  std::string query = urlQuery;
  if (sv.embedded) {
    query = query.empty() ? "sslmode=disable" : query + "&sslmode=disable";
    vars.emplace("PGGSSENCMODE", "disable");
  }
  vars["DATABASE_URL"] = pgUrl(sv, "127.0.0.1", ports.pg, database, query);
  for (auto& [k, v] : broker->connectionEnv(ports.broker)) vars[k] = v;
  if (ports.sink) vars["SINK_URL"] = fmt::format("http://127.0.0.1:{}", ports.sink); // the sink, through its proxy
  // Marks of this run and process, inherited by whatever the process starts (reapEscaped()).
  vars[kRunEnv] = runTag;
  vars[kProcessEnv] = label;
  ChildSpec spec;
  spec.env = baseEnv;
  for (const auto& [k, v] : vars) {
    // Only reserved names (target/target_env.h): a manifest can then never have set or override them.
    if (!isReservedEnv(k))
      throw std::logic_error(fmt::format("{} is set for targets but missing from reservedEnv()", k));
    spec.env[k] = v;
  }
  auto lookup = spec.env;
  for (const auto& [k, v] : target.env)
    spec.env[k] = expandVars(v, lookup, fmt::format("{}: field 'env.{}'", target.manifest.string(), k));
  spec.argv = argv.empty() ? target.command : argv;
  if (spec.argv[0].find('/') != std::string::npos && spec.argv[0][0] != '/')
    spec.argv[0] = (target.dir / spec.argv[0]).lexically_normal().string();
  spec.cwd = target.dir;
  spec.log = logDir / (label + ".log");
  spec.logCap = logCap;
  spec.what = fmt::format("{} {} of target '{}' ({})", what, label, target.name, target.manifest.string());
  return spec;
}

History Workspace::execute(const Schedule& schedule) {
  History h;
  auto& im = *impl_;
  im.phases.clear();
  const auto t0 = std::chrono::steady_clock::now();
  im.runStarted = t0;
  for (const auto& f : schedule.faults) requireFaultOnTarget(f, im.target, "schedule: fault " + f.str());
  // Another workspace of this worker (another target) restarted the servers this one shares with it.
  if (im.restarts && im.restarts() != im.restartsSeen) {
    im.reconnect("");
    im.restartsSeen = im.restarts();
  }
  for (const auto& f : schedule.faults)
    if (isRelayLabel(f.process) && im.target.relay.empty())
      throw UsageError(fmt::format("schedule: fault {} names the relay {}, and target '{}' runs none (\"processes\": "
                                   "{{\"relay\": [...]}} in {})",
                                   f.str(), f.process, im.target.name, im.target.manifest.string()));
  // The broker first: the plan records the stream (topic) and group the run reads, which a reset may name.
  std::string brokerError;
  try {
    for (const auto& f : schedule.faults) {
      const Effect e = faultKind(f.kind, "schedule").effect(f);
      if (e.action == Effect::Action::Restart && e.server == im.broker->name()) im.broker->ownForRestart();
    }
    im.broker->reset();
    if (const auto [kind, declared] = im.scenario.poison ? im.scenario.poison->brokerDeadLetter()
                                                          : std::pair<std::string, std::string>{};
        !kind.empty()) {
      im.deadLetterStream = im.broker->deadLetter(kind, declared);
      if (im.deadLetterStream.empty())
        throw UsageError(fmt::format("{}: field 'poison.dead_letter.{}': the {} broker of target '{}' has no "
                                     "dead-letter {}; declare {}",
                                     im.scenario.file.string(), kind, im.broker->title(), im.target.name, kind,
                                     "a stream on Valkey, a queue on RabbitMQ, a topic on Kafka, or a table"));
    }
  } catch (const std::exception& e) {
    brokerError = e.what();
  }
  // The sink forgets the previous schedule's keys and counters, and records this run's calls.
  // Its policy for keys: the schedule's when it has one (compare runs both), else the scenario's.
  const bool honours = !schedule.sinkPolicy.empty() ? schedule.sinkPolicy == "honour"
                       : im.scenario.sink           ? im.scenario.sink->honoursKeys
                                                    : true;
  if (im.sink) im.sink->reset(*im.scenario.sink, honours, &h);
  h.append("harness", ops::Plan{schedule, im.target.name, schedule.claimIdleMs > 0 ? schedule.claimIdleMs : im.options.claim_idle_ms,
                                im.broker->stream(), im.broker->group(),
                                im.scenario.sink ? (honours ? "honour" : "ignore") : "",
                                im.broker->redeliversAfterClaimIdle()});
  try {
    if (!brokerError.empty()) throw std::runtime_error(brokerError);
    im.reset();
    h.append("harness", ops::Initial{im.observe(im.options.deadline)});
    im.phase("reset", t0);
    std::map<int, std::map<std::string, std::string>> fields;
    for (const auto& e : schedule.events) {
      auto f = e.fields;
      for (const auto& g : im.scenario.fields)
        if (g.gen == "uuid") f[g.name] = freshUuid();
      fields[e.n] = std::move(f);
    }
    if (im.scenario.http) {
      if (!schedule.http())
        throw UsageError(fmt::format("scenario '{}' is of kind http: its schedules list the client's requests (\"client\")",
                                     im.scenario.name));
      im.runServer(h, schedule, fields);
    } else {
      if (schedule.http())
        throw UsageError(fmt::format("scenario '{}' reads a stream: its schedules have no client requests", im.scenario.name));
      im.runConsumers(h, schedule, fields);
    }
  } catch (const std::exception& e) {
    h.append("harness", ops::Error{e.what()});
  }
  if (im.sink) im.sink->detach(); // `h` leaves with the caller: a late call is not recorded in it
  // The target's own work and the harness's bookkeeping: what no other phase took.
  double others = 0;
  for (const auto& [name, ms] : im.phases) others += ms;
  im.phases["work"] = std::max(0.0, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() - others);
  return h;
}

} // namespace idem
