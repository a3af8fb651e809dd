#!/bin/sh
# Entrypoint of the idemproof image: `docker run IMAGE check --target DIR ...` runs `idemproof check ...`;
# any other first word (sh, bash, ...) runs that program instead. idemproof runs as a child of this
# script, which passes SIGTERM and SIGINT on to it (a Kubernetes pod's or `docker stop`'s), so that it
# stops its consumers and servers and removes its temp dirs before the container ends.
#
# IDEMPROOF_VERDICT_IN_REPORT=1 (the shards of a Kubernetes Indexed Job or a CI matrix): exit 0 when
# idemproof exits 1 (a violation proven, written in the report), so that the shard counts as done and
# `idemproof merge` decides the verdict; exit 2 (cannot be judged) stays a failure.
set -u

case "${1:-}" in
  "") set -- demo ;;
  -*|run|sweep|check|replay|compare|demo|merge) ;;
  *) exec "$@" ;;
esac

if [ "$(id -u)" = 0 ]; then
  echo "idemproof-entrypoint: running as root; the image's user is idemproof (uid 10001)" >&2
fi

IDEMPROOF_BIN="${IDEMPROOF_BIN:-idemproof}"
"$IDEMPROOF_BIN" "$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM
trap 'kill -INT "$child" 2>/dev/null' INT
status=0
# wait returns early (status > 128) when a trapped signal arrives: wait again for idemproof's own status.
while :; do
  wait "$child"
  status=$?
  kill -0 "$child" 2>/dev/null || break
done

if [ "$status" = 1 ] && [ "${IDEMPROOF_VERDICT_IN_REPORT:-0}" = 1 ]; then
  echo "idemproof-entrypoint: idemproof found a violation (exit 1), written in its report; idemproof merge decides" >&2
  exit 0
fi
exit "$status"
