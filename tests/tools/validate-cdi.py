#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Validates a CDI spec against the CDI JSON schema: validate-cdi.py SCHEMA_DIR SPEC.json

SCHEMA_DIR holds schema.json and the defs.json it refers to (../shared/reference/cdi/).
"""
import json
import os
import sys

import jsonschema


def main():
    schema_dir, spec_path = sys.argv[1], sys.argv[2]
    with open(os.path.join(schema_dir, "schema.json")) as f:
        schema = json.load(f)
    with open(spec_path) as f:
        spec = json.load(f)
    base = "file://" + os.path.abspath(schema_dir) + "/"
    resolver = jsonschema.RefResolver(base_uri=base, referrer=schema)
    jsonschema.Draft7Validator(schema, resolver=resolver).validate(spec)
    print("valid: %s" % spec_path)


if __name__ == "__main__":
    main()
