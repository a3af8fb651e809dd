#!/usr/bin/env python3
"""Every Catch2 test name must survive catch_discover_tests and a Catch2 filter unchanged.

ctest keeps its test list as a CMake list, so a ';' splits one name into two tests that match
nothing; a name that starts with '-' is read back by Catch2 as an option, and one that starts
with '~' as a negation. Such a test is reported failed with "No test cases matched", or worse,
not run at all.

Catch2 2's console reporter indents the lines after a test name's first ": " to just after it, so that
a failing test whose name has its first ": " at column 76 or later (of its 80) never reports: the
reporter loops forever or aborts on std::out_of_range while printing it (tried with Catch2 2.13 at
every column from 66 to 83), and the failure's message is lost.
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
pattern = re.compile(r'(?:TEST_CASE|SCENARIO)\s*\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')
piece = re.compile(r'"((?:[^"\\]|\\.)*)"')
bad = []
for path in sorted((root / "tests").rglob("*.cc")):
    text = path.read_text(errors="replace")
    for match in pattern.finditer(text):
        number = text.count("\n", 0, match.start()) + 1
        name = "".join(piece.findall(match.group(1)))
        why = None
        if ";" in name:
            why = "contains ';' (ctest splits it)"
        elif name[:1] in ("-", "~"):
            why = f"starts with '{name[0]}' (Catch2 reads it as an option or a negation)"
        elif name != name.strip():
            why = "starts or ends with a space"
        elif name.find(": ") >= 76:
            why = f"has its first ': ' at column {name.find(': ')} (Catch2's console reporter cannot print it past 75)"
        if why:
            bad.append(f"{path.relative_to(root)}:{number}: test name {why}: {name}")
print("\n".join(bad) if bad else "every test name is a filter that matches itself")
sys.exit(1 if bad else 0)
