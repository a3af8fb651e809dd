#pragma once
/// Worker threads, as every command runs its schedules: a body on N threads (the calling thread is worker
/// 0), the first exception rethrown once every thread stopped, and a loop over indices handed out in order.
#include <cstddef>
#include <functional>

namespace idem {

/// Runs body(worker) on `workers` threads (worker 0 on the caller's). When a body throws, `onError` is
/// called (one call at a time) so that the others can stop early; the first exception is rethrown after
/// every thread stopped.
void onWorkers(int workers, const std::function<void(int worker)>& body, const std::function<void()>& onError = {});

/// Calls fn(worker, i) for every i in [0, n) on `workers` threads (worker 0 is the calling thread), in
/// index order of dispatch; after an exception no further index is started, and it is rethrown after every
/// thread stopped.
void parallelFor(size_t n, int workers, const std::function<void(int worker, size_t i)>& fn);

} // namespace idem
