"""A peer that says hello, reports one batch, then dies: sluice must record it
as crashed with this stderr and carry on."""
import json
import sys

print(json.dumps({"hello": "crash", "framework": "none", "protocol": 1}), flush=True)
print(json.dumps({"batch": 0, "latency_ns": 1000, "digest": "0000000000000000"}), flush=True)
print("simulated crash: the loader blew up", file=sys.stderr, flush=True)
sys.exit(3)
