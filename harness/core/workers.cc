#include "core/workers.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace idem {

void onWorkers(int workers, const std::function<void(int)>& body, const std::function<void()>& onError) {
  std::mutex mu;
  std::exception_ptr failure;
  auto run = [&](int w) {
    try {
      body(w);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!failure) failure = std::current_exception();
      if (onError) onError();
    }
  };
  std::vector<std::thread> threads;
  for (int w = 1; w < workers; ++w) threads.emplace_back(run, w);
  run(0);
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

void parallelFor(size_t n, int workers, const std::function<void(int, size_t)>& fn) {
  std::atomic<size_t> next{0};
  int w = std::max(1, std::min<int>(workers, static_cast<int>(n)));
  onWorkers(
      w,
      [&](int worker) {
        for (size_t i; (i = next++) < n;) fn(worker, i);
      },
      [&] { next = n; });
}

} // namespace idem
