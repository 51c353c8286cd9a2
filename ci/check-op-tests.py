"""Checks docs/testing.md's "Tests by op" table against the tree: every op of
include/sluice/pipeline/op_list.h has its row, no row names an op that is not there,
and every test a row names exists (its file, and in it a Criterion test of
that suite, or of that suite and name). Exits 1 naming what is wrong. A
meson test (op_tests_listed), so a new op without its row fails the suite.

    python3 ci/check-op-tests.py [SOURCE_ROOT]
"""

import os
import re
import sys

HEADING = "## Tests by op"


def op_names(root: str) -> list[str]:
    """The ops of op_list.h, in its order."""
    with open(os.path.join(root, "include/sluice/pipeline/op_list.h")) as f:
        return re.findall(r"X\(\s*[A-Z0-9_]+\s*,\s*([a-z0-9_]+)\s*,", f.read())


def table_rows(root: str) -> list[tuple[int, str, str]]:
    """(line number, op, its tests cell) of each row of the table under
    HEADING in docs/testing.md."""
    rows, inside = [], False
    with open(os.path.join(root, "docs/testing.md")) as f:
        for number, line in enumerate(f, 1):
            if line.startswith("## "):
                inside = line.strip() == HEADING
                continue
            match = re.match(r"\|\s*`([a-z0-9_]+)`\s*\|([^|]*)\|", line) if inside else None
            if match:
                rows.append((number, match.group(1), match.group(2)))
    return rows


def missing_test(root: str, path: str, criterion_filter: str) -> str | None:
    """Why the test that path and filter ("suite/*" or "suite/name") name
    is not there, or None when it is."""
    full = os.path.join(root, path)
    if not os.path.isfile(full):
        return "%s does not exist" % path
    suite, _, name = criterion_filter.partition("/")
    with open(full) as f:
        source = f.read()
    pattern = r"^(?:Test|ParameterizedTest)\(\s*%s\s*,\s*%s\b" % (re.escape(suite), r"\w+" if name == "*" else name)
    if not re.search(pattern, source, re.MULTILINE):
        return "%s has no Criterion test %s" % (path, criterion_filter)
    return None


def main() -> None:
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    ops = op_names(root)
    problems: list[str] = []
    listed: dict[str, int] = {}
    for number, op, cell in table_rows(root):
        where = "docs/testing.md:%d" % number
        if op not in ops:
            problems.append("%s: `%s` is no op of include/sluice/pipeline/op_list.h" % (where, op))
        if op in listed:
            problems.append("%s: `%s` has a row already (line %d)" % (where, op, listed[op]))
        listed[op] = number
        places = re.findall(r"`([\w./-]+\.c)`\s*`(\w+/(?:\*|\w+))`", cell)
        if not places:
            problems.append("%s: `%s` names no test (`file.c` `suite/*` or `suite/name`)" % (where, op))
        for path, criterion_filter in places:
            why = missing_test(root, path, criterion_filter)
            if why:
                problems.append("%s: `%s`: %s" % (where, op, why))
    for op in ops:
        if op not in listed:
            problems.append(
                "docs/testing.md: %s has no row for op `%s` (include/sluice/pipeline/op_list.h)" % (HEADING, op)
            )
    for problem in problems:
        print(problem)
    unlisted = set(ops) - set(listed)
    print("%d of %d ops have their tests listed in docs/testing.md" % (len(ops) - len(unlisted), len(ops)))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
