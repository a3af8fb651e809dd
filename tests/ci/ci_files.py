#!/usr/bin/env python3
"""The CI templates, the Kubernetes manifests and the compose file, checked as ctest entries.

  ci_files.py lint REPO              yamllint (Debian's package, .yamllint.yaml) on every one of them
  ci_files.py commands REPO BUILD    every `idemproof SUB --flag` they run exists: `idemproof SUB --help`
                                     lists each flag
  ci_files.py k8s-index REPO BUILD   each Indexed Job of docker/k8s: completions = parallelism = N, its
                                     args carry `--shard auto/N`, and run (through docker/entrypoint.sh,
                                     with a short --runs, the repository's targets and a temp report
                                     folder) with JOB_COMPLETION_INDEX=I they write shard I's report

Commands in shell scripts are read with shlex; a k8s container's or compose service's `args`/`command`
list is a command when the image is idemproof's. Prints one line per problem and exits 1; 0 when all hold.
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

FILES = [".github/workflows/idemproof.yml", "docs/ci/gitlab-ci.yml", "docker/compose.yaml"]
SUBCOMMANDS = {"run", "sweep", "check", "replay", "compare", "demo", "merge"}


def files(repo):
    return [repo / f for f in FILES] + sorted((repo / "docker" / "k8s").glob("*.yaml"))


def documents(path):
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def strings(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for v in node.values():
            yield from strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from strings(v)


def shell_commands(text):
    """Every `idemproof ...` in a shell script, as argument lists (up to ||, &&, ;, |)."""
    text = text.replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        for m in re.finditer(r"(?<![\w/-])idemproof\s+(.*)", line):
            try:
                words = shlex.split(m.group(1))
            except ValueError:
                words = m.group(1).split()
            args = []
            for w in words:
                if w in ("||", "&&", ";", "|") or w.startswith("#"):
                    break
                args.append(w)
            if args and (args[0] in SUBCOMMANDS or args[0].startswith("--")):
                out.append(args)
    return out


def list_commands(node):
    """`args:` / `command:` lists of containers and services whose image is idemproof's."""
    out = []
    if isinstance(node, dict):
        if "idemproof" in str(node.get("image", "")):
            for key in ("args", "command"):
                v = node.get(key)
                if isinstance(v, list) and v and str(v[0]) in SUBCOMMANDS:
                    out.append([str(x) for x in v])
        for v in node.values():
            out.extend(list_commands(v))
    elif isinstance(node, list):
        for v in node:
            out.extend(list_commands(v))
    return out


def commands_of(path):
    found = []
    for doc in documents(path):
        for s in strings(doc):
            found.extend(shell_commands(s))
        found.extend(list_commands(doc))
    return found


def lint_dockerfile(repo):
    """No container engine (nor hadolint) here: what can be read statically. Every stage is FROM debian:12,
    every COPY from the context names a file or folder that exists, the last USER is not root."""
    problems = []
    text = (repo / "docker" / "Dockerfile").read_text().replace("\\\n", " ")
    users = []
    for line in text.splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        op = words[0].upper()
        if op == "FROM" and words[1] != "debian:12":
            problems.append(f"docker/Dockerfile: FROM {words[1]}, not debian:12")
        if op == "COPY" and not any(w.startswith("--from") for w in words):
            for src in words[1:-1]:
                if not src.startswith("--") and not (repo / src).exists():
                    problems.append(f"docker/Dockerfile: COPY {src}: no such file in the repository")
        if op == "USER":
            users.append(words[1])
    if not users or users[-1].split(":")[0] in ("root", "0"):
        problems.append("docker/Dockerfile: the runtime image runs as root")
    if not os.access(repo / "docker" / "entrypoint.sh", os.X_OK):
        problems.append("docker/entrypoint.sh is not executable")
    for p in problems:
        print(p)
    return problems


def lint(repo):
    if lint_dockerfile(repo):
        return 1
    targets = [str(f) for f in files(repo)]
    missing = [t for t in targets if not Path(t).exists()]
    if missing:
        print("missing: " + ", ".join(missing))
        return 1
    r = subprocess.run(["yamllint", "-s", "-c", str(repo / ".yamllint.yaml")] + targets)
    return r.returncode


def check_commands(repo, build):
    exe = str(build / "idemproof")
    helps = {}
    problems = []
    total = 0
    for f in files(repo):
        cmds = commands_of(f)
        if not cmds:
            problems.append(f"{f.relative_to(repo)}: runs no idemproof command")
        for args in cmds:
            total += 1
            sub = args[0] if args[0] in SUBCOMMANDS else ""
            if sub not in helps:
                r = subprocess.run([exe] + ([sub] if sub else []) + ["--help"], capture_output=True, text=True)
                helps[sub] = r.stdout if r.returncode == 0 else None
                if r.returncode != 0:
                    problems.append(f"{f.relative_to(repo)}: `idemproof {sub} --help` exits {r.returncode}")
            if helps[sub] is None:
                continue
            for w in args:
                if w.startswith("--"):
                    flag = w.split("=", 1)[0]
                    if not re.search(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])", helps[sub]):
                        problems.append(f"{f.relative_to(repo)}: `idemproof {sub}` has no flag {flag} ({' '.join(args)})")
    for p in problems:
        print(p)
    print(f"{total} idemproof commands in {len(files(repo))} files; {len(problems)} problems")
    return 1 if problems else 0


def expand(word, env):
    return re.sub(r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), word)


def temp_root_base():
    """Where a private IDEMPROOF_TMPDIR goes: /dev/shm when writable (idemproof's own default), else the temp dir."""
    return "/dev/shm" if os.access("/dev/shm", os.W_OK | os.X_OK) else None


def k8s_index(repo, build):
    problems = []
    ran = 0
    for f in sorted((repo / "docker" / "k8s").glob("*.yaml")):
        for doc in documents(f):
            spec = doc.get("spec", {}) if doc.get("kind") == "Job" else {}
            if spec.get("completionMode") != "Indexed":
                continue
            name = f"{f.name}: Job {doc['metadata']['name']}"
            n = spec.get("completions")
            if spec.get("parallelism") != n:
                problems.append(f"{name}: parallelism {spec.get('parallelism')} is not completions {n}")
            container = spec["template"]["spec"]["containers"][0]
            args = [str(a) for a in container["args"]]
            declared = {e["name"] for e in container.get("env", [])}
            if "JOB_COMPLETION_INDEX" not in declared:
                problems.append(f"{name}: JOB_COMPLETION_INDEX is not declared, so $(JOB_COMPLETION_INDEX) would not expand")
            try:
                shard = args[args.index("--shard") + 1]
            except (ValueError, IndexError):
                problems.append(f"{name}: no --shard")
                continue
            if shard != f"auto/{n}":
                problems.append(f"{name}: --shard {shard}, not auto/{n}")
            if "--database-url" in args:
                continue  # needs its servers: tests/integration (external servers) runs that mode
            # Run it as the pod would, through the entrypoint, with the index the Job controller sets.
            index = n - 1
            with tempfile.TemporaryDirectory(prefix="itest-k8s-") as tmp, \
                    tempfile.TemporaryDirectory(prefix="itest-k8s-root-", dir=temp_root_base()) as root:
                env = dict(os.environ)
                # A temp root of its own: what the pod's idemproof leaves is judged there alone. Traversable:
                # the embedded PostgreSQL runs as postgres when idemproof is root.
                os.chmod(root, 0o755)
                env["IDEMPROOF_TMPDIR"] = root
                for e in container.get("env", []):
                    if "value" in e:
                        env[e["name"]] = e["value"]
                env["JOB_COMPLETION_INDEX"] = str(index)
                env["IDEMPROOF_BIN"] = str(build / "idemproof")
                run = [expand(a, env) for a in args]
                run = [a.replace("/usr/share/idemproof/targets", str(repo / "targets")).replace("/reports", tmp)
                       for a in run]
                run[run.index("--runs") + 1] = "4"
                run += ["--max-events", "2"]
                r = subprocess.run([str(repo / "docker" / "entrypoint.sh")] + run, env=env, capture_output=True,
                                   text=True, timeout=300)
                report = Path(tmp) / f"shard-{index}" / "report.json"
                ran += 1
                # Its verdict (a few schedules may leave coverage short: unknown) is not the point here.
                if not report.exists():
                    problems.append(f"{name}: the pod's command exited {r.returncode} without {report}: {r.stderr[-500:]}")
                    continue
                left = sorted(os.listdir(root))
                if left:
                    problems.append(f"{name}: the pod's idemproof left {left} in its temp root")
                shard_section = json.loads(report.read_text()).get("shard", {})
                if shard_section.get("index") != index or shard_section.get("count") != n:
                    problems.append(f"{name}: JOB_COMPLETION_INDEX={index} ran shard {shard_section}")
    for p in problems:
        print(p)
    print(f"{ran} Indexed Job commands run; {len(problems)} problems")
    return 1 if problems or ran == 0 else 0


def main():
    what, repo = sys.argv[1], Path(sys.argv[2]).resolve()
    if what == "lint":
        return lint(repo)
    build = Path(sys.argv[3]).resolve()
    if what == "commands":
        return check_commands(repo, build)
    if what == "k8s-index":
        return k8s_index(repo, build)
    print(f"unknown check {what}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
