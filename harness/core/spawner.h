#pragma once
/// Private to core: the one long-lived thread every child is forked from. PR_SET_PDEATHSIG fires
/// when the *thread* that forked a child exits, so a child spawned from a short-lived worker thread
/// would be SIGKILLed with that thread; forking from a thread that never exits avoids it.
#include <functional>

namespace idem::detail {

/// Runs `fn` on the spawner thread (started on first use, again in a fork()ed child) and waits for
/// it; rethrows what it threw. The thread blocks every signal, so it never takes a process-directed one.
void runOnSpawnerThread(const std::function<void()>& fn);

} // namespace idem::detail
