#!/usr/bin/env bash
# idemproof check's peak memory and report size against the number of runs: `idemproof check --target
# targets/dedup-table --runs N --seed 1` (a correct target, so every run is searched; the default
# workload) for each N, side by side in one invocation. The peak is VmHWM of the idemproof process
# itself, read from /proc while it runs (wait4's figure would include the consumers it reaped). A flat
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
import os, subprocess, sys, tempfile, time
build, sizes = sys.argv[1], [int(n) for n in sys.argv[2:]]
def hwm_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0
def measure(n):
    with tempfile.TemporaryDirectory(prefix="idem-check-memory-") as report:
        t0 = time.monotonic()
        p = subprocess.Popen([os.path.join(build, "idemproof"), "check", "--target", "targets/dedup-table",
                              "--runs", str(n), "--seed", "1", "--report", report],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        high = 0
        while p.poll() is None:  # VmHWM only grows: the last reading is the peak up to then
            high = max(high, hwm_kib(p.pid))
            time.sleep(0.01)
        wall = time.monotonic() - t0
        out = p.stdout.read()
        size = os.path.getsize(os.path.join(report, "report.json")) if os.path.exists(os.path.join(report, "report.json")) else 0
        html = os.path.getsize(os.path.join(report, "report.html")) if os.path.exists(os.path.join(report, "report.html")) else 0
        verdict = next((l.split(":")[0] for l in out.splitlines() if " runs (" in l), "?")
        return high / 1024.0, size, html, wall, p.returncode, verdict
print(f"{'runs':>6} {'peak RSS':>10} {'vs first':>9} {'report.json':>12} {'report.html':>12} {'wall':>8} {'verdict':>8} {'exit':>5}")
base = None
for n in sizes:
    mb, size, html, wall, code, verdict = measure(n)
    base = base or mb
    print(f"{n:>6} {mb:>6.1f} MiB {mb / base:>8.2f}x {size / 1048576:>8.2f} MiB {html / 1048576:>8.2f} MiB {wall:>6.1f} s {verdict:>8} {code:>5}", flush=True)
PY
