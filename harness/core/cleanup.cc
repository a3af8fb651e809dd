// Cleanup: the process-wide registry of what must be undone on any exit.
//
// How the CLI uses it: call Cleanup::installSignalHandlers() first thing in main (before any thread
// starts); keep children, servers and temp dirs in scopes that end before main returns (their
// destructors stop them gracefully and unregister); catch every exception in main. At normal exit
// (return from main or std::exit) an atexit hook runs whatever is still registered, and so does
// std::terminate (an exception no thread caught) before it aborts. abort from elsewhere, a fatal signal
// or _exit skip it; children then still die by PR_SET_PDEATHSIG, and the next command reaps the rest
// (core/owner.h).
#include "core/child.h"
#include "core/cleanup.h"

#include <atomic>

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

namespace idem {
namespace {

struct Entry {
  std::string what;
  std::function<void()> action;
};

/// The registry's state. Leaked on purpose: it must outlive every static destructor and atexit hook.
struct Registry {
  std::mutex mu;
  std::condition_variable done;
  std::map<int, Entry> entries; // by id; newest = largest id
  int nextId = 1;
  int runningId = -1; // the action being run by runAll, if any
  std::thread::id runner;
};

Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

std::atomic<int> interruptedBy{0};
std::atomic<int> exitHolds{0};

void writeStderr(const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(2, s.data() + off, s.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
}

/// std::terminate's handler: says what ended idemproof, undoes what is registered (an embedded server's
/// daemons and its temp dirs outlive an abort), then aborts. Once: a terminate within the clean-up aborts.
[[noreturn]] void onTerminate() {
  static std::atomic<bool> entered{false};
  if (!entered.exchange(true)) {
    std::string what = "no exception";
    if (std::exception_ptr e = std::current_exception()) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        what = ex.what();
      } catch (...) {
        what = "an exception of no standard type";
      }
    }
    writeStderr("idemproof: internal error: terminate (" + what + "); cleaning up, then aborting\n");
    Cleanup::instance().runAll();
  }
  std::abort();
}

} // namespace

Cleanup& Cleanup::instance() {
  static Cleanup* c = [] {
    auto* p = new Cleanup;
    registry();
    std::atexit([] { Cleanup::instance().runAll(); });
    return p;
  }();
  return *c;
}

int Cleanup::add(std::string what, std::function<void()> action) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  int id = r.nextId++;
  r.entries.emplace(id, Entry{std::move(what), std::move(action)});
  return id;
}

void Cleanup::remove(int id) {
  if (id < 0) return;
  Registry& r = registry();
  std::unique_lock<std::mutex> lock(r.mu);
  if (r.entries.erase(id) > 0) return;
  // Running right now on another thread (the signal thread): wait until it is done, so the caller
  // may release the resource afterwards. The runner itself (an action removing ids) never waits.
  if (r.runner != std::this_thread::get_id()) {
    r.done.wait(lock, [&] { return r.runningId != id; });
  }
}

void Cleanup::runAll() {
  Registry& r = registry();
  std::unique_lock<std::mutex> lock(r.mu);
  // Only one runner at a time: a second caller waits for the first to finish everything.
  if (r.runningId != -1 && r.runner != std::this_thread::get_id()) {
    r.done.wait(lock, [&] { return r.runningId == -1; });
  }
  while (!r.entries.empty()) {
    auto it = std::prev(r.entries.end());
    int id = it->first;
    Entry e = std::move(it->second);
    r.entries.erase(it);
    r.runningId = id;
    r.runner = std::this_thread::get_id();
    lock.unlock();
    try {
      if (e.action) e.action();
    } catch (const std::exception& ex) {
      writeStderr("idemproof: cleanup of " + e.what + " failed: " + ex.what() + "\n");
    } catch (...) {
      writeStderr("idemproof: cleanup of " + e.what + " failed\n");
    }
    lock.lock();
    r.runningId = -1;
    r.runner = std::thread::id();
    r.done.notify_all();
  }
}

int Cleanup::interrupted() { return interruptedBy.load(); }

std::string Cleanup::interruptedName() {
  int sig = interruptedBy.load();
  if (sig == 0) return "";
  const char* abbrev = sigabbrev_np(sig);
  return std::string("SIG") + (abbrev ? abbrev : "?");
}

Cleanup::ExitHold::ExitHold() { exitHolds.fetch_add(1); }
Cleanup::ExitHold::~ExitHold() {
  // Once the last hold goes, the signal thread may _exit at once: what the command printed (buffered when
  // its output is a pipe or a file, as in CI) must be out first.
  std::cout.flush();
  std::cerr.flush();
  exitHolds.fetch_sub(1);
}

void Cleanup::installSignalHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    instance();
    std::set_terminate(onTerminate);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    // Threads started later inherit the mask; Child::spawn clears it in the forked child.
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::thread([set] {
      int sig = 0;
      while (sigwait(&set, &sig) != 0) {
      }
      interruptedBy.store(sig);
      Cleanup::instance().runAll();
      // A command writing the report of what finished before the signal: until it is done, a second
      // signal, or the bound.
      const timespec tick{0, 20 * 1000 * 1000};
      for (int waited = 0; exitHolds.load() > 0 && waited < kMaxExitHoldSeconds * 50; ++waited) {
        siginfo_t info;
        if (sigtimedwait(&set, &info, &tick) > 0) break;
      }
      // What other threads made while the report was written (a worker between two schedules may have
      // started a server or made a temp dir after the first pass): nothing outlives the exit.
      Cleanup::instance().runAll();
      writeStderr("idemproof: interrupted (" + Cleanup::interruptedName() + "), cleaned up\n");
      _exit(128 + sig);
    }).detach();
  });
}

} // namespace idem
