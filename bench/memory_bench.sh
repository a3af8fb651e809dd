#!/usr/bin/env bash
# idemproof's peak memory (VmHWM of the idemproof process itself, read from /proc while it runs: wait4's
# figure would include the consumers it reaped) against what a hostile target
# does: the size of its output (FLOOD_MB) and the size of one Valkey value it writes and reads back
# (VALUE_MB), of one PostgreSQL query parameter it sends (PG_MB) and of one result it reads
# (PG_RESULT_MB), each run
# side by side with a quiet baseline in one invocation. Uses tests/targets/flood (a correct consumer).
#   bench/memory_bench.sh [BUILD_DIR]          (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
python3 - "$BUILD" <<'PY'
import os, subprocess, sys, tempfile, time
build = sys.argv[1]
def hwm_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0
def peak(env_extra):
    env = dict(os.environ, **env_extra)
    with tempfile.TemporaryDirectory(prefix="idem-memory-bench-") as report:
        p = subprocess.Popen([os.path.join(build, "idemproof"), "run", "--target", "tests/targets/flood",
                              "--scenario", "wallet", "--report", report],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        high = 0
        while p.poll() is None:  # VmHWM only grows: the last reading is the peak up to then
            high = max(high, hwm_kib(p.pid))
            time.sleep(0.005)
        return high / 1024.0, p.returncode
rows = [("quiet", {}), ("stdout 50 MiB", {"FLOOD_MB": "50"}), ("stdout 200 MiB", {"FLOOD_MB": "200"}),
        ("value 10 MiB", {"VALUE_MB": "10"}), ("value 100 MiB", {"VALUE_MB": "100"}),
        ("pg param 100 MiB", {"PG_MB": "100"}), ("pg result 100 MiB", {"PG_RESULT_MB": "100"})]
base = None
print(f"{'target does':<16} {'peak RSS of idemproof':>22} {'vs quiet':>9} {'exit':>5}")
for name, env in rows:
    mb, code = peak(env)
    base = base or mb
    print(f"{name:<16} {mb:>19.1f} MiB {mb / base:>8.2f}x {code:>5}")
PY
