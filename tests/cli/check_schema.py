#!/usr/bin/env python3
"""Checks JSON files against a JSON Schema (draft-07), with the standard
library only: the keywords the schemas in tests/cli/schemas use (type,
properties, patternProperties, additionalProperties, propertyNames,
required, maxLength, minimum) and no others; a schema with another keyword
is refused, so a check never passes by ignoring a rule.

usage: check_schema.py SCHEMA FILE...   exit 0 when every file holds, 1
naming the file, the path in it and the rule broken."""

import json
import re
import sys

KNOWN = {
    "$comment",
    "$id",
    "$schema",
    "type",
    "properties",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
    "required",
    "maxLength",
    "minimum",
}
TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def check(schema, value, where, errors):
    unknown = set(schema) - KNOWN
    if unknown:
        raise SystemExit(f"check_schema.py: the schema uses {sorted(unknown)}, which this checker does not know")
    if "type" in schema and not TYPES[schema["type"]](value):
        errors.append(f"{where}: is {type(value).__name__}, the schema wants {schema['type']}")
        return
    if "maxLength" in schema and isinstance(value, str) and len(value) > schema["maxLength"]:
        errors.append(f"{where}: {len(value)} characters, at most {schema['maxLength']}")
    if "minimum" in schema and TYPES["number"](value) and value < schema["minimum"]:
        errors.append(f"{where}: {value} is below {schema['minimum']}")
    if not isinstance(value, dict):
        return
    for name in schema.get("required", []):
        if name not in value:
            errors.append(f"{where}: lacks '{name}'")
    for key, item in value.items():
        path = f"{where}.{json.dumps(key)}"
        if "propertyNames" in schema:
            check(schema["propertyNames"], key, f"{where}: the name {json.dumps(key)[:80]}", errors)
        matched = False
        if key in schema.get("properties", {}):
            matched = True
            check(schema["properties"][key], item, path, errors)
        for pattern, sub in schema.get("patternProperties", {}).items():
            if re.search(pattern, key):
                matched = True
                check(sub, item, path, errors)
        if not matched and schema.get("additionalProperties") is False:
            errors.append(f"{where}: '{key}' is not allowed")
        elif not matched and isinstance(schema.get("additionalProperties"), dict):
            check(schema["additionalProperties"], item, path, errors)


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        schema = json.load(f)
    failed = 0
    for name in argv[2:]:
        errors = []
        try:
            with open(name) as f:
                check(schema, json.load(f), "$", errors)
        except (OSError, ValueError) as e:
            errors.append(str(e))
        for e in errors[:5]:
            print(f"{name}: {e}", file=sys.stderr)
        failed += bool(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
