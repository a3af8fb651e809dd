#!/usr/bin/env python3
"""The harness's layering, checked against harness/CMakeLists.txt (a ctest entry).

Each idem_library(name DIRS folders... LIBS deps...) owns its folders. A source may include a header of
another folder only when that folder's library is among the ones it links (directly or through them),
and every idem_* library a library links directly must be included by at least one of its sources:
libraries link only what they include, and nothing reaches past what it links.
A broker (harness/brokers/<name>/ and its subfolders, a library each) links nothing above the proxies
(BROKER_MAY_LINK) but the libraries of its own broker, and no other broker: brokers do not reach into one
another (brokers/kafka/client, the harness's Kafka client, links brokers/kafka's tracker library).
Prints one line per breach and exits 1; exits 0 when the tree keeps its layers.
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
harness = root / "harness"
cmake = (harness / "CMakeLists.txt").read_text()

libs = {}  # name -> (dirs, idem deps)
for m in re.finditer(r"idem_library\((\w+)\s+DIRS\s+([^)]*?)(?:\s+LIBS\s+([^)]*))?\)", cmake):
    name, dirs, deps = m.group(1), m.group(2).split(), (m.group(3) or "").split()
    libs[name] = (dirs, [d for d in deps if d.startswith("idem_")])
cli = re.search(r"target_link_libraries\(idemproof PRIVATE ([^)]*)\)", cmake)
libs["idemproof"] = (["cli"], [d for d in cli.group(1).split() if d.startswith("idem_")])

owner = {d: name for name, (dirs, _) in libs.items() for d in dirs}
BROKER_MAY_LINK = {"idem_core", "idem_proxy", "idem_servers", "idem_brokers"}
brokers = {name for name, (dirs, _) in libs.items() if any(d.startswith("brokers/") for d in dirs)}
breaches = []
for name, (_, deps) in libs.items():
    for d in deps:
        if d not in libs:
            breaches.append(f"{name} links {d}, which harness/CMakeLists.txt does not define")


def broker_of(name):
    """The broker a library belongs to: "kafka" for brokers/kafka and brokers/kafka/client."""
    return next(d.split("/")[1] for d in libs[name][0] if d.startswith("brokers/"))


for name in sorted(brokers):
    for d in libs[name][1]:
        if d in brokers and broker_of(d) == broker_of(name):
            continue
        if d not in BROKER_MAY_LINK:
            breaches.append(f"broker library {name} links {d}: a broker links only {sorted(BROKER_MAY_LINK)}")


def closure(name, seen=None):
    seen = set() if seen is None else seen
    for d in libs.get(name, ([], []))[1]:
        if d not in seen:
            seen.add(d)
            closure(d, seen)
    return seen


include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
for name in sorted(brokers):
    for other in sorted(closure(name) & brokers):
        if broker_of(other) == broker_of(name):
            continue
        breaches.append(f"broker library {name} reaches {other}: brokers do not reach into one another")

for name, (dirs, deps) in libs.items():
    reach = closure(name)
    used = set()
    for d in dirs:
        for src in sorted((harness / d).glob("*")):
            if src.suffix not in (".h", ".cc"):
                continue
            for inc in include.findall(src.read_text()):
                folder = str(pathlib.PurePosixPath(inc).parent)
                lib = owner.get(folder)
                if lib is None:
                    breaches.append(f"{src.relative_to(root)} includes \"{inc}\": no library owns harness/{folder}")
                    continue
                if lib == name:
                    continue
                used.add(lib)
                if lib not in reach:
                    breaches.append(f"{src.relative_to(root)} includes \"{inc}\" of {lib}, which {name} does not link")
    for d in deps:
        # A direct dependency none of its sources includes: linked for nothing (or only for what it brings).
        if d not in used:
            breaches.append(f"{name} links {d} but none of its sources includes a header of it")

for b in breaches:
    print(b)
sys.exit(1 if breaches else 0)
