# SPDX-License-Identifier: Apache-2.0
"""Unit tests of tests/k8s/trim-openapi.py, which cuts Kubernetes' OpenAPI documents to
what the DRA examples' objects reach (tests/k8s/openapi/): an OpenAPI v3 document's
components and a Swagger 2.0 document's definitions, each kept in its own layout with its
$refs unchanged, and the SHA-256 of the whole components or definitions; and the committed
swagger-v1.34.0.json closed: what its kinds reach, no more, no less."""
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
K8S = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "k8s"))
TRIM = os.path.join(K8S, "trim-openapi.py")


def canon_sha(obj):
    canon = json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(canon).hexdigest()


class TrimOpenAPI(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def trim(self, doc, *roots):
        src = os.path.join(self.tmp.name, "full.json")
        out = os.path.join(self.tmp.name, "out.json")
        with open(src, "w") as f:
            json.dump(doc, f)
        r = subprocess.run([sys.executable, TRIM, src, out, *roots], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            return json.load(f)

    @staticmethod
    def schemas(prefix):
        ref = lambda n: {"$ref": prefix + n}  # noqa: E731
        return {
            "A": {"type": "object",
                  "properties": {"b": ref("B"), "l": {"type": "array", "items": ref("C")}}},
            "B": {"type": "object", "properties": {"c": {"allOf": [ref("C")]}}},
            "C": {"type": "string"},
            "Unreached": {"type": "object", "properties": {"a": ref("A")}},
        }

    def test_v3_components(self):
        components = {"schemas": self.schemas("#/components/schemas/"),
                      "securitySchemes": {"x": {}}}
        out = self.trim({"openapi": "3.0.0", "components": components}, "A")
        self.assertEqual(set(out), {"components", "x-components-sha256"})
        self.assertEqual(out["components"]["schemas"],
                         {k: components["schemas"][k] for k in ("A", "B", "C")})
        self.assertEqual(out["x-components-sha256"], canon_sha(components))

    def test_swagger2_definitions(self):
        definitions = self.schemas("#/definitions/")
        out = self.trim({"swagger": "2.0", "definitions": definitions, "paths": {}}, "B")
        self.assertEqual(set(out), {"definitions", "x-definitions-sha256"})
        self.assertEqual(out["definitions"], {k: definitions[k] for k in ("B", "C")})
        self.assertEqual(out["x-definitions-sha256"], canon_sha(definitions))

    def test_missing_root(self):
        src = os.path.join(self.tmp.name, "full.json")
        with open(src, "w") as f:
            json.dump({"swagger": "2.0", "definitions": self.schemas("#/definitions/")}, f)
        r = subprocess.run([sys.executable, TRIM, src, os.path.join(self.tmp.name, "o"), "Nope"],
                           capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("has no schema Nope", r.stderr)

    @staticmethod
    def readme_roots():
        # The roots of the refresh command tests/k8s/openapi/README.md gives for
        # swagger-v1.34.0.json: "tests/k8s/trim-openapi.py swagger.json OUT ROOT...", its
        # lines joined at their trailing backslashes.
        with open(os.path.join(K8S, "openapi", "README.md")) as f:
            text = f.read().replace("\\\n", " ")
        cmds = [line.split() for line in text.splitlines()
                if line.split()[:2] == ["tests/k8s/trim-openapi.py", "swagger.json"]]
        assert len(cmds) == 1, cmds
        return cmds[0][3:]

    def test_committed_swagger_file_is_closed(self):
        # The committed file cut again from itself with the README's roots: the same
        # definitions (every $ref resolving, none those roots do not reach: a stray
        # definition or a root the README does not name fails), and the definitions nothing
        # in it refers to are README roots.
        with open(os.path.join(K8S, "openapi", "swagger-v1.34.0.json")) as f:
            definitions = json.load(f)["definitions"]
        roots = self.readme_roots()
        self.assertIn("io.k8s.api.core.v1.Pod", roots)
        self.assertEqual(len(roots), len(set(roots)))
        referred = set()
        for d in definitions.values():
            for r in re.findall(r'"\$ref": "#/definitions/([^"]+)"', json.dumps(d)):
                referred.add(r)
        self.assertLessEqual(set(definitions) - referred, set(roots))
        out = self.trim({"swagger": "2.0", "definitions": definitions}, *roots)
        self.assertEqual(sorted(out["definitions"]), sorted(definitions))
        self.assertEqual(out["definitions"], definitions)

if __name__ == "__main__":
    unittest.main()
