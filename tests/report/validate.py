#!/usr/bin/env python3
"""validate.py SCHEMA DEF FILE...: validates each JSON FILE against
$defs/DEF of the JSON Schema SCHEMA (docs/report.schema.json) with
python3-jsonschema; prints one line per problem and exits 1 if any."""
import json
import sys

import jsonschema


def main():
    schema_path, name, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(schema_path) as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    sub = dict(schema, **{"$ref": "#/$defs/" + name})
    validator = cls(sub)
    bad = 0
    for path in files:
        with open(path) as f:
            try:
                doc = json.load(f)
            except json.JSONDecodeError as e:
                print(f"{path}: not JSON: {e}")
                bad += 1
                continue
        for err in sorted(validator.iter_errors(doc), key=lambda e: list(e.path)):
            where = "/".join(str(p) for p in err.path) or "(top)"
            print(f"{path}: {where}: {err.message}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
