#!/usr/bin/env python3
"""Start and stop times of idemproof-kafka-server (the embedded Kafka broker): RUNS times, start it with
one topic of 3 partitions, time until its ready line arrives on stdout, then SIGTERM it and time until it
has exited. Prints the medians (and the extremes) in ms; asserts only that each run was ready and exited 0.
Usage: bench/kafka_server_bench.py BUILD_DIR [RUNS]   (default 21 runs)"""
import signal
import statistics
import subprocess
import sys
import time


def main():
    exe = f"{sys.argv[1]}/idemproof-kafka-server"
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 21
    ready, stop = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.Popen([exe, "--topic", "payments:3"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        line = p.stdout.readline()
        t1 = time.perf_counter()
        p.send_signal(signal.SIGTERM)
        rc = p.wait()
        t2 = time.perf_counter()
        if rc != 0 or not line.startswith(b"127.0.0.1:"):
            sys.exit(f"kafka_server_bench: run failed (exit {rc}, ready line {line!r})")
        ready.append((t1 - t0) * 1000)
        stop.append((t2 - t1) * 1000)
    print(f"idemproof-kafka-server, {runs} runs: start to ready median {statistics.median(ready):.1f} ms "
          f"(min {min(ready):.1f}, max {max(ready):.1f}); SIGTERM to exit median {statistics.median(stop):.1f} ms "
          f"(max {max(stop):.1f})")


if __name__ == "__main__":
    main()
