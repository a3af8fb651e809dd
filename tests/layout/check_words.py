#!/usr/bin/env python3
"""The project speaks of the product only: no word of how it was developed in any tracked file.

README, docs, code, comments, test names, scripts and bench output say what idemproof does and why.
Words that speak of the work instead -- a numbered session, issue or stop, the brief, a helper who measured
something, the seed lab, "this machine", a date of work in prose -- fail this check with file:line and
the word. docs/benchmarks.md alone dates its figures: a measurement is of a day and a commit.

The patterns name the process usages and leave the product ones alone: a PostgreSQL or process session
("the session ends", `setsid`), the driver's `Session` (a run's servers and targets), the recorded client
sessions of tests/captures, stopping a server, "issues a request". ALLOW lists the few product uses a
pattern would otherwise catch, each with its reason.

Usage: check_words.py SOURCE_DIR   (files from `git ls-files`, else every file outside build trees)
"""
import pathlib
import re
import subprocess
import sys

# (pattern, what it catches); matched case-insensitively on each line.
PATTERNS = [
    (r"\bsessions? #?\d+", "a numbered work session"),
    (r"\b(this|that|previous|earlier|later|next|last|one|work) sessions?\b", "a work session"),
    (r"\bsession (that|which) (did|added|made|wrote|measured|fixed)\b", "a work session"),
    (r"\bissues? #?\d+", "a numbered issue"),
    (r"\(issue\b", "a reference to an issue"),
    (r"\b(this|that|the|an|open|filed|same) issue\b", "an issue of the tracker"),
    (r"\bstops? #?\d+\b", "a numbered stop"),
    (r"\bbrief\b", "the brief"),
    (r"\bseed lab\b", "the seed lab"),
    (r"helper", "a helper"),
    (r"\btickets?\b", "a ticket"),
    (r"\bTODO\b|\bFIXME\b", "a note for later"),
    (r"\bby hand (on|here)\b|\btried by hand\b", "work done by hand"),
    (r"\bthis (machine|vm|host)\b|\bdevelopment machines?\b", "the machine the work was done on"),
    (r"\bthe build before these lines\b", "a change, not the product"),
    (r"\bmain at [0-9a-f]{7}|\bmain before\b|\bon main\b", "the branch the work was done on"),
    (r"\b20\d\d-[01]\d-[0-3]\d\b", "a date of work"),
]
COMPILED = [(re.compile(p, re.IGNORECASE), what) for p, what in PATTERNS]

# (file regex, the matched text's regex, reason): product uses a pattern would otherwise catch.
ALLOW = [
    # "brief" as an adjective in code: the short form of an HTTP answer (checkers/http_view.h `brief()`)
    # and of a hold's release text (`releaseText(bool brief)`).
    (r"^harness/checkers/", r"brief", "the short form of an answer or a release text"),
    # docs/benchmarks.md dates each figure (the day it was measured).
    (r"^docs/benchmarks\.md$", r"\b20\d\d-[01]\d-[0-3]\d\b", "the date of a measurement"),
]
ALLOWED = [(re.compile(f), re.compile(m, re.IGNORECASE)) for f, m, _ in ALLOW]

# This file names the words it looks for; tests/captures holds recorded client traffic (bytes).
SKIP = re.compile(r"^(tests/layout/check_words\.py|tests/captures/.*\.cap)$")


def tracked(root):
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], check=True, capture_output=True).stdout
        return [p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", "node_modules", "reports"}
        return [str(p.relative_to(root)) for p in root.rglob("*")
                if p.is_file() and not any(part in skip or part.startswith("build")
                                            for part in p.relative_to(root).parts)]


def allowed(path, text):
    return any(f.search(path) and m.fullmatch(text) for f, m in ALLOWED)


def hits(path, line):
    """The process words of one line of `path`, each with what it is."""
    return [(m.group(0), what) for pattern, what in COMPILED for m in pattern.finditer(line)
            if not allowed(path, m.group(0))]


# The patterns themselves, on lines that must be caught and lines that must not: a pattern too wide would
# make the product's own words fail, one too narrow would let a process word through.
CAUGHT = [
    ("README.md", "measured in session 6, quiet"), ("README.md", "Earlier figures (previous sessions)"),
    ("README.md", "the session that did the reduction"), ("harness/x.cc", "// a fault value (issue 12)"),
    ("tests/x.cc", "/// Issue 14: HTTP endpoints"), ("README.md", "as stop 3 asked"),
    ("targets/x.h", "// the texts of the brief"), ("docker/compose.yaml", "# The seed lab's stack"),
    ("README.md", "(helper-measured, 5 runs)"), ("docs/x.md", "Tried by hand on 2026-12-01"),
    ("bench/x.cc", "what this machine charges"), ("tests/CMakeLists.txt", "against the build before these lines"),
    ("docs/benchmarks.md", "before the change (main at 84e7ecf)"), ("docs/x.md", "no container engine on the development machines"),
    ("harness/x.cc", "// TODO: later"),
]
KEPT = [
    ("docs/faults.md", "FATAL: the session ends; an open transaction rolls back"),
    ("harness/driver/session.h", "/// A workspace for worker `w` of target `t` (its logs go under the session's temp dir)."),
    ("bench/tracker_bench.cc", "/// Feeds a recorded session through a fresh tracker"),
    ("docs/target-contract.md", "Leave processes running outside its process group (`setsid`, a daemon): killing it must stop"),
    ("docs/x.md", "SIGSTOP stops the process; idemproof stops its servers"), ("docs/x.md", "the client issues a request"),
    ("harness/checkers/http.cc", 'fmt::format("got {}", brief(*q.a))'), ("docs/benchmarks.md", "| 2026-12-02 | 9.0 s |"),
    ("harness/servers/x.cc", "the main thread"), ("README.md", "**Main job** — compare the reference consumers"),
]


def selfTest():
    wrong = [f"not caught: {p}: {line}" for p, line in CAUGHT if not hits(p, line)]
    wrong += [f"caught, but a product use: {p}: {line}: {hits(p, line)}" for p, line in KEPT if hits(p, line)]
    return wrong


def main():
    root = pathlib.Path(sys.argv[1])
    found = selfTest()
    for path in sorted(tracked(root)):
        if SKIP.match(path):
            continue
        file = root / path
        if not file.is_file():
            continue
        data = file.read_bytes()
        if b"\0" in data:
            continue  # binary
        for number, line in enumerate(data.decode(errors="replace").splitlines(), 1):
            found += [f"{path}:{number}: \"{word}\" ({what})" for word, what in hits(path, line)]
    # Test names are file contents too, so the lines above cover them; the file names are checked here.
    found += [f"{path}: file name \"{word}\" ({what})" for path in tracked(root) if not SKIP.match(path)
              for word, what in hits(path, path)]
    print("\n".join(found) if found else "no development-process word in the project")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
