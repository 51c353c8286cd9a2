"""The JAX peers' XLA cap (peers/xla_cap.py) and its place in the protocol.

XLA may contract a multiply and a following add into one fused multiply-add,
which rounds once where sluice rounds twice; the JAX peers cap XLA at AVX
for the plans where that can happen. The plan comes only after a peer's hello
(protocol 3), so the cap is decided once the plan has come: a peer that read
plan.json while importing (as peer:jax and peer:datarax did) dies before its
hello. The pure part (which plans contract) runs everywhere; the peers' start
runs where their virtual environments are installed, and is skipped, named,
where they are not.

    python3 test_xla_cap.py SOURCE_ROOT
"""

import os
import subprocess
import sys
import tempfile

root = sys.argv[1]
sys.path.insert(0, os.path.join(root, "peers"))
import xla_cap  # noqa: E402

failures = []


def check(what, ok):
    print("%s: %s" % ("ok" if ok else "FAILED", what))
    if not ok:
        failures.append(what)


def plan(*ops):
    return {"ops": [{"kind": kind, "field": field} for kind, field in ops]}


# a * b followed by + c on the same values is the pattern an FMA fuses.
check("scale then add on one field contracts", xla_cap.contraction(plan(("scale", "x"), ("add", "x"))) is not None)
check("add then scale does not", xla_cap.contraction(plan(("add", "x"), ("scale", "x"))) is None)
check("scale and add on different fields do not", xla_cap.contraction(plan(("scale", "x"), ("add", "y"))) is None)
check(
    "normalize twice contracts (its multiply, then its subtract)",
    xla_cap.contraction(plan(("normalize", "x"), ("normalize", "x"))) is not None,
)
check("an op whose own arithmetic multiplies then adds contracts", xla_cap.contraction(plan(("log1p", "x"))))
check("a plan of casts and crops does not", xla_cap.contraction(plan(("cast", "x"), ("crop", "x"))) is None)

# Each XLA peer must say hello with no plan in its export: sluice writes the
# plan after the hello. With its stdin closed (sluice gone) it then exits.
venvs = {
    "jax_peer.py": os.environ.get("SLUICE_PEER_PYTHON") or os.path.join(root, ".venv-peers/bin/python"),
    "datarax_peer.py": os.environ.get("SLUICE_DATARAX_PYTHON") or os.path.join(root, ".venv-datarax/bin/python"),
}
for script, python in venvs.items():
    if not os.access(python, os.X_OK) or subprocess.run([python, "-c", "import jax"], capture_output=True).returncode:
        print("skip: %s needs jax in %s (ci/install-peers.sh jax or datarax)" % (script, python))
        continue
    with tempfile.TemporaryDirectory() as export:
        run = subprocess.run(
            [
                python,
                os.path.join(root, "peers", script),
                export,
                "--ring-fd=4",
                "--ring-slots=2",
                "--ring-slot-bytes=1024",
            ],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
        )
        first = run.stdout.splitlines()[0] if run.stdout else ""
        check(
            "%s says hello before its export holds a plan (stderr: %s)" % (script, run.stderr.strip()[-200:]),
            first.startswith('{"hello"'),
        )

# The cap must be set before XLA's backend starts, and refused after.
python = venvs["jax_peer.py"]
if os.access(python, os.X_OK):
    probe = (
        "import sys, os; sys.path.insert(0, %r); import xla_cap, jax, jax.numpy as jnp\n"
        "p = {'ops': [{'kind': 'scale', 'field': 'x'}, {'kind': 'add', 'field': 'x'}]}\n"
        "print(xla_cap.apply(p)); print(os.environ.get('XLA_FLAGS'))\n"
        "jnp.ones(1).block_until_ready()\n"
        "xla_cap.apply(p)\n" % os.path.join(root, "peers")
    )
    run = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=300)
    if "No module named 'jax'" not in run.stderr:
        lines = run.stdout.splitlines()
        check("the cap is set before the backend starts", len(lines) == 2 and "--xla_cpu_max_isa=AVX" in lines[1])
        check("and refused once it has started", run.returncode != 0 and "backend started" in run.stderr)

sys.exit(1 if failures else 0)
