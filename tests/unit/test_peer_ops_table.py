"""Each built-in peer script declares what it implements only through
peers/ops.txt: its SUPPORTED is sluice_peer.implements(__file__), bound once
and never changed, and SUPPORTED is what it hands sluice_peer.main,
sluice_peer.describe and Plan.require. With test_peers' peers_listed test
(adapters/peers.c's sets against the same file), the C table and the Python
cannot disagree. Reads the scripts' source (ast), so no framework is needed.

    python3 test_peer_ops_table.py SOURCE_ROOT
"""

import ast
import os
import sys


def is_implements_of_file(node: ast.AST) -> bool:
    """Whether node is sluice_peer.implements(__file__)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "implements"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "sluice_peer"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id == "__file__"
        and not node.keywords
    )


def supported_argument(call: ast.Call) -> ast.AST | None:
    """The ops set a call hands over: main's 4th argument, describe's 2nd,
    require's 1st (or the keyword `supported`), else None."""
    name = call.func.attr if isinstance(call.func, ast.Attribute) else None
    position = {"main": 3, "describe": 1, "require": 0}.get(name)
    if position is None:
        return None
    if name in ("main", "describe") and not (
        isinstance(call.func.value, ast.Name) and call.func.value.id == "sluice_peer"
    ):
        return None
    for keyword in call.keywords:
        if keyword.arg == "supported":
            return keyword.value
    return call.args[position] if len(call.args) > position else None


def problems(path: str) -> list[str]:
    """What is wrong with how the script at path declares its ops."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    found: list[str] = []
    bindings = 0
    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Name) and target.id == "SUPPORTED":
                bindings += 1
                if not (isinstance(node, ast.Assign) and is_implements_of_file(node.value)):
                    found.append(
                        "line %d binds SUPPORTED to something else than sluice_peer.implements(__file__)" % node.lineno
                    )
    if bindings != 1:
        found.append("SUPPORTED is bound %d times, not once" % bindings)
    handed = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            argument = supported_argument(node)
            if argument is None:
                continue
            handed += 1
            if not (isinstance(argument, ast.Name) and argument.id == "SUPPORTED"):
                found.append("line %d hands over %s, not SUPPORTED" % (node.lineno, ast.unparse(argument)))
    if handed == 0:
        found.append("it never hands SUPPORTED to sluice_peer.main, describe or Plan.require")
    return found


def main() -> None:
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    peers = os.path.join(root, "peers")
    sys.path.insert(0, peers)
    import sluice_peer

    table = sluice_peer.read_ops_table(os.path.join(peers, "ops.txt"))
    failed = 0
    for script in sorted(table):
        path = os.path.join(peers, script)
        found = problems(path) if os.path.exists(path) else ["peers/ops.txt declares it, and there is no such file"]
        for problem in found:
            print("peers/%s: %s" % (script, problem))
        failed += bool(found)
        print("%s peers/%s" % ("not ok" if found else "ok", script))
    print("%d of %d built-in peer scripts take their ops from peers/ops.txt" % (len(table) - failed, len(table)))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
