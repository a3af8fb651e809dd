#!/usr/bin/env bash
# Clean Release build (and, with --tests, the full test suite) of two trees side by side in one run:
# BEFORE (a git revision, built the way its scripts/test.sh built it: CMake's default generator, make -j)
# and the working tree (built the way scripts/test.sh builds it now). Prints seconds and the ratio.
#   bench/build_bench.sh [--tests] [BEFORE_REV]      (default BEFORE_REV: 35adf32, built with make, -O3, no unity build, tests -O2)
# Each tree is copied to a fresh folder, so nothing is shared between the two builds (no ccache is used).
set -euo pipefail
cd "$(dirname "$0")/.."
tests=0
if [ "${1:-}" = "--tests" ]; then tests=1; shift; fi
before_rev=${1:-35adf32}
jobs=$(nproc)
work=$(mktemp -d /tmp/idem-build-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

git archive "$before_rev" | (mkdir -p "$work/before" && tar -x -C "$work/before")
mkdir -p "$work/after"
git ls-files -z --cached --others --exclude-standard | tar --null -T - -c | tar -x -C "$work/after"

now() { date +%s.%N; }
measure() { # name, generator args..., then -- build args...
  local name=$1; shift
  local dir=$work/$name
  local t0 t1 t2
  t0=$(now)
  if [ "$name" = before ]; then
    cmake -S "$dir" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$dir/build" -j"$jobs" >/dev/null
  else
    cmake -S "$dir" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$dir/build" >/dev/null
  fi
  t1=$(now)
  if [ $tests = 1 ]; then
    (cd "$dir/build" && ctest -j"$jobs" >"$work/$name.ctest.log" 2>&1) || echo "$name: ctest failed, see log" >&2
    tail -3 "$work/$name.ctest.log" >&2
  fi
  t2=$(now)
  echo "$t0 $t1 $t2" >"$work/$name.times"
}

measure before
measure after
read -r b0 b1 b2 <"$work/before.times"
read -r a0 a1 a2 <"$work/after.times"
python3 - "$b0" "$b1" "$b2" "$a0" "$a1" "$a2" "$tests" "$before_rev" <<'PY'
import sys
b0, b1, b2, a0, a1, a2 = map(float, sys.argv[1:7]); tests = sys.argv[7] == "1"; rev = sys.argv[8]
print(f"clean build      before ({rev}) {b1-b0:7.1f} s   now {a1-a0:7.1f} s   ratio {(a1-a0)/(b1-b0):.2f}")
if tests:
    print(f"test suite       before ({rev}) {b2-b1:7.1f} s   now {a2-a1:7.1f} s   ratio {(a2-a1)/(b2-b1):.2f}")
    print(f"build + tests    before ({rev}) {b2-b0:7.1f} s   now {a2-a0:7.1f} s   ratio {(a2-a0)/(b2-b0):.2f}")
PY
