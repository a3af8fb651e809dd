// SIGINT to an idemproof-like process (a fork of this test) stops its servers and removes their dirs.
#include "core/cleanup.h"
#include "server_test_util.h"
#include "servers/servers.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <pqxx/pqxx>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

using namespace idem;
using namespace idem::test;
namespace fs = std::filesystem;

namespace {

/// The forked "idemproof": installs the handlers, starts the servers, writes what the parent needs
/// to check (postmaster pid and children, valkey pid, both dirs), then waits for a signal.
[[noreturn]] void runChild(const fs::path& state, const fs::path& err) {
  std::freopen("/dev/null", "w", stdout); // never hold the test runner's pipe
  std::freopen(err.c_str(), "w", stderr);
  try {
    Cleanup::installSignalHandlers();
    EmbeddedServersPtr servers = EmbeddedServers::start();
    const ServerEndpoints& ep = servers->endpoints();
    pqxx::connection c(fmt::format("host=127.0.0.1 port={} user=postgres dbname=postgres password={}", ep.pg_port,
                                   ep.pg_password));
    pqxx::work w(c);
    fs::path pgDir = fs::path(w.exec1("SHOW data_directory")[0].as<std::string>()).parent_path();
    pid_t backend = w.exec1("SELECT pg_backend_pid()")[0].as<int>();
    pid_t postmaster = 0;
    std::ifstream(pgDir / "data" / "postmaster.pid") >> postmaster;
    redisContext* r = redisConnect("127.0.0.1", ep.valkey_port);
    auto* reply = static_cast<redisReply*>(redisCommand(r, "AUTH %s", ep.valkey_password.c_str()));
    freeReplyObject(reply);
    reply = static_cast<redisReply*>(redisCommand(r, "INFO server"));
    std::string info(reply->str, reply->len);
    freeReplyObject(reply);
    pid_t valkey = std::stoi(info.substr(info.find("process_id:") + 11));
    // It runs in its `dir`, <temp dir>/data.
    std::string valkeyDir = fs::read_symlink(fmt::format("/proc/{}/cwd", valkey)).parent_path().string();
    std::ostringstream out;
    out << pgDir.string() << " " << valkeyDir << " " << postmaster << " " << valkey << " " << backend;
    for (pid_t p : childrenOf(postmaster)) out << " " << p;
    std::ofstream(state.string() + ".tmp") << out.str() << "\n";
    fs::rename(state.string() + ".tmp", state);
    while (true) ::pause(); // connections stay open: the shutdown must end them
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child failed: %s\n", e.what());
  }
  ::_exit(99);
}

/// Kills and reaps the forked child if it is still there when the test ends (a failed REQUIRE).
struct ForkGuard {
  pid_t pid;
  ~ForkGuard() {
    if (pid > 0 && ::waitpid(pid, nullptr, WNOHANG) == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

} // namespace

TEST_CASE("SIGINT stops the embedded servers and removes their temp dirs", "[embedded][signal]") {
  EnvOverride cache("IDEMPROOF_CACHE_DIR", testCacheDir().string());
  ScratchDir work;
  fs::path state = work.path / "state", err = work.path / "stderr";
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) runChild(state, err);
  ForkGuard guard{pid};

  int st = 0;
  bool exited = false;
  for (int i = 0; i < 12000 && !fs::exists(state); ++i) {
    if (::waitpid(pid, &st, WNOHANG) == pid) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  INFO(slurp(err));
  REQUIRE_FALSE(exited);
  REQUIRE(fs::exists(state));
  std::istringstream in(slurp(state));
  std::string pgDir, valkeyDir;
  pid_t postmaster = 0, valkey = 0;
  in >> pgDir >> valkeyDir >> postmaster >> valkey;
  std::vector<pid_t> others;
  for (pid_t p; in >> p;) others.push_back(p);
  REQUIRE(fs::is_directory(pgDir));
  REQUIRE(fs::is_directory(valkeyDir));
  REQUIRE(others.size() >= 4);

  ::kill(pid, SIGINT);
  for (int i = 0; i < 12000 && !exited; ++i) {
    exited = ::waitpid(pid, &st, WNOHANG) == pid;
    if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!exited) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &st, 0);
  }
  REQUIRE(exited);
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 130);
  CHECK(slurp(err) == "idemproof: interrupted (SIGINT), cleaned up\n");
  // The postmaster and valkey were reaped by the cleanup; the backends by the postmaster.
  CHECK(deadOrZombie(postmaster));
  CHECK(deadOrZombie(valkey));
  for (pid_t p : others) CHECK(eventuallyDead(p));
  CHECK_FALSE(fs::exists(pgDir));
  CHECK_FALSE(fs::exists(valkeyDir));
}
