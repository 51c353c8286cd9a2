"""A peer that prints something other than the protocol."""

import json
import sys

print(json.dumps({"hello": "garbage", "framework": "none", "protocol": 3}), flush=True)
print("this is not json", flush=True)
print("printed garbage on purpose", file=sys.stderr, flush=True)
