#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Runs a command in a stand-in of one container of a DaemonSet's pod on a fake node
# (t_manifest_pending): a private mount namespace (unshare -m), a tmpfs as the container's /
# holding the image's files (the build host's /usr/lib, /usr/lib64 and /usr/bin, read-only:
# glibc and coreutils, as GKE's distroless plugin image and the installer's Debian image
# have them), and the container's volume mounts exactly as the manifest gives them
# (tests/k8s/check-manifest.mjs --pods): each hostPath bound from under the fake root at its
# mountPath, read-only where the mount says so. The runtime's part: /proc and /sys are the
# node kernel's (the fake kernel keeps them at ROOT/proc, ROOT/sys) unless the manifest
# mounts them, and a
# privileged container sees the node's device nodes (ROOT/dev) at /dev. The command runs
# chrooted there with the container's literal env and the image's PATH.
#   pod-container.py PODS DAEMONSET CONTAINER ROOT CTR [--file SRC=DEST]... [--env K=V]... -- CMD...
import json
import os
import shlex
import subprocess
import sys

IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def die(msg):
    """The stand-in's own failure: exit 97, never a status the command could give."""
    sys.stderr.write("pod-container: %s\n" % msg)
    sys.exit(97)


def main():
    pods, ds_name, c_name, root, ctr = sys.argv[1:6]
    rest = sys.argv[6:]
    files, extra_env = [], {}
    while rest and rest[0] != "--":
        opt, val = rest[0], rest[1]
        if opt == "--file":
            files.append(val.split("=", 1))
        elif opt == "--env":
            k, v = val.split("=", 1)
            extra_env[k] = v
        else:
            die("unknown option %s" % opt)
        rest = rest[2:]
    cmd = rest[1:]
    ds = [d for d in json.load(open(pods))["daemonsets"] if d["name"] == ds_name]
    if not ds:
        die("no DaemonSet %s" % ds_name)
    cs = [c for c in ds[0]["containers"] if c["name"] == c_name]
    if not cs:
        die("DaemonSet %s has no container %s" % (ds_name, c_name))
    c = cs[0]
    q = shlex.quote
    sh = ["c=%s" % q(ctr), "mkdir -p \"$c\"", "mount -t tmpfs ctr \"$c\""]
    # What the build host has of them (/usr/lib64: amd64's loader; not on every architecture).
    for d in (d for d in ("lib", "lib64", "bin") if os.path.isdir("/usr/" + d)):
        sh += ["mkdir -p \"$c/usr/%s\"" % d, "mount --bind -o ro /usr/%s \"$c/usr/%s\"" % (d, d),
               "mount -o remount,bind,ro \"$c/usr/%s\"" % d, "ln -s usr/%s \"$c/%s\"" % (d, d)]
    mounted = set()
    for m in c["mounts"]:
        if m["hostPath"] is None:
            die("%s: only hostPath volumes are stood in for (%s)" % (c_name, m["path"]))
        src = os.path.normpath(root + "/" + m["hostPath"])
        if not os.path.exists(src):
            if m["hostPathType"] != "DirectoryOrCreate":
                # The kubelet would not start the pod: a Directory that is not there.
                die("hostPath %s (%s) is not on the node" % (m["hostPath"], m["hostPathType"]))
            os.makedirs(src)
        sh += ["mkdir -p \"$c\"%s" % q(m["path"]),
               "mount --bind %s \"$c\"%s" % (q(src), q(m["path"]))]
        if m["readOnly"]:
            sh.append("mount -o remount,bind,ro \"$c\"%s" % q(m["path"]))
        mounted.add(m["path"])
    if "/proc" not in mounted:
        sh += ["mkdir -p \"$c/proc\"", "mount --bind %s \"$c/proc\"" % q(root + "/proc")]
    if "/sys" not in mounted:
        sh += ["mkdir -p \"$c/sys\"", "mount --bind %s \"$c/sys\"" % q(root + "/sys")]
    if "/dev" not in mounted and c["privileged"]:
        sh += ["mkdir -p \"$c/dev\"", "mount --bind %s \"$c/dev\"" % q(root + "/dev")]
    for src, dest in files:
        sh.append("cp %s \"$c\"%s" % (q(src), q(dest)))
    env = dict(c["env"], PATH=IMAGE_PATH, **extra_env)
    sh.append("exec env -i %s chroot \"$c\" %s" % (
        " ".join(q("%s=%s" % kv) for kv in env.items()), " ".join(q(a) for a in cmd)))
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-ec", "\n".join(sh)])
    sys.exit(r.returncode)


if __name__ == "__main__":
    main()
