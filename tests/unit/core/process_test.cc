// Child: spawn, exit statuses, signals, log capture, spawn errors, stop(), process groups.
#include "core/child.h"
#include "core/owner.h"
#include "core/temp_dir.h"
#include "proc_util.h"

#include <catch2/catch.hpp>

#include "skip.h"
#include <fmt/format.h>

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

using namespace idem;
using idem::testing::deadOrZombie;
using idem::testing::eventuallyDead;
using idem::testing::slurp;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::map<std::string, std::string> basicEnv() { return {{"PATH", "/usr/bin:/bin"}}; }

ChildSpec shell(const std::string& script, const fs::path& log = {}) {
  ChildSpec spec;
  spec.argv = {"sh", "-c", script};
  spec.env = basicEnv();
  spec.log = log;
  spec.what = "test child";
  return spec;
}




/// The pid a child wrote into `file`, waited for up to 10 s; 0 when none came.
pid_t pidWritten(const fs::path& file) {
  pid_t pid = 0;
  for (int i = 0; i < 2000 && pid == 0; ++i) {
    std::ifstream in(file);
    if (!(in >> pid)) pid = 0;
    if (pid == 0) std::this_thread::sleep_for(5ms);
  }
  return pid;
}

std::string spawnError(const ChildSpec& spec) {
  try {
    Child::spawn(spec);
  } catch (const SpawnError& e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST_CASE("ExitStatus::str", "[process]") {
  CHECK(ExitStatus{0, 0}.str() == "exit 0");
  CHECK(ExitStatus{3, 0}.str() == "exit 3");
  CHECK(ExitStatus{-1, 9}.str() == "signal 9 (SIGKILL)");
  CHECK(ExitStatus{-1, 15}.str() == "signal 15 (SIGTERM)");
  CHECK(ExitStatus{-1, 9}.killedBy(SIGKILL));
}

TEST_CASE("exit codes and signals are told apart", "[process]") {
  auto run = [](const std::string& script) { return Child::spawn(shell(script)).waitFor(60s).value(); };
  CHECK(run("exit 0").code == 0);
  ExitStatus nine = run("exit 9");
  CHECK(nine.code == 9);
  CHECK(nine.signal == 0);
  ExitStatus killed = run("kill -9 $$");
  CHECK(killed.code == -1);
  CHECK(killed.signal == SIGKILL);
  CHECK(killed.str() == "signal 9 (SIGKILL)");
}

TEST_CASE("poll and waitFor on a running child", "[process]") {
  Child c = Child::spawn(shell("sleep 100"));
  CHECK(c.valid());
  CHECK_FALSE(c.poll());
  CHECK_FALSE(c.waitFor(20ms));
  c.signalGroup(SIGKILL);
  auto s = c.waitFor(60s);
  REQUIRE(s);
  CHECK(s->signal == SIGKILL);
  CHECK(c.poll()->signal == SIGKILL); // cached
  c.signalGroup(SIGKILL);             // no-op once reaped
}

TEST_CASE("stdout and stderr are appended to the log, env and cwd are the spec's", "[process]") {
  TempDir dir("idem-test-");
  fs::path log = dir.path() / "child.log";
  ChildSpec spec = shell("echo out; echo err >&2; echo \"FOO=$FOO\"; pwd", log);
  spec.env["FOO"] = "bar";
  spec.cwd = dir.path();
  REQUIRE(Child::spawn(spec).waitFor(60s)->code == 0);
  REQUIRE(Child::spawn(shell("echo again", log)).waitFor(60s)->code == 0);
  std::string text = slurp(log);
  CHECK(text == "out\nerr\nFOO=bar\n" + dir.path().string() + "\nagain\n");
}

TEST_CASE("stdinFd and stdoutFd: a child that answers lines on pipes, stderr still in the log", "[process]") {
  TempDir dir("idem-test-");
  fs::path log = dir.path() / "child.log";
  int in[2], out[2];
  REQUIRE(::pipe2(in, O_CLOEXEC) == 0);
  REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
  ChildSpec spec = shell("read line; echo \"got $line\"; echo err >&2", log);
  spec.stdinFd = in[0];
  spec.stdoutFd = out[1];
  Child c = Child::spawn(spec);
  ::close(in[0]);
  ::close(out[1]);
  REQUIRE(::write(in[1], "hello\n", 6) == 6);
  ::close(in[1]);
  std::string got;
  char buf[64];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  CHECK(got == "got hello\n");
  REQUIRE(c.waitFor(60s)->code == 0);
  CHECK(slurp(log) == "err\n");
}

TEST_CASE("a temp folder is private to idemproof's user, and a child's log in it too", "[process]") {
  TempDir dir("idem-test-");
  fs::path log = dir.path() / "child.log";
  REQUIRE(Child::spawn(shell("echo secret-ish", log)).waitFor(60s)->code == 0);
  struct stat st {};
  REQUIRE(::stat(dir.path().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700); // it was 0755: any local user could list it
  REQUIRE(::stat(log.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600); // it was 0644: any local user could read a consumer's output
  ChildSpec capped = shell("echo consumer output", dir.path() / "capped.log"); // a consumer's: through a LogSink
  capped.logCap = 64 * 1024;
  REQUIRE(Child::spawn(capped).waitFor(60s)->code == 0);
  REQUIRE(::stat((dir.path() / "capped.log").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
}

TEST_CASE("the environment is exactly the spec's, and the owner's mark", "[process]") {
  TempDir dir("idem-test-");
  fs::path log = dir.path() / "env.log";
  ChildSpec spec;
  spec.argv = {"/usr/bin/env"};
  spec.env = {{"ONLY", "this"}};
  spec.log = log;
  REQUIRE(Child::spawn(spec).waitFor(60s)->code == 0);
  std::string env = slurp(log);
  // The mark of its owner (core/owner.h) is the one variable idemproof adds to every child.
  CHECK((env == "ONLY=this\nIDEMPROOF_OWNER=" + Owner::self().tag() + "\n" ||
         env == "IDEMPROOF_OWNER=" + Owner::self().tag() + "\nONLY=this\n"));
}

TEST_CASE("spawn failures name the process and argv[0]", "[process]") {
  TempDir dir("idem-test-");
  ChildSpec spec = shell("true");
  spec.what = "consumer c1 (targets/x)";
  spec.argv = {"./nope"};
  spec.cwd = dir.path();
  CHECK(spawnError(spec) == "consumer c1 (targets/x): cannot run './nope': No such file or directory");

  std::ofstream(dir.path() / "plain") << "#!/bin/sh\n";
  ::chmod((dir.path() / "plain").c_str(), 0644);
  spec.argv = {"./plain"};
  std::string notExec = spawnError(spec);
  if (::geteuid() != 0) CHECK(notExec == "consumer c1 (targets/x): cannot run './plain': Permission denied");
  else CHECK(notExec.find("cannot run './plain': Permission denied") != std::string::npos);

  spec.argv = {"no-such-program-idem"};
  CHECK(spawnError(spec) == "consumer c1 (targets/x): cannot run 'no-such-program-idem': not found on PATH");

  spec.argv = {"sh", "-c", "true"};
  spec.cwd = dir.path() / "missing";
  std::string badCwd = spawnError(spec);
  CHECK(badCwd.find("consumer c1 (targets/x): cannot run 'sh': working directory '") == 0);
  CHECK(badCwd.find("missing': No such file or directory") != std::string::npos);

  spec.argv = {};
  CHECK(spawnError(spec) == "consumer c1 (targets/x): empty command");
}

TEST_CASE("a relative argv[0] is resolved in the child's cwd", "[process]") {
  TempDir dir("idem-test-");
  std::ofstream(dir.path() / "hello.sh") << "#!/bin/sh\necho hello\n";
  ::chmod((dir.path() / "hello.sh").c_str(), 0755);
  ChildSpec spec = shell("", dir.path() / "out.log");
  spec.argv = {"./hello.sh"};
  spec.cwd = dir.path();
  CHECK(Child::spawn(spec).waitFor(60s)->code == 0);
  CHECK(slurp(dir.path() / "out.log") == "hello\n");
}

TEST_CASE("stop() on a child that ignores SIGTERM kills it after the grace period", "[process]") {
  Child c = Child::spawn(shell("trap '' TERM; sleep 100"));
  // The trap is installed once the shell ignores SIGTERM (SigIgn in /proc, a mask of bit signal - 1).
  auto ignoresTerm = [&] {
    std::ifstream in("/proc/" + std::to_string(c.pid()) + "/status");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("SigIgn:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> (SIGTERM - 1)) & 1;
    return 0ull;
  };
  for (int i = 0; i < 3000 && !ignoresTerm(); ++i) std::this_thread::sleep_for(10ms);
  REQUIRE(ignoresTerm());
  auto t0 = std::chrono::steady_clock::now();
  ExitStatus s = c.stop(300ms);
  auto elapsed = std::chrono::steady_clock::now() - t0;
  CHECK(s.signal == SIGKILL);
  CHECK(elapsed >= 300ms);
  CHECK(elapsed < 30s); // hang guard only
}

TEST_CASE("stop() on a well-behaved child ends it with SIGTERM", "[process]") {
  Child c = Child::spawn(shell("exec sleep 100"));
  CHECK(c.stop(30s).signal == SIGTERM);
  CHECK(c.stop(30s).signal == SIGTERM); // idempotent
}

TEST_CASE("children do not inherit a blocked SIGTERM", "[process]") {
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, &old);
  Child c = Child::spawn(shell("exec sleep 100"));
  ExitStatus s = c.stop(30s);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  CHECK(s.signal == SIGTERM);
}

TEST_CASE("signalGroup reaches a grandchild, the child is its group's leader", "[process]") {
  TempDir dir("idem-test-");
  fs::path pidFile = dir.path() / "grandchild.pid";
  Child c = Child::spawn(shell("sleep 100 & echo $! > " + pidFile.string() + "; wait"));
  CHECK(::getpgid(c.pid()) == c.pid());
  pid_t grandchild = pidWritten(pidFile);
  REQUIRE(grandchild > 0);
  CHECK(::getpgid(grandchild) == c.pid());
  c.signalGroup(SIGKILL);
  CHECK(c.waitFor(60s)->signal == SIGKILL);
  CHECK(eventuallyDead(grandchild));
}

TEST_CASE("descendants: a child, its grandchild, and a grandchild adopted when its parent exited", "[process]") {
  becomeSubreaper();
  TempDir dir("idem-test-");
  Child c = Child::spawn(shell("sleep 100 & echo $! > " + (dir.path() / "grandchild.pid").string() + "; wait"));
  const pid_t grandchild = pidWritten(dir.path() / "grandchild.pid");
  REQUIRE(grandchild > 0);
  auto has = [](const std::vector<pid_t>& pids, pid_t pid) { return std::count(pids.begin(), pids.end(), pid) == 1; };
  auto mine = descendants();
  REQUIRE(mine);
  CHECK(has(*mine, c.pid()));
  CHECK(has(*mine, grandchild));
  CHECK_FALSE(has(*mine, ::getppid())); // nothing above this process
  CHECK(adoptedOrphans().empty());

  // A parent that exits leaves its child to this process (the subreaper): still a descendant, now an orphan.
  Child parent = Child::spawn(shell("sleep 100 & echo $! > " + (dir.path() / "orphan.pid").string()));
  REQUIRE(parent.waitFor(60s));
  const pid_t orphan = pidWritten(dir.path() / "orphan.pid");
  REQUIRE(orphan > 0);
  mine = descendants();
  REQUIRE(mine);
  CHECK(has(*mine, orphan));
  CHECK(adoptedOrphans() == std::vector<pid_t>{orphan});
  ::kill(orphan, SIGKILL);
  ::waitpid(orphan, nullptr, 0);
}

TEST_CASE("the destructor kills and reaps", "[process]") {
  pid_t pid;
  {
    Child c = Child::spawn(shell("exec sleep 100"));
    pid = c.pid();
    CHECK(::kill(pid, 0) == 0);
  }
  CHECK(::kill(pid, 0) == -1); // reaped: not even a zombie
}

TEST_CASE("move keeps ownership in one place", "[process]") {
  Child a = Child::spawn(shell("exec sleep 100"));
  pid_t pid = a.pid();
  Child b = std::move(a);
  CHECK_FALSE(a.valid());
  CHECK(b.pid() == pid);
  Child c;
  c = std::move(b);
  CHECK(c.stop(30s).signal == SIGTERM);
}

TEST_CASE("a child can be dropped to another account", "[process]") {
  if (::geteuid() != 0) idem::testing::skipTest("dropping to another account needs root");
  const passwd* pw = ::getpwnam("nobody");
  if (!pw) idem::testing::skipTest("no account named nobody");
  TempDir dir("idem-test-");
  ChildSpec spec = shell("id -u; id -G", dir.path() / "id.log");
  spec.uid = pw->pw_uid;
  spec.gid = pw->pw_gid;
  REQUIRE(Child::spawn(spec).waitFor(60s)->code == 0);
  CHECK(slurp(dir.path() / "id.log") == fmt::format("{}\n{}\n", pw->pw_uid, pw->pw_gid));
}

TEST_CASE("a capped log keeps the first and last halves of what the child wrote, whatever its size", "[process]") {
  TempDir dir("idem-test-");
  fs::path log = dir.path() / "flood.log";
  // 8 MiB of text: far past the cap, with a recognisable first and last line.
  ChildSpec spec = shell("echo FIRST; yes 0123456789abcdef | head -c 8388608; echo; echo LAST", log);
  spec.logCap = 64 * 1024;
  REQUIRE(Child::spawn(spec).waitFor(60s)->code == 0);
  std::string text = slurp(log);
  CHECK(text.size() <= 64 * 1024 + 64);
  CHECK(text.rfind("FIRST\n", 0) == 0);
  CHECK(text.size() >= 6);
  CHECK(text.substr(text.size() - 5) == "LAST\n");
  CHECK(text.find(" bytes cut ...]") != std::string::npos);
}

TEST_CASE("a capped log under the cap is the child's output unchanged", "[process]") {
  TempDir dir("idem-test-");
  fs::path log = dir.path() / "small.log";
  ChildSpec spec = shell("echo out; echo err >&2", log);
  spec.logCap = 64 * 1024;
  REQUIRE(Child::spawn(spec).waitFor(60s)->code == 0);
  CHECK(slurp(log) == "out\nerr\n");
}
