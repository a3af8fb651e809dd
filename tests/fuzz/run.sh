#!/usr/bin/env bash
# Builds the protocol-tracker fuzzers with clang++-14 (libFuzzer + ASan + UBSan) in a build dir of
# their own and runs both at once for SECONDS each (default 60), seeded with the recorded captures.
# Exits non-zero when a fuzzer finds a crash, a hang or a split-dependent result; the reproducer is
# kept under the build dir's artifacts/ folder and its path printed.
# Usage: tests/fuzz/run.sh [SECONDS]    (IDEM_FUZZ_BUILD_DIR overrides the build dir)
set -euo pipefail
SECS=${1:-60}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${IDEM_FUZZ_BUILD_DIR:-${TMPDIR:-/tmp}/idemproof-fuzz-$(printf %s "$ROOT" | md5sum | cut -c1-8)}
CAPS=$ROOT/tests/captures

command -v clang++-14 >/dev/null || { echo "run.sh: clang++-14 not found (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 2; }
cmake -S "$HERE" -B "$BUILD" -DIDEM_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE= >/dev/null
cmake --build "$BUILD" -j2 >"$BUILD/build.log" 2>&1 || { tail -40 "$BUILD/build.log"; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/idemproof-fuzz-run.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$BUILD/artifacts"
declare -A PIDS
for name in pg resp; do
  mkdir "$WORK/$name"
  if [ "$name" = pg ]; then seeds=(libpq psycopg node-pg); else seeds=(hiredis redis-py ioredis resp3); fi
  for s in "${seeds[@]}"; do
    for f in "$CAPS/$s"/*.cap; do cp "$f" "$WORK/$name/$s-$(basename "$f")"; done
  done
  "$BUILD/${name}_tracker_fuzz" "$WORK/$name" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 \
    -max_len=16384 -artifact_prefix="$BUILD/artifacts/$name-" -print_final_stats=1 >"$WORK/$name.log" 2>&1 &
  PIDS[$name]=$!
done
status=0
for name in pg resp; do
  if wait "${PIDS[$name]}"; then
    echo "fuzz $name: ok, $(awk '/^stat::number_of_executed_units/ {print $2}' "$WORK/$name.log") runs in ${SECS}s, $(ls "$WORK/$name" | wc -l) corpus units"
  else
    status=1
    echo "fuzz $name: FAILED"
    tail -40 "$WORK/$name.log"
    ls -1 "$BUILD/artifacts/$name-"* 2>/dev/null | sed 's/^/reproducer: /'
  fi
done
exit $status
