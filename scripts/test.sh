#!/usr/bin/env bash
# The test command (README, .ci/run): installs what is missing, builds from scratch, runs every test
# (unit tests on values and recorded bytes; integration tests on real PostgreSQL and Valkey/Redis that
# the tests start themselves).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
rm -rf build
# The fuzz test's own clang build (tests/fuzz/run.sh; its folder and flags are the ones tests/fuzz/CMakeLists.txt
# gives the test) beside the main build, at the lowest priority: it takes the cores where the main build leaves
# them idle (configuring, linking, its last compiles), and its CPU leaves the test phase. A process group of
# its own, so that nothing of it outlives this script. A new session is also a scheduling group of its own
# where the kernel groups by session (autogroup), which nice does not reach: the group's own nice value too.
mkdir -p build/tests/fuzz/clang
IDEM_FUZZ_BUILD_DIR="$PWD/build/tests/fuzz/clang" IDEM_FUZZ_OPT=-O0 setsid bash -c \
  '{ echo 19 >/proc/self/autogroup; } 2>/dev/null; exec nice -n 19 bash tests/fuzz/run.sh build' >/dev/null 2>&1 &
fuzz_build=$!
trap 'kill -- -"$fuzz_build" 2>/dev/null || true' EXIT
# Everything the tests use; the benchmarks (no test runs them) are a separate build: cmake without -DIDEM_BENCH=OFF.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DIDEM_BENCH=OFF >/dev/null
cmake --build build
# What is left of the fuzz build runs alone now; a failure of it is the fuzz test's to report (it builds again).
wait "$fuzz_build" || true
cd build
# The complete matrices (label slow: demo --full, the live exhaustive sweeps) run with `ctest -L slow`.
# Twice as many tests as the cores: an integration test mostly waits (servers, sleeps, a broker's timers),
# so two per core keep both busy (tests/CMakeLists.txt; docs/benchmarks.md).
status=0
ctest --output-on-failure -j"$(( $(nproc) * 2 ))" -LE slow || status=$?
if [ "$status" -ne 0 ] && [ -f Testing/Temporary/LastTestsFailed.log ]; then
  # A CI log may keep only its end: each failing test's first failed assertion again, last.
  while IFS=: read -r _ name; do
    echo "=== failed: $name"
    awk -v t="$name" 'index($0, "Testing: " t) { on = 1 } on && /FAILED:/ { shown = 1 }
      on && /<end of output>/ { exit } on && shown && n++ < 60' Testing/Temporary/LastTest.log
  done < Testing/Temporary/LastTestsFailed.log
fi
exit "$status"
