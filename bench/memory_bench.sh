#!/usr/bin/env bash
# idemproof's peak memory (max RSS of the idemproof process, from wait4) against what a hostile target
# does: the size of its output (FLOOD_MB) and the size of one Valkey value it writes (VALUE_MB), each run
# side by side with a quiet baseline in one invocation. Uses tests/targets/flood (a correct consumer).
#   bench/memory_bench.sh [BUILD_DIR]          (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
python3 - "$BUILD" <<'PY'
import os, resource, subprocess, sys, tempfile
build = sys.argv[1]
def peak(env_extra):
    env = dict(os.environ, **env_extra)
    with tempfile.TemporaryDirectory(prefix="idem-memory-bench-") as report:
        p = subprocess.Popen([os.path.join(build, "idemproof"), "run", "--target", "tests/targets/flood",
                              "--scenario", "wallet", "--report", report],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(p.pid, 0)
        verdict = os.waitstatus_to_exitcode(status)
        return usage.ru_maxrss / 1024.0, verdict
rows = [("quiet", {}), ("stdout 50 MiB", {"FLOOD_MB": "50"}), ("stdout 200 MiB", {"FLOOD_MB": "200"}),
        ("value 10 MiB", {"VALUE_MB": "10"}), ("value 100 MiB", {"VALUE_MB": "100"})]
base = None
print(f"{'target does':<16} {'peak RSS of idemproof':>22} {'vs quiet':>9} {'exit':>5}")
for name, env in rows:
    mb, code = peak(env)
    base = base or mb
    print(f"{name:<16} {mb:>19.1f} MiB {mb / base:>8.2f}x {code:>5}")
PY
