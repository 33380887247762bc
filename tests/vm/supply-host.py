#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The host's side of the VM's supply scenario (tests/vm/run.sh supply_boot).

  supply-host.py wait-ask STATE.json OUT   waits (up to 900 s) for the first Node of the API
                                           stand-in's store to carry the wants annotation,
                                           then writes "EPOCH ANNOTATION" to OUT
  supply-host.py check STATE.json DIR R installed|refused
                                           what the node and the pass left: VMTEST lines
                                           for each check, a VMTIME line of the host's times;
                                           refused: the node's install ended refused by the
                                           kernel (no GPU), so its ask stays and no
                                           DriverPackageArrived comes
"""
import json
import os
import sys
import time

WANTS = "nvidia.com/gpu.driver-installer.wants"
IMAGE = "nvidia.com/gpu.driver-installer.node-image"


def first_node(state):
    try:
        with open(state) as f:
            return json.load(f)["nodes"][0]
    except (OSError, ValueError, KeyError, IndexError):
        return {}


def wait_ask(state, out):
    end = time.monotonic() + 900
    while time.monotonic() < end:
        w = first_node(state).get("metadata", {}).get("annotations", {}).get(WANTS)
        if w:
            with open(out, "w") as f:
                f.write("%.3f %s\n" % (time.time(), w))
            return 0
        time.sleep(0.2)  # the stand-in rewrites its store on each change: polled, not timed
    print("supply-host: no node asked within 900 s", file=sys.stderr)
    return 1


def check(state, d, release, outcome):
    with open(state) as f:
        db = json.load(f)
    n = db["nodes"][0]
    ann = n["metadata"].get("annotations", {})
    reasons = [e["reason"] for e in db["events"]]

    def read(name):
        try:
            with open(os.path.join(d, name)) as f:
                return f.read().strip()
        except OSError:
            return ""
    asked = read("asked").split(" ", 1)
    report = json.loads(read("report.json") or "{}")
    image = json.loads(ann.get(IMAGE, "{}"))
    installed = outcome == "installed"
    checks = [
        ("host-asked", len(asked) == 2 and json.loads(asked[1]).get("kernel") == release),
        ("host-pass-ok", read("pass.rc") == "0"),
        ("host-built", report.get("counts", {}).get("built") == 1),
        ("host-ask-served", [a.get("answered") for a in report.get("asks", [])] == [True]),
        ("host-node-image", image.get("kernel") == release),
        # Installed: the ask withdrawn and the arrival told. Refused by the kernel: the node
        # still has no driver, so its ask stays, and no arrival is told.
        ("host-ask-" + ("withdrawn" if installed else "kept"), (WANTS in ann) != installed),
        ("host-events", reasons[:1] == ["DriverPackageWanted"] and
         ("DriverPackageArrived" in reasons) == installed),
    ]
    for name, ok in checks:
        print("VMTEST ok %s" % name if ok else "VMTEST FAIL %s: annotations %s, events %s, "
              "pass exit %s" % (name, json.dumps(ann), reasons, read("pass.rc") or "none"))
    if len(asked) == 2 and read("published"):
        print("VMTIME supply-host ask_to_published_s=%.1f published_epoch=%s" % (
            float(read("published")) - float(asked[0]), read("published")))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["wait-ask"] and len(sys.argv) == 4:
        sys.exit(wait_ask(sys.argv[2], sys.argv[3]))
    if sys.argv[1:2] == ["check"] and len(sys.argv) == 6 and sys.argv[5] in ("installed",
                                                                              "refused"):
        sys.exit(check(*sys.argv[2:]))
    sys.exit(__doc__)
