#!/usr/bin/env bash
# idemproof check's peak memory and report size against the number of runs: `idemproof check --target
# targets/dedup-table --runs N --seed 1` (a correct target, so every run is searched; the default
# workload) for each N, side by side in one invocation. The peak is VmHWM of the idemproof process
# itself (bench/peak_rss.py). A flat
# column of peak RSS means the search keeps no history per run; report.json grows by its run summaries
# only (one per run, ~150 bytes each).
#   bench/check_memory.sh [BUILD_DIR] [N ...]        (default: build 100 1000 10000)
# 10,000 runs take several minutes on two cores: `bench/check_memory.sh build 100 1000` for a quick look.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
shift || true
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(100 1000 10000)
python3 - "$BUILD" "${SIZES[@]}" <<'PY'
import os, sys, tempfile, time
sys.path.insert(0, "bench")
from peak_rss import run_peak
build, sizes = sys.argv[1], [int(n) for n in sys.argv[2:]]
def measure(n):
    with tempfile.TemporaryDirectory(prefix="idem-check-memory-") as report:
        t0 = time.monotonic()
        mb, code, out = run_peak([os.path.join(build, "idemproof"), "check", "--target", "targets/dedup-table",
                                  "--runs", str(n), "--seed", "1", "--report", report],
                                 capture_stdout=True, interval=0.01)
        wall = time.monotonic() - t0
        def size(name):
            path = os.path.join(report, name)
            return os.path.getsize(path) if os.path.exists(path) else 0
        verdict = next((l.split(":")[0] for l in out.splitlines() if " runs (" in l), "?")
        return mb, size("report.json"), size("report.html"), wall, code, verdict
print(f"{'runs':>6} {'peak RSS':>10} {'vs first':>9} {'report.json':>12} {'report.html':>12} {'wall':>8} {'verdict':>8} {'exit':>5}")
base = None
for n in sizes:
    mb, size, html, wall, code, verdict = measure(n)
    base = base or mb
    print(f"{n:>6} {mb:>6.1f} MiB {mb / base:>8.2f}x {size / 1048576:>8.2f} MiB {html / 1048576:>8.2f} MiB {wall:>6.1f} s {verdict:>8} {code:>5}", flush=True)
PY
