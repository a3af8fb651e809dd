// EmbeddedRabbit: rabbitmq-server as a child of idemproof in its own process group, with an epmd of its own
// (a child too), so that stopping the two groups leaves nothing: beam.smp's erl_child_setup and its
// inet_gethost port programs end when beam.smp does.
#include "brokers/rabbitmq/client/embedded.h"

#include "core/cleanup.h"
#include "core/error.h"
#include "core/ports.h"

#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <thread>

namespace fs = std::filesystem;

namespace idem::rabbitmq::client {

namespace {

constexpr const char* kServer = "/usr/lib/rabbitmq/bin/rabbitmq-server";
constexpr const char* kCtl = "/usr/lib/rabbitmq/bin/rabbitmqctl";
constexpr std::chrono::seconds kStartTimeout{90};

/// Whether an AMQP login with `user`/`password` succeeds on 127.0.0.1:`port` (the node is ready).
bool loginWorks(int port, const std::string& user, const std::string& password) {
  amqp_connection_state_t c = amqp_new_connection();
  amqp_socket_t* s = amqp_tcp_socket_new(c);
  timeval tv{1, 0};
  bool ok = false;
  if (s && amqp_socket_open_noblock(s, "127.0.0.1", port, &tv) == AMQP_STATUS_OK) {
    ok = amqp_login(c, "/", 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, user.c_str(), password.c_str()).reply_type ==
         AMQP_RESPONSE_NORMAL;
    if (ok) amqp_connection_close(c, AMQP_REPLY_SUCCESS);
  }
  amqp_destroy_connection(c);
  return ok;
}

void writeFile(const fs::path& p, const std::string& text, const servers::Account& a) {
  std::ofstream out(p, std::ios::trunc);
  out << text;
  if (!out) throw UsageError(fmt::format("embedded RabbitMQ: cannot write {}", p.string()));
  out.close();
  fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  if (a.drop && ::chown(p.c_str(), a.uid, a.gid) != 0)
    throw UsageError(fmt::format("embedded RabbitMQ: cannot chown {}", p.string()));
}

} // namespace

std::shared_ptr<EmbeddedRabbit> EmbeddedRabbit::shared() {
  static std::mutex mu;
  static std::shared_ptr<EmbeddedRabbit> node; // kept to the end of the command: workspaces come and go
  std::lock_guard<std::mutex> lock(mu);
  if (!node) node.reset(new EmbeddedRabbit());
  return node;
}

std::shared_ptr<EmbeddedRabbit> EmbeddedRabbit::own() { return std::shared_ptr<EmbeddedRabbit>(new EmbeddedRabbit()); }

EmbeddedRabbit::EmbeddedRabbit()
    : dir_("idemproof-rabbitmq-"), account_(servers::serverAccount()), home_(dir_.path() / "node"),
      log_(dir_.path() / "node" / "rabbitmq.log") {
  if (!fs::exists(kServer))
    throw UsageError(fmt::format("embedded RabbitMQ: {} not found (apt-get install rabbitmq-server; "
                                 "scripts/install-deps.sh)",
                                 kServer));
  grantTraverse(dir_.path(), account_);
  fs::create_directory(home_);
  fs::permissions(home_, fs::perms::owner_all, fs::perm_options::replace);
  if (account_.drop && ::chown(home_.c_str(), account_.uid, account_.gid) != 0)
    throw UsageError(fmt::format("embedded RabbitMQ: cannot chown {}", home_.string()));
  // idemproof-<pid> for the command's first node, then idemproof-<pid>-<n> (workspaces with nodes of their own).
  static std::atomic<int> nodes{0};
  const int n = nodes++;
  node_ = n == 0 ? fmt::format("idemproof-{}@localhost", ::getpid()) : fmt::format("idemproof-{}-{}@localhost", ::getpid(), n);
  user_ = "idemproof";
  password_ = servers::newSecret();
  writeFile(home_ / "enabled_plugins", "[].\n", account_);
  // Free ports are free when asked for, not when the node binds them seconds later: a process other than
  // idemproof's (which lease theirs) may take one meanwhile. Then new ports, twice more.
  for (int attempt = 1;; ++attempt) {
    // From the servers' own range: a proxy's listening port (bound to port 0) or an HTTP target's PORT
    // could otherwise be the node's during its boot, and the readiness probe would reach that instead.
    port_ = freeServerPort();
    distPort_ = freeServerPort();
    epmdPort_ = freeServerPort();
    // The guest account is gone (no default user but ours); no plugin; loopback only.
    writeFile(home_ / "rabbit.conf",
              fmt::format("listeners.tcp.default = 127.0.0.1:{}\n"
                          "loopback_users = none\n"
                          "default_user = {}\n"
                          "default_pass = {}\n"
                          "default_vhost = /\n"
                          "log.file.level = warning\n",
                          port_.port(), user_, password_),
                account_);
    try {
      start(attempt < 3);
      break;
    } catch (const PortTaken&) {
    }
  }
  // Newer than the kill-the-group actions Child::spawn registered, so it runs first: a graceful stop.
  cleanupId_ = Cleanup::instance().add(fmt::format("stop embedded RabbitMQ node {}", node_), [this] { stop(); });
}

EmbeddedRabbit::~EmbeddedRabbit() {
  if (cleanupId_ >= 0) Cleanup::instance().remove(cleanupId_);
  stop();
}

std::map<std::string, std::string> EmbeddedRabbit::env() const {
  auto e = servers::serverEnv();
  const std::string h = home_.string();
  e["HOME"] = h;
  e["RABBITMQ_NODENAME"] = node_;
  e["RABBITMQ_NODE_IP_ADDRESS"] = "127.0.0.1";
  e["RABBITMQ_NODE_PORT"] = std::to_string(port_.port());
  e["RABBITMQ_DIST_PORT"] = std::to_string(distPort_.port());
  e["ERL_EPMD_PORT"] = std::to_string(epmdPort_.port());
  e["ERL_EPMD_ADDRESS"] = "127.0.0.1";
  e["RABBITMQ_MNESIA_BASE"] = h + "/mnesia";
  e["RABBITMQ_LOG_BASE"] = h + "/log";
  e["RABBITMQ_PID_FILE"] = h + "/node.pid";
  e["RABBITMQ_CONFIG_FILE"] = h + "/rabbit"; // without .conf
  e["RABBITMQ_ENABLED_PLUGINS_FILE"] = h + "/enabled_plugins";
  e["RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS"] = "-kernel inet_dist_use_interface {127,0,0,1}";
  return e;
}

void EmbeddedRabbit::start(bool portTakenIsRetried) {
  const auto t0 = std::chrono::steady_clock::now();
  auto spec = [&](std::vector<std::string> argv, const std::string& what) {
    ChildSpec s;
    s.argv = std::move(argv);
    s.cwd = home_;
    s.env = env();
    s.log = log_;
    s.what = what;
    if (account_.drop) {
      s.uid = account_.uid;
      s.gid = account_.gid;
    }
    return s;
  };
  // Its own epmd, in the foreground: the node registers there and not with a machine-wide one, and it
  // goes when we stop it (one the node starts by itself daemonizes and stays).
  if (!epmd_.valid() || epmd_.poll())
    epmd_ = Child::spawn(spec({"epmd", "-port", std::to_string(epmdPort_.port()), "-address", "127.0.0.1"}, "epmd of embedded RabbitMQ"));
  server_ = Child::spawn(spec({kServer}, "embedded RabbitMQ"));
  const auto deadline = t0 + kStartTimeout;
  while (!loginWorks(port_.port(), user_, password_)) {
    if (auto st = server_.poll()) {
      if (portTakenIsRetried && servers::serverLogTail(log_).find("eaddrinuse") != std::string::npos) {
        halt();
        throw PortTaken();
      }
      const auto kept = servers::keepLog(log_, "rabbitmq");
      halt();
      throw UsageError(fmt::format("embedded RabbitMQ exited while starting ({}): {}; its log: {}", st->str(),
                                   servers::serverLogTail(kept), kept.string()));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      const auto kept = servers::keepLog(log_, "rabbitmq");
      halt();
      throw UsageError(fmt::format("embedded RabbitMQ not ready after {} s; its log: {}", kStartTimeout.count(),
                                   kept.string()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  startTime_ = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
}

void EmbeddedRabbit::ctl(const std::vector<std::string>& args) {
  std::vector<std::string> argv{kCtl, "-n", node_, "-q"};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildSpec s;
  s.argv = argv;
  s.cwd = home_;
  s.env = env();
  const fs::path out = home_ / "rabbitmqctl.log";
  s.log = out;
  s.what = "rabbitmqctl";
  if (account_.drop) {
    s.uid = account_.uid;
    s.gid = account_.gid;
  }
  const auto size = servers::fileSize(out);
  Child c = Child::spawn(s);
  auto st = c.waitFor(std::chrono::seconds(60));
  if (!st || st->code != 0)
    throw UsageError(fmt::format("embedded RabbitMQ: rabbitmqctl {} failed ({}): {}", fmt::join(args, " "),
                                 st ? st->str() : "no answer in 60 s", servers::serverLogTail(out, size)));
}

void EmbeddedRabbit::addVhost(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  ctl({"add_vhost", name});
  ctl({"set_permissions", "-p", name, user_, ".*", ".*", ".*"});
}

void EmbeddedRabbit::restart() {
  std::lock_guard<std::mutex> lock(mu_);
  // SIGTERM: rabbit stops its listeners, closes every connection and writes its queues' state.
  if (server_.valid()) server_.stop(std::chrono::seconds(30));
  start();
}

void EmbeddedRabbit::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  halt();
}

void EmbeddedRabbit::halt() {
  if (server_.valid()) server_.stop(std::chrono::seconds(10));
  if (epmd_.valid()) epmd_.stop(std::chrono::milliseconds(500));
}

} // namespace idem::rabbitmq::client
