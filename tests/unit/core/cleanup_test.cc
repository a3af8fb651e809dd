// Cleanup, TempDir, freePort, and what happens to children when idemproof is interrupted or dies.
#include "core/child.h"
#include "core/cleanup.h"
#include "core/error.h"
#include "core/owner.h"
#include "core/ports.h"
#include "core/temp_dir.h"
#include "proc_util.h"

#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace idem;
using idem::testing::deadOrZombie;
using idem::testing::eventuallyDead;
using idem::testing::slurp;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {




/// Waits (hang guard: 60 s) for `path` to hold a complete line.
std::string awaitLine(const fs::path& path) {
  for (int i = 0; i < 12000; ++i) {
    std::string s = slurp(path);
    if (!s.empty() && s.back() == '\n') return s;
    std::this_thread::sleep_for(5ms);
  }
  return "";
}

/// waitpid with a hang guard: SIGKILL after 60 s.
int waitChild(pid_t pid) {
  int st = 0;
  for (int i = 0; i < 12000; ++i) {
    if (::waitpid(pid, &st, WNOHANG) == pid) return st;
    std::this_thread::sleep_for(5ms);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &st, 0);
  return st;
}

/// A scratch directory NOT registered with Cleanup: a forked child's cleanup must not remove it.
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    std::string tmpl = (fs::temp_directory_path() / "idem-test-scratch-XXXXXX").string();
    if (::mkdtemp(tmpl.data())) path = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

/// Kills and reaps a forked test child that is still there when the test ends (a failed REQUIRE).
struct ForkGuard {
  pid_t pid;
  ~ForkGuard() {
    if (pid > 0 && ::waitpid(pid, nullptr, WNOHANG) == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

ChildSpec sleeper() {
  ChildSpec spec;
  spec.argv = {"/bin/sleep", "100"};
  spec.what = "sleeper";
  return spec;
}

} // namespace

TEST_CASE("Cleanup runs actions newest first, each once, removed ones never", "[cleanup]") {
  std::vector<int> ran;
  Cleanup& c = Cleanup::instance();
  c.add("one", [&] { ran.push_back(1); });
  int two = c.add("two", [&] { ran.push_back(2); });
  c.add("three", [&] { ran.push_back(3); throw std::runtime_error("ignored"); });
  c.add("four", [&] { ran.push_back(4); });
  c.remove(two);
  c.remove(two);
  c.remove(-1);
  c.runAll();
  c.runAll();
  CHECK(ran == std::vector<int>{4, 3, 1});
}

TEST_CASE("an action may remove other entries while runAll runs", "[cleanup]") {
  std::vector<int> ran;
  Cleanup& c = Cleanup::instance();
  int first = c.add("first", [&] { ran.push_back(1); });
  c.add("second", [&] { ran.push_back(2); Cleanup::instance().remove(first); });
  c.runAll();
  CHECK(ran == std::vector<int>{2});
}

TEST_CASE("Cleanup kills registered children and removes temp dirs", "[cleanup]") {
  Child child = Child::spawn(sleeper());
  TempDir dir("idem-test-");
  fs::path p = dir.path();
  Cleanup::instance().runAll();
  CHECK_FALSE(fs::exists(p));
  auto s = child.waitFor(60s);
  REQUIRE(s);
  CHECK(s->signal == SIGKILL);
}

TEST_CASE("TempDir is on /dev/shm when possible, private, and removed recursively", "[tempdir]") {
  fs::path p;
  {
    TempDir dir("idem-test-");
    p = dir.path();
    CHECK(fs::is_directory(p));
    if (::access("/dev/shm", W_OK) == 0) CHECK(p.parent_path() == "/dev/shm");
    CHECK(p.filename().string().rfind("idem-test-", 0) == 0);
    struct stat st {};
    REQUIRE(::stat(p.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700); // a server's account gets in by group only (servers/server_util.h)
    fs::create_directories(p / "a" / "b");
    std::ofstream(p / "a" / "b" / "f") << "x";
    TempDir other("idem-test-");
    CHECK(other.path() != p);
  }
  CHECK_FALSE(fs::exists(p));
}

namespace {

/// Sets an environment variable for the scope of a test, restoring what was there.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string n, const std::string& value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) old = v;
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old) ::setenv(name.c_str(), old->c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};

/// `sleep 100` started by hand (not by Child::spawn) with exactly `env`: a process of another owner.
pid_t sleepWithEnv(const std::vector<std::string>& env) {
  pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> envp;
    for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    char* argv[] = {const_cast<char*>("/bin/sleep"), const_cast<char*>("100"), nullptr};
    ::execve("/bin/sleep", argv, envp.data());
    ::_exit(127);
  }
  return pid;
}

} // namespace

TEST_CASE("IDEMPROOF_TMPDIR is the temp root, and one that is no writable folder is refused naming it", "[tempdir]") {
  ScratchDir root;
  REQUIRE(!root.path.empty());
  {
    ScopedEnv env("IDEMPROOF_TMPDIR", root.path.string());
    TempDir dir("idem-test-");
    CHECK(dir.path().parent_path() == root.path);
    CHECK(tempRoot() == root.path);
  }
  ScopedEnv env("IDEMPROOF_TMPDIR", (root.path / "missing").string());
  try {
    TempDir dir("idem-test-");
    FAIL("a missing root was accepted");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()) == "IDEMPROOF_TMPDIR=" + (root.path / "missing").string() +
                                       ": not a directory idemproof can write to");
  }
}

TEST_CASE("reapOrphans reaps a dead owner's folders and processes only within its own temp root", "[tempdir]") {
  ScratchDir a, b;
  REQUIRE((!a.path.empty() && !b.path.empty()));
  const std::string dead = "999999999.5"; // a pid above any pid_max: never alive
  REQUIRE(!Owner::parse(dead)->alive());
  for (const auto& root : {a.path, b.path}) fs::create_directories(root / ("idemproof-logs-" + dead + "-abcdef"));
  pid_t inA = sleepWithEnv({"IDEMPROOF_OWNER=" + dead, "IDEMPROOF_TMPDIR=" + a.path.string()});
  pid_t inB = sleepWithEnv({"IDEMPROOF_OWNER=" + dead, "IDEMPROOF_TMPDIR=" + b.path.string()});
  ForkGuard ga{inA}, gb{inB};
  // Until exec has replaced the fork's environment with the mark, the process is not findable.
  for (int i = 0; i < 12000 && (envOf(inA, "IDEMPROOF_OWNER").empty() || envOf(inB, "IDEMPROOF_OWNER").empty()); ++i)
    std::this_thread::sleep_for(5ms);
  {
    ScopedEnv env("IDEMPROOF_TMPDIR", a.path.string());
    Reaped r = reapOrphans();
    CHECK(r.processes == std::vector<pid_t>{inA});
    CHECK(r.folders == std::vector<std::string>{(a.path / ("idemproof-logs-" + dead + "-abcdef")).string()});
  }
  CHECK(waitChild(inA) != 0); // SIGKILLed
  CHECK(::kill(inB, 0) == 0);
  CHECK(fs::exists(b.path / ("idemproof-logs-" + dead + "-abcdef")));
}

TEST_CASE("freePort returns a bindable port", "[tempdir]") {
  int port = freePort();
  CHECK(port > 0);
  CHECK(port < 65536);
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  CHECK(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  ::close(fd);
}

TEST_CASE("freeServerPort, freeListenPort and freePort draw from ranges apart, each port bindable", "[tempdir]") {
  auto bindable = [](int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    return ok;
  };
  std::set<int> servers;
  std::vector<PortLease> held;
  for (int i = 0; i < 3; ++i) { // a RabbitMQ node's three ports
    held.push_back(freeServerPort());
    int port = held.back().port();
    CHECK(port >= 10000);
    CHECK(port < 20000);
    CHECK(bindable(port));
    servers.insert(port);
  }
  CHECK(servers.size() == 3);
  int listen = freeListenPort().port();
  CHECK(listen >= 20000);
  CHECK(listen < 32000);
  int low = 0, high = 0; // the kernel's ephemeral range, which freePort's bind to port 0 draws from
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> low >> high;
  if (low >= 32000) { // the default 32768-60999: apart from both ranges above
    int port = freePort();
    CHECK(port >= low);
    CHECK(port <= high);
  }
}

TEST_CASE("a leased port is no other process's until the lease goes", "[tempdir]") {
  auto lease = freeListenPort();
  const int port = lease.port();
  REQUIRE(port != 0);
  CHECK_FALSE(PortLease::of(port)); // this process
  auto otherGets = [port] { // another process, as a second idemproof command beside this one
    pid_t pid = ::fork();
    if (pid == 0) ::_exit(PortLease::of(port) ? 0 : 1);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  };
  CHECK_FALSE(otherGets());
  PortLease moved = std::move(lease);
  CHECK(moved.port() == port);
  CHECK(lease.port() == 0);
  CHECK_FALSE(otherGets());
  moved = PortLease{};
  CHECK(otherGets());
  auto again = PortLease::of(port);
  CHECK(again.port() == port);
}

TEST_CASE("groupListensOn tells the process group's own listener from another process's", "[tempdir]") {
  auto lease = freeListenPort();
  const int port = lease.port();
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) { // a group of its own that listens on the port, then waits to be killed
    ::setpgid(0, 0);
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && ::listen(fd, 1) == 0;
    char c = ok ? 'y' : 'n';
    (void)::write(fds[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  ::setpgid(pid, pid);
  char c = 0;
  REQUIRE(::read(fds[0], &c, 1) == 1);
  CHECK(c == 'y');
  CHECK(groupListensOn(pid, port));
  CHECK_FALSE(groupListensOn(::getpgrp(), port)); // this test's group: another process's listener
  CHECK_FALSE(groupListensOn(pid, port == 65535 ? port - 1 : port + 1));
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  CHECK_FALSE(groupListensOn(pid, port));
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_CASE("SIGINT runs the cleanup, prints one line and exits 130", "[cleanup][signal]") {
  ScratchDir work;
  fs::path state = work.path / "state", err = work.path / "stderr";
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  ForkGuard guard{pid};
  if (pid == 0) {
    std::freopen("/dev/null", "w", stdout); // never hold the test runner's pipe
    std::freopen(err.c_str(), "w", stderr);
    Cleanup::installSignalHandlers();
    Child child = Child::spawn(sleeper());
    TempDir dir("idem-test-");
    std::ofstream(state) << child.pid() << " " << dir.path().string() << "\n";
    ::pause();
    ::_exit(99);
  }
  std::istringstream in(awaitLine(state));
  pid_t grandchild = 0;
  std::string dir;
  in >> grandchild >> dir;
  REQUIRE(grandchild > 0);
  REQUIRE(fs::is_directory(dir));
  ::kill(pid, SIGINT);
  int st = waitChild(pid);
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 130);
  CHECK(slurp(err) == "idemproof: interrupted (SIGINT), cleaned up\n");
  CHECK(::kill(grandchild, 0) == -1); // killed and reaped by the cleanup
  CHECK_FALSE(fs::exists(dir));
}

TEST_CASE("children die with idemproof even when it is SIGKILLed (PR_SET_PDEATHSIG)", "[cleanup][signal]") {
  ScratchDir work;
  fs::path state = work.path / "state";
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  ForkGuard guard{pid};
  if (pid == 0) {
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    Child child = Child::spawn(sleeper());
    std::ofstream(state) << child.pid() << "\n";
    ::pause();
    ::_exit(99);
  }
  std::string line = awaitLine(state);
  REQUIRE_FALSE(line.empty());
  pid_t grandchild = std::stoi(line);
  ::kill(pid, SIGKILL);
  waitChild(pid);
  CHECK(eventuallyDead(grandchild));
}

TEST_CASE("std::exit runs the cleanup (atexit)", "[cleanup]") {
  ScratchDir work;
  fs::path state = work.path / "state";
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  ForkGuard guard{pid};
  if (pid == 0) {
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    auto* child = new Child(Child::spawn(sleeper())); // never destroyed: only Cleanup can end it
    auto* dir = new TempDir("idem-test-");
    std::ofstream(state) << child->pid() << " " << dir->path().string() << "\n";
    std::exit(0);
  }
  int st = waitChild(pid);
  CHECK(WIFEXITED(st));
  std::istringstream in(slurp(state));
  pid_t grandchild = 0;
  std::string dir;
  in >> grandchild >> dir;
  REQUIRE(grandchild > 0);
  CHECK(::kill(grandchild, 0) == -1); // killed and reaped before the exit
  CHECK_FALSE(fs::exists(dir));
}

TEST_CASE("an exception no thread catches runs the cleanup before the abort, naming what was thrown", "[cleanup]") {
  ScratchDir work;
  fs::path state = work.path / "state", err = work.path / "stderr";
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  ForkGuard guard{pid};
  if (pid == 0) {
    std::freopen("/dev/null", "w", stdout);
    std::freopen(err.c_str(), "w", stderr);
    const rlimit noCore{0, 0};
    ::setrlimit(RLIMIT_CORE, &noCore); // the abort leaves no core file in the test's folder
    Cleanup::installSignalHandlers();
    auto* dir = new TempDir("idem-test-"); // never destroyed: only Cleanup can remove it
    std::ofstream(state) << dir->path().string() << "\n";
    // Thrown on a thread of its own, as a worker's would be: nothing catches it.
    std::thread([] { throw std::runtime_error("a worker's bug"); }).join();
    ::_exit(99);
  }
  int st = waitChild(pid);
  REQUIRE(WIFSIGNALED(st));
  CHECK(WTERMSIG(st) == SIGABRT);
  std::string dir = slurp(state);
  REQUIRE(!dir.empty());
  dir.pop_back();
  CHECK_FALSE(fs::exists(dir)); // removed by the cleanup, which the abort alone skips
  CHECK(slurp(err) == "idemproof: internal error: terminate (a worker's bug); cleaning up, then aborting\n");
}
