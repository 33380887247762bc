#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A stand-in for the start of NVIDIA's DRA GPU kubelet plugin, as far as the driver's files
go: what it resolves under the driver root once, and keeps.

NVIDIA/k8s-dra-driver-gpu at 2240711, cmd/gpu-kubelet-plugin:
  nvlib.go:54-75   newDeviceLib: the driver library's path from the root, once, then NVML
                   made with nvml.WithLibraryPath(that path): every later dlopen of NVML
                   in the process names that file
  root.go:29-45    getDriverLibraryPath: libnvidia-ml.so.1 looked for in the root itself,
                   then /usr/lib64, /usr/lib/x86_64-linux-gnu, /usr/lib/aarch64-linux-gnu,
                   /lib64, /lib/x86_64-linux-gnu, /lib/aarch64-linux-gnu under it
  root.go:84-110   findFile: the first of those whose link resolves (resolveLink:
                   filepath.EvalSymlinks, every link of the path, `readlink -f`), and the
                   resolved path is what is kept: the version's own file, not the link

So after a switch of the driver under the root it still names the old version's file. This
stand-in does the same at its start, writes what it kept to REPORT (JSON, written whole by
rename: {"pid": ..., "driver_root": ..., "libnvidia_ml": the kept path}), and stays until
SIGTERM, as the plugin does: only a new start, which the test's stand-in of the DaemonSet
makes after the agent's eviction, names the new version.

  dra-plugin-standin.py DRIVER_ROOT REPORT

Exit 1 with one line when libnvidia-ml.so.1 is in none of the folders (the plugin's "failed
to locate driver libraries").
"""
import json
import os
import signal
import sys

LIBRARY = "libnvidia-ml.so.1"
# root.go:30-37, in its order; "/" (the root itself) first (findFile, root.go:89).
SEARCH = ["/", "/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
          "/lib64", "/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu"]


def eval_symlinks(path):
    """filepath.EvalSymlinks: every link resolved; an error when a part does not exist."""
    return os.path.realpath(path, strict=True)


def find_file(root, name, search):
    """findFile: filepath.Join(root, d, name) for each folder; the first that resolves."""
    for d in search:
        candidate = os.path.normpath(os.path.join(root, d.lstrip("/"), name))
        try:
            return eval_symlinks(candidate)
        except OSError:
            continue
    return None


def report(path, what):
    tmp = "%s.tmp-%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(what, f)
        f.write("\n")
    os.rename(tmp, path)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: dra-plugin-standin.py DRIVER_ROOT REPORT")
    root, out = sys.argv[1:]
    kept = find_file(root, LIBRARY, SEARCH)
    if kept is None:
        sys.exit("failed to locate driver libraries: error locating %r under %s" % (LIBRARY, root))
    what = {"pid": os.getpid(), "driver_root": root, "libnvidia_ml": kept}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    report(out, what)
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
