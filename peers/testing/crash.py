"""A peer that says hello, takes the first request, then dies: sluice must
record it as crashed with this stderr and carry on."""

import json
import sys

print(json.dumps({"hello": "crash", "framework": "none", "protocol": 3}), flush=True)
sys.stdin.readline()
print("simulated crash: the loader blew up", file=sys.stderr, flush=True)
sys.exit(3)
