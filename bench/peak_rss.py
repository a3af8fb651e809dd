"""The peak memory of one process idemproof runs, for bench/check_memory.sh and bench/memory_bench.sh.

The peak is VmHWM of the idemproof process itself, read from /proc while it runs: wait4's figure would
include the consumers it reaped. VmHWM only grows, so the last reading is the peak up to then.
"""
import subprocess
import tempfile
import time


def hwm_kib(pid):
    """VmHWM of `pid` in KiB, 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_peak(argv, env=None, capture_stdout=False, interval=0.005):
    """Runs argv to its end; returns (peak RSS in MiB, exit status, stdout text or None)."""
    with tempfile.TemporaryFile(mode="w+") as out:  # a file, not a pipe: a long output never blocks it
        p = subprocess.Popen(argv, env=env, stdout=out if capture_stdout else subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        high = 0
        while p.poll() is None:
            high = max(high, hwm_kib(p.pid))
            time.sleep(interval)
        out.seek(0)
        return high / 1024.0, p.returncode, out.read() if capture_stdout else None
