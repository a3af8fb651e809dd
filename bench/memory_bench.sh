#!/usr/bin/env bash
# idemproof's peak memory (VmHWM of the idemproof process itself: bench/peak_rss.py) against what a hostile target
# does: the size of its output (FLOOD_MB) and the size of one Valkey value it writes and reads back
# (VALUE_MB), of one PostgreSQL query parameter it sends (PG_MB) and of one result it reads
# (PG_RESULT_MB), each run
# side by side with a quiet baseline in one invocation. Uses tests/targets/flood (a correct consumer); the
# last row is an HTTP burst of 16 requests to tests/targets/http-hostile answering each with an endless
# chunked body (64 KiB chunks), which idemproof reads to its 64 MiB bound per answer, keeping a digest.
#   bench/memory_bench.sh [BUILD_DIR]          (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
python3 - "$BUILD" <<'PY'
import os, sys, tempfile
sys.path.insert(0, "bench")
from peak_rss import run_peak
build = sys.argv[1]
def peak(env_extra):
    with tempfile.TemporaryDirectory(prefix="idem-memory-bench-") as report:
        if env_extra.get("HOSTILE_MODE"):  # the HTTP burst: one burst of 16 copies of one request
            argv = ["replay", "tests/targets/http-hostile/burst16.json", "--target", "tests/targets/http-hostile"]
        else:
            argv = ["run", "--target", "tests/targets/flood", "--scenario", "wallet"]
        mb, code, _ = run_peak([os.path.join(build, "idemproof")] + argv + ["--report", os.path.join(report, "r")],
                               env=dict(os.environ, **env_extra))
        return mb, code
rows = [("quiet", {}), ("stdout 50 MiB", {"FLOOD_MB": "50"}), ("stdout 200 MiB", {"FLOOD_MB": "200"}),
        ("value 10 MiB", {"VALUE_MB": "10"}), ("value 100 MiB", {"VALUE_MB": "100"}),
        ("pg param 100 MiB", {"PG_MB": "100"}), ("pg result 100 MiB", {"PG_RESULT_MB": "100"}),
        ("http 16 x chunks", {"HOSTILE_MODE": "chunks"})]
base = None
print(f"{'target does':<16} {'peak RSS of idemproof':>22} {'vs quiet':>9} {'exit':>5}")
for name, env in rows:
    mb, code = peak(env)
    base = base or mb
    print(f"{name:<16} {mb:>19.1f} MiB {mb / base:>8.2f}x {code:>5}")
PY
