#!/usr/bin/env bash
# The Debian package end to end: cpack builds idemproof_VERSION_amd64.deb from the build folder, with its
# runtime dependencies declared; dpkg-deb extracts it into a throwaway staging root; the installed
# binary, run from outside the source tree, prints its version and commit, finds its scenarios and
# reference targets under ../share/idemproof, and judges a run of an installed target on embedded
# servers. Usage: deb_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
tmp=$(mktemp -d /tmp/itest-deb-XXXXXX)
# A temp root of its own (on tmpfs when there is one, as idemproof's default): what the installed binary
# leaves is judged there alone, whatever else runs on the machine.
shm=/dev/shm; [ -w "$shm" ] || shm=/tmp
IDEMPROOF_TMPDIR=$(mktemp -d "$shm/itest-deb-root-XXXXXX")
chmod 755 "$IDEMPROOF_TMPDIR" # the embedded PostgreSQL runs as postgres: it must reach its data dir
export IDEMPROOF_TMPDIR
trap 'rm -rf "$tmp" "$IDEMPROOF_TMPDIR"' EXIT
fail() { echo "deb_test: $*" >&2; exit 1; }

(cd "$build" && cpack -G DEB -B "$tmp/package" >"$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log"; fail "cpack failed"; }
deb=$(ls "$tmp"/package/idemproof_*_amd64.deb) || fail "no idemproof_VERSION_amd64.deb in $tmp/package"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for dep in libpqxx-6.4 libhiredis0.14 postgresql-15 redis-server; do
  grep -q "$dep" <<<"$depends" || fail "Depends lacks $dep"
done

root="$tmp/root"
dpkg-deb -x "$deb" "$root"
bin="$root/usr/bin/idemproof"
share="$root/usr/share/idemproof"
for f in scenarios/wallet.json scenarios/customer-city.json scenarios/order-shipping.json report.schema.json \
         targets/dedup-table/target.json targets/dedup-table/schema.sql targets/README.md; do
  [ -f "$share/$f" ] || fail "the package lacks share/idemproof/$f"
done
[ -x "$share/targets/dedup-table/dedup-table" ] || fail "the package lacks the dedup-table binary"
[ -x "$share/targets/http-correct/http-correct" ] || fail "the package lacks the http-correct binary"
[ -f "$share/scenarios/orders.json" ] || fail "the package lacks the orders scenario"
[ -f "$root/usr/share/doc/idemproof/README.md" ] || fail "the package lacks its docs"

cd "$tmp" # far from the source tree: nothing may be found through the current folder
unset IDEMPROOF_SCENARIOS
version=$("$bin" --version)
echo "$version"
grep -Eq '^idemproof [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{7,}|unknown)\)$' <<<"$version" || fail "--version prints '$version'"
"$bin" demo --help >/dev/null
"$bin" run --target "$share/targets/dedup-table" --scenario wallet --report "$tmp/run" >"$tmp/run.out" 2>&1 \
  || { cat "$tmp/run.out"; fail "run of the installed dedup-table did not pass"; }
grep -q "\"scenario_file\": \"$share/scenarios/wallet.json\"" "$tmp/run/report.json" \
  || fail "the installed binary did not read its own scenarios: $(grep scenario_file "$tmp/run/report.json")"
"$bin" run --target "$share/targets/http-correct" --scenario orders --report "$tmp/http" >"$tmp/http.out" 2>&1 \
  || { cat "$tmp/http.out"; fail "run of the installed http-correct did not pass"; }
left=$(ls "$IDEMPROOF_TMPDIR")
[ -z "$left" ] || fail "the installed binary left $left in its temp root"
echo "deb_test: $(basename "$deb") installs and runs from $root"
