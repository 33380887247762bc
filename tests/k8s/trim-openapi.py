#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Cuts one of Kubernetes' OpenAPI v3 documents (api/openapi-spec/v3/*.json in
kubernetes/kubernetes), or of its "components" alone, down to the schemas that ROOT...
reach through $ref, as they are (no schema is changed): what tests/k8s/check-dra.mjs
validates against, small enough to keep in the tree. Kubernetes' Swagger 2.0 document
(api/openapi-spec/swagger.json, all groups in one) is cut the same way, its "definitions"
kept as "definitions" (their $refs point there).

  trim-openapi.py FULL.json OUT.json ROOT...
"""
import hashlib
import json
import sys


def refs(node, prefix, out):
    if isinstance(node, dict):
        r = node.get("$ref")
        if isinstance(r, str) and r.startswith(prefix):
            out.add(r[len(prefix):])
        for v in node.values():
            refs(v, prefix, out)
    elif isinstance(node, list):
        for v in node:
            refs(v, prefix, out)


def main():
    full, out, roots = sys.argv[1], sys.argv[2], sys.argv[3:]
    doc = json.load(open(full))
    if "definitions" in doc:  # Swagger 2.0
        key, whole, prefix = "definitions", doc["definitions"], "#/definitions/"
        schemas = whole
    else:
        key, whole, prefix = "components", doc["components"], "#/components/schemas/"
        schemas = whole["schemas"]
    keep, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        if name not in schemas:
            sys.exit("trim-openapi: %s has no schema %s" % (full, name))
        keep.add(name)
        found = set()
        refs(schemas[name], prefix, found)
        todo.extend(found - keep)
    # The components (or definitions) whole, canonically serialised: the same from the
    # document or from its components alone.
    canon = json.dumps(whole, sort_keys=True, separators=(",", ":")).encode()
    kept = {k: schemas[k] for k in sorted(keep)}
    doc = {"x-%s-sha256" % key: hashlib.sha256(canon).hexdigest(),
           key: kept if key == "definitions" else {"schemas": kept}}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


main()
