"""A peer that says hello and then never sends a batch: sluice must kill it at
the per-batch limit and record a timeout."""

import json
import sys
import time

print(json.dumps({"hello": "hang", "framework": "none", "protocol": 3}), flush=True)
print("hanging on purpose", file=sys.stderr, flush=True)
time.sleep(3600)
