"""Checks that every built-in peer the sluice binary registers is where
CONTRIBUTING's peer checklist puts it for users: a row of docs/peers.md's
table of peers (what it is) and a framework of `ci/install-peers.sh --list`
(how to install it). Exits 1 naming each peer that is missing from either,
so a peer added without its documentation fails the suite. A meson test
(peers_documented).

    python3 ci/check-peers-documented.py SLUICE SOURCE_ROOT
"""

import re
import subprocess
import sys


def registered_peers(sluice: str) -> list[str]:
    """The peers of `sluice list`'s adapter table (its rows before the first
    blank line after the header), in its order."""
    listing = subprocess.run([sluice, "list"], check=True, capture_output=True, text=True).stdout
    peers: list[str] = []
    inside = False
    for line in listing.splitlines():
        if line.startswith("adapter "):
            inside = True
        elif inside and not line.strip():
            break
        elif inside and line.startswith("peer:"):
            peers.append(line.split()[0])
    return peers


def documented_peers(root: str) -> set[str]:
    """The peers named in the first cell of docs/peers.md's table rows: a
    cell "`peer:a`, `-w2`" names peer:a and peer:a-w2."""
    named: set[str] = set()
    with open(root + "/docs/peers.md") as f:
        for line in f:
            if not line.startswith("| `peer:"):
                continue
            cells = re.findall(r"`([^`]+)`", line.split("|")[1])
            base = cells[0]
            named.add(base)
            named.update(base + suffix for suffix in cells[1:] if suffix.startswith("-"))
    return named


def installable_peers(root: str) -> set[str]:
    """The peers on the "runs:" lines of `ci/install-peers.sh --list`."""
    listing = subprocess.run(
        ["bash", root + "/ci/install-peers.sh", "--list"], check=True, capture_output=True, text=True
    ).stdout
    named: set[str] = set()
    for line in listing.splitlines():
        if line.strip().startswith("runs:"):
            named.update(re.findall(r"peer:[a-z0-9-]+", line))
    return named


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    sluice, root = sys.argv[1], sys.argv[2]
    peers = registered_peers(sluice)
    if not peers:
        print("sluice list shows no peer: is %s a sluice binary?" % sluice, file=sys.stderr)
        return 1
    documented, installable = documented_peers(root), installable_peers(root)
    problems = []
    for peer in peers:
        if peer not in documented:
            problems.append("%s has no row in docs/peers.md's table of peers" % peer)
        if peer not in installable:
            problems.append("%s is run by no framework of ci/install-peers.sh --list" % peer)
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems:
        print("%d peers, each documented and installable" % len(peers))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
