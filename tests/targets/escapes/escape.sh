# escapes (wallet, test target): py-dedup-table's correct consumer, which first starts a child in a session
# of its own (setsid): killing the consumer's process group does not stop it, and it outlives the run.
# What idemproof must conclude: fail, kind "escaped" (a contract violation of the target), and the child
# is killed by the end of the run.
setsid sleep 301 </dev/null >/dev/null 2>&1 &
exec /usr/bin/python3 ../py-dedup-table/consumer.py
