# escapes-bare (wallet, test target): py-dedup-table's correct consumer, which first starts a child in a
# session of its own with an empty environment (setsid env -i): it carries none of idemproof's marks.
# What idemproof must do: kill it by the end of the run (its parent's death re-parents it to idemproof,
# the subreaper) and say so in a note; no run can be named for it, so the verdict is the consumer's own.
setsid env -i /bin/sleep 302 </dev/null >/dev/null 2>&1 &
exec /usr/bin/python3 ../py-dedup-table/consumer.py
