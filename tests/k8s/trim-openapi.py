#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Cuts one of Kubernetes' OpenAPI v3 documents (api/openapi-spec/v3/*.json in
kubernetes/kubernetes), or of its "components" alone, down to the schemas that ROOT...
reach through $ref, as they are (no schema is changed): what tests/k8s/check-dra.mjs
validates against, small enough to keep in the tree.

  trim-openapi.py FULL.json OUT.json ROOT...
"""
import hashlib
import json
import sys


def refs(node, out):
    if isinstance(node, dict):
        r = node.get("$ref")
        if isinstance(r, str) and r.startswith("#/components/schemas/"):
            out.add(r[len("#/components/schemas/"):])
        for v in node.values():
            refs(v, out)
    elif isinstance(node, list):
        for v in node:
            refs(v, out)


def main():
    full, out, roots = sys.argv[1], sys.argv[2], sys.argv[3:]
    components = json.load(open(full))["components"]
    schemas = components["schemas"]
    keep, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        if name not in schemas:
            sys.exit("trim-openapi: %s has no schema %s" % (full, name))
        keep.add(name)
        found = set()
        refs(schemas[name], found)
        todo.extend(found - keep)
    # The components whole, canonically serialised: the same from the document or from its
    # components alone.
    canon = json.dumps(components, sort_keys=True, separators=(",", ":")).encode()
    doc = {"x-components-sha256": hashlib.sha256(canon).hexdigest(),
           "components": {"schemas": {k: schemas[k] for k in sorted(keep)}}}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


main()
