#!/usr/bin/env bash
# What of docker/Dockerfile's runtime image can run without a container engine: `cmake --install` into a
# throwaway prefix (the files the image's package holds), then docker/entrypoint.sh run directly as a
# non-root user (nobody, as the image runs as uid 10001) against embedded servers: a passing target
# exits 0; a failing one exits 1, or 0 with IDEMPROOF_VERDICT_IN_REPORT=1 (a shard of a Job) with the
# violation in its report; SIGTERM to the entrypoint reaches idemproof, which stops and cleans up.
# Usage: image_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
tmp=$(mktemp -d /tmp/itest-image-XXXXXX)
# A temp root of its own (on tmpfs when there is one, as idemproof's default): what idemproof leaves is
# judged there alone, whatever else runs on the machine.
shm=/dev/shm; [ -w "$shm" ] || shm=/tmp
root=$(mktemp -d "$shm/itest-image-root-XXXXXX")
trap 'rm -rf "$tmp" "$root"' EXIT
fail() { echo "image_test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install failed"; }
chmod 755 "$tmp"
mkdir -p "$tmp/home"
chmod 755 "$root" # the embedded PostgreSQL runs as postgres when idemproof is root: it must reach its data dir
chown nobody: "$tmp/home" "$root" 2>/dev/null || true
share="$tmp/prefix/share/idemproof"
# The entrypoint as the image's non-root user would run it (nobody here, when the test runs as root).
user=()
[ "$(id -u)" = 0 ] && user=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
user+=(env HOME="$tmp/home" IDEMPROOF_BIN="$tmp/prefix/bin/idemproof" IDEMPROOF_TMPDIR="$root")
as_user() { "${user[@]}" "$@"; }
cd "$tmp/home"
entry="$src/docker/entrypoint.sh"

as_user "$entry" run --target "$share/targets/dedup-table" --report "$tmp/home/pass" >"$tmp/pass.out" 2>&1 \
  || { cat "$tmp/pass.out"; fail "dedup-table did not pass as a non-root user"; }
grep -q '"verdict": "pass"' "$tmp/home/pass/report.json" || fail "no passing report"

set +e
as_user "$entry" run --target "$share/targets/simple" --report "$tmp/home/fail" >/dev/null 2>&1
rc=$?
as_user env IDEMPROOF_VERDICT_IN_REPORT=1 "$entry" run --target "$share/targets/simple" --report "$tmp/home/shard" >/dev/null 2>&1
rc_shard=$?
set -e
[ "$rc" = 1 ] || fail "simple exited $rc through the entrypoint, not 1"
[ "$rc_shard" = 0 ] || fail "with IDEMPROOF_VERDICT_IN_REPORT=1 simple exited $rc_shard, not 0"
grep -q '"verdict": "fail"' "$tmp/home/shard/report.json" || fail "the shard's report does not hold the failure"

# SIGTERM to the entrypoint (what a pod or `docker stop` sends) stops idemproof, which cleans up.
# (setpriv and env exec: $! is the entrypoint's own pid.)
"${user[@]}" "$entry" check --target "$share/targets/dedup-table" --runs 100000 --seed 1 --report "$tmp/home/term" \
  >"$tmp/term.out" 2>&1 &
pid=$!
sleep 2
kill -TERM "$pid"
set +e
wait "$pid"
rc=$?
set -e
[ "$rc" = 143 ] || { cat "$tmp/term.out"; fail "after SIGTERM the entrypoint exited $rc, not 143 (128 + SIGTERM)"; }
sleep 0.5
if pgrep -f "$tmp/prefix/bin/idemproof" >/dev/null; then fail "idemproof still runs after SIGTERM"; fi
grep -q "interrupted (SIGTERM), cleaned up" "$tmp/term.out" || { cat "$tmp/term.out"; fail "idemproof did not say it cleaned up"; }
left=$(ls "$root")
[ -z "$left" ] || fail "idemproof left $left in its temp root"
echo "image_test: the entrypoint ran idemproof as $(as_user id -un) from $tmp/prefix"
