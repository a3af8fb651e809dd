#include "core/spawner.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

namespace idem::detail {
namespace {

class Spawner {
public:
  /// The spawner, started on first use (again in a fork()ed child, where the thread is gone).
  static Spawner& instance() {
    Spawner* s = current().load(std::memory_order_acquire);
    if (s) return *s;
    std::lock_guard<std::mutex> lock(createMu());
    s = current().load(std::memory_order_relaxed);
    if (!s) {
      s = new Spawner; // leaked: the thread lives as long as the process
      current().store(s, std::memory_order_release);
    }
    return *s;
  }

  /// Runs `fn` on the spawner thread and waits for it; rethrows what it threw.
  void run(const std::function<void()>& fn) {
    if (std::this_thread::get_id() == id_) return fn();
    Job job{&fn, false, nullptr};
    std::unique_lock<std::mutex> lock(mu_);
    jobs_.push_back(&job);
    cv_.notify_all();
    cv_.wait(lock, [&] { return job.done; });
    if (job.error) std::rethrow_exception(job.error);
  }

private:
  struct Job {
    const std::function<void()>* fn;
    bool done = false;
    std::exception_ptr error;
  };

  static std::atomic<Spawner*>& current() {
    static std::atomic<Spawner*> s{nullptr};
    return s;
  }
  static std::mutex& createMu() {
    static std::mutex m;
    return m;
  }
  static void forgetInChild() {
    createMu().unlock();
    current().store(nullptr, std::memory_order_relaxed);
  }

  Spawner() {
    static const int registered = pthread_atfork([] { createMu().lock(); }, [] { createMu().unlock(); },
                                                 &Spawner::forgetInChild);
    (void)registered;
    // Started with every signal blocked (a new thread inherits the mask), never unblocked.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    std::thread t([this] { loop(); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    id_ = t.get_id();
    t.detach();
  }

  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return !jobs_.empty(); });
      Job* job = jobs_.front();
      jobs_.pop_front();
      lock.unlock();
      try {
        (*job->fn)();
      } catch (...) {
        job->error = std::current_exception();
      }
      lock.lock();
      job->done = true;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job*> jobs_;
  std::thread::id id_;
};

} // namespace

void runOnSpawnerThread(const std::function<void()>& fn) { Spawner::instance().run(fn); }

} // namespace idem::detail
