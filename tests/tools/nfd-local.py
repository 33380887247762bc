#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The node labels node-feature-discovery makes of a features.d directory.

NFD cannot run here, so this restates its rules, from kubernetes-sigs/node-feature-discovery
at 76e6cc8cc0d54b8bce037098b72611ffdf66ef5a:
- source/local/local.go, getFeaturesFromFiles(): os.ReadDir (entries sorted by file name,
  byte order), names starting with '.' skipped, a file that is not regular gives no lines,
  one over MaxFeatureFileSize (65536 bytes) is skipped; the files are merged in that order
  and a later file's value overrides an earlier one's for the same key.
- parseFeatureFile(): lines split on '\\n', blanks trimmed, empty lines skipped, lines
  starting with '#' are comments or "# +" directives (not modelled: this script refuses
  them), "key=value" split at the first '=', a bare "key" means "true".
- pkg/nfd-master/nfd-master.go, filterFeatureLabel(), and pkg/apis/nfd/validate/validate.go,
  Label(): a label whose key is no qualified name with a namespace, whose namespace is
  kubernetes.io or *.kubernetes.io (other than NFD's own), or whose value is no valid
  Kubernetes label value is ignored.

Usage: nfd-local.py DIR. Prints the node's labels "key=value", sorted, on stdout, and each
ignored label as "ignored: key=value (why)" on stderr.
"""
import os
import re
import sys

MAX_FEATURE_FILE_SIZE = 65536
# k8s.io/apimachinery/pkg/util/validation: IsQualifiedName and IsValidLabelValue.
NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
DNS1123_SUB = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def merged(directory):
    labels = {}
    for name in sorted(os.listdir(directory), key=os.fsencode):
        if name.startswith("."):
            continue
        path = os.path.join(directory, name)
        try:
            st = os.stat(path)
        except OSError:
            continue
        if not os.path.isfile(path) or st.st_size > MAX_FEATURE_FILE_SIZE:
            continue
        with open(path, "rb") as f:
            lines = f.read().split(b"\n")
        for raw in lines:
            line = raw.decode().strip()
            if not line:
                continue
            if line.startswith("#"):
                if line.startswith("# +"):
                    sys.exit(f"nfd-local.py: directive not modelled: {line!r} in {name}")
                continue
            key, sep, value = line.partition("=")
            labels[key] = value if sep else "true"
    return labels


def why_invalid(key, value):
    prefix, slash, name = key.rpartition("/")
    if not slash:
        return "no namespace"
    if len(name) > 63 or not NAME.match(name):
        return "invalid name"
    if len(prefix) > 253 or not DNS1123_SUB.match(prefix):
        return "invalid namespace"
    own = prefix in ("feature.node.kubernetes.io", "profile.node.kubernetes.io") or \
        prefix.endswith((".feature.node.kubernetes.io", ".profile.node.kubernetes.io"))
    if (prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io")) and not own:
        return "namespace not allowed"
    if len(value) > 63 or not VALUE.match(value):
        return "invalid value"
    return None


def main():
    for key, value in sorted(merged(sys.argv[1]).items()):
        why = why_invalid(key, value)
        if why:
            print(f"ignored: {key}={value} ({why})", file=sys.stderr)
        else:
            print(f"{key}={value}")


if __name__ == "__main__":
    main()
