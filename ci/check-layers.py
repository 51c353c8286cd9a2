#!/usr/bin/env python3
"""Checks sluice's layering on a build: every symbol a layer's library takes
from another layer must come from a layer below it (docs/architecture.md).

The include paths already stop a layer from including another's private
headers; this check covers what they cannot, a call through a public header
to a layer above (the engine calling the kernel registry, say). It reads the
per-layer static libraries with nm, so it needs a build (any build type).

It checks the public headers too: each lies in the folder of the layer that
implements it (include/sluice/<layer>/), includes no public header of a layer
above its own, and declares only functions that its layer's libraries define.

    ci/check-layers.py [BUILD_DIR]     (default: build)

Prints one line per violation and exits 1 when there is any.
"""

import os
import re
import subprocess
import sys

# Bottom up. A layer may use the layers before it, except where RULES says
# otherwise. Paths are the static libraries, relative to the build folder.
LAYERS = [
    ("core", ["engine/core/libsluice_core.a"]),
    (
        "kernels",
        [
            "kernels/libsluice_kernels.a",
            "kernels/libsluice_cpu_kernels.a",
            "kernels/libsluice_cpu_kernels_avx512_256.a",
            "kernels/cuda/libsluice_cuda_kernels.a",
        ],
    ),
    ("source", ["engine/source/libsluice_source.a"]),
    ("fixtures", ["fixtures/libsluice_fixtures.a"]),
    ("order", ["engine/order/libsluice_order.a"]),
    ("pipeline", ["engine/pipeline/libsluice_pipeline.a"]),
    ("exec", ["engine/exec/libsluice_exec.a"]),
    ("records", ["engine/records/libsluice_records.a"]),
    ("adapters", ["adapters/libsluice_adapters.a"]),
    ("bench", ["bench/libsluice_bench.a"]),
    ("corpus", ["corpus/libsluice_corpus.a"]),
    ("dist", ["dist/libsluice_mpi.a"]),
]

# The engine runs kernels only through the table it is handed: no engine
# layer may take a symbol from the kernels layer, nor may the fixtures.
FORBIDDEN = {layer: {"kernels"} for layer in ("source", "fixtures", "order", "pipeline", "exec", "records")}


def symbols(path, defined):
    """The global symbols a static library defines, or leaves undefined."""
    args = ["nm", "--defined-only" if defined else "--undefined-only", "--format=posix", path]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        # "name type [value size]"; archive member headers end with ':'.
        if len(parts) < 2 or parts[0].endswith(":"):
            continue
        if defined and parts[1] not in "TDBRVWGS":
            continue
        names.add(parts[0])
    return names


def relative_includes(root):
    """Includes that climb out of their folder ("../x.h") reach a header
    wherever it lives and so bypass the include paths that keep each layer
    to its own and the lower layers' interface headers."""
    found = []
    for top in ("engine", "kernels", "fixtures", "adapters", "bench", "corpus", "dist", "tools", "tests", "include"):
        for folder, _, files in os.walk(os.path.join(root, top)):
            for file in files:
                if not file.endswith((".c", ".h", ".cu", ".cuh")):
                    continue
                path = os.path.join(folder, file)
                with open(path, encoding="utf-8", errors="replace") as text:
                    for number, line in enumerate(text, 1):
                        if line.startswith('#include "../'):
                            found.append(
                                f"{os.path.relpath(path, root)}:{number} climbs out of its folder: {line.strip()}"
                            )
    return found


PUBLIC = os.path.join("include", "sluice")
# The umbrella header includes every layer's headers; it belongs to none.
UMBRELLA = "sluice.h"
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]sluice/([^">]+)[">]', re.MULTILINE)


def public_headers(root):
    """(path relative to include/sluice, layer or None) of every public header."""
    found = []
    top = os.path.join(root, PUBLIC)
    for folder, _, files in os.walk(top):
        for file in sorted(files):
            if file.endswith(".h"):
                relative = os.path.relpath(os.path.join(folder, file), top)
                parts = relative.split(os.sep)
                found.append((relative.replace(os.sep, "/"), parts[0] if len(parts) == 2 else None))
    return sorted(found)


def declared_functions(text):
    """The functions and variables a header declares, not those it defines
    (static inline): comments, preprocessor lines and the C++ guard removed,
    each statement at file scope that ends in ';' and names `sl_x(` or is an
    extern variable."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.DOTALL)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"\\\n", " ", text)
    kept = []
    skipping = []  # per open #if: whether it hides its lines (#ifdef __cplusplus)
    for line in text.split("\n"):
        directive = line.strip()
        if directive.startswith("#"):
            word = directive[1:].strip().split(" ", 1)[0]
            if word in ("if", "ifdef", "ifndef"):
                skipping.append(directive.replace(" ", "") == "#ifdef__cplusplus")
            elif word == "endif" and skipping:
                skipping.pop()
            continue
        if not any(skipping):
            kept.append(line)
    names = []
    depth = 0
    statement = ""
    for char in "\n".join(kept):
        if char == "{":
            depth += 1
            statement = "" if depth == 1 else statement
        elif char == "}":
            depth -= 1
        elif depth == 0 and char == ";":
            words = statement.split()
            if words and words[0] != "typedef":
                function = re.search(r"\b(sl_\w+)\s*\(", statement)
                variable = re.search(r"\b(sl_\w+)\s*(\[[^]]*\])?\s*$", statement)
                if function and "=" not in statement[: function.start()]:
                    names.append(function.group(1))
                elif words[0] == "extern" and variable:
                    names.append(variable.group(1))
            statement = ""
        elif depth == 0:
            statement += char
    return names


def header_violations(root, order, defined_by):
    """A public header outside its layer's folder, one that includes a layer
    above its own, and a function declared by a layer that does not define it."""
    found = []
    for header, layer in public_headers(root):
        where = f"include/sluice/{header}"
        if layer is None:
            if header != UMBRELLA:
                found.append(f"{where} is in no layer's folder: move it to include/sluice/<layer>/")
            continue
        if layer not in order:
            found.append(f"{where} is in include/sluice/{layer}/, which is no layer")
            continue
        with open(os.path.join(root, PUBLIC, header), encoding="utf-8") as f:
            text = f.read()
        for included in INCLUDE.findall(text):
            above = included.split("/")[0]
            if above in order and order[above] > order[layer]:
                found.append(f"{where} ({layer}) includes sluice/{included} of {above}, a layer above it")
        for name in declared_functions(text):
            owner = defined_by.get(name)
            if owner is None:
                found.append(f"{where} declares {name}, which no layer's library defines")
            elif owner != layer:
                found.append(
                    f"{where} ({layer}) declares {name}, which {owner} defines: declare it in include/sluice/{owner}/"
                )
    return found


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    order = {name: i for i, (name, _) in enumerate(LAYERS)}
    defined_by = {}
    used = {}
    for name, paths in LAYERS:
        present = [os.path.join(build, p) for p in paths if os.path.exists(os.path.join(build, p))]
        if not present and name in ("core", "kernels", "pipeline", "exec"):
            print(f"check-layers: {build} has no library for layer {name}; build first", file=sys.stderr)
            return 2
        used[name] = set()
        for path in present:
            for symbol in symbols(path, defined=True):
                defined_by.setdefault(symbol, name)
            used[name] |= symbols(path, defined=False)
    violations = []
    for name, undefined in used.items():
        for symbol in sorted(undefined):
            owner = defined_by.get(symbol)
            if owner is None or owner == name:
                continue
            if order[owner] > order[name]:
                violations.append(f"{name} uses {symbol} of {owner}, a layer above it")
            elif owner in FORBIDDEN.get(name, ()):
                violations.append(
                    f"{name} uses {symbol} of {owner}; it may run kernels only through a table it is handed"
                )
    violations += relative_includes(root)
    violations += header_violations(root, order, defined_by)
    for line in violations:
        print(f"check-layers: {line}")
    if violations:
        print(f"check-layers: {len(violations)} violation(s); docs/architecture.md says which layer may use which")
        return 1
    headers = len(public_headers(root))
    print(
        f"check-layers: {len(LAYERS)} layers, {sum(len(u) for u in used.values())} imported symbols, "
        f"{headers} public headers, no violation"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
