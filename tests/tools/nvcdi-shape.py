#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A CDI spec in the shape NVIDIA's tools generate for a driver root.

NVIDIA's device plugin, DRA driver and `nvidia-ctk cdi generate --driver-root` build their
specs with the container toolkit's nvcdi library (nvml mode; the DRA driver's
compute-domain kubelet plugin its standard device in "management" mode, whose common edits
are the same driver discoverer: k8s-dra-driver-gpu at 2240711,
cmd/compute-domain-kubelet-plugin/cdi.go:102, vendored toolkit v1.19.0
vendor/github.com/NVIDIA/nvidia-container-toolkit/pkg/nvcdi/management.go:63-88 calling
driver-nvml.go:38-74). Go cannot build them here, so this restates the rules that decide
what a spec mounts and runs, from NVIDIA/nvidia-container-toolkit at
d34b3046758cb1a5db606b2a39519c731bbf9f56 (v1.20.0-27, the version the device plugin
v0.20.0 vendors); for the executables the DRA driver's vendored v1.19.0 copy was read rule
by rule too and says the same:
- executables (pkg/lookup/executable.go:32-50, path.go:36-63, file.go:67-117; the list in
  pkg/nvcdi/driver-nvml.go:271-287 at d34b304, :246-261 in the DRA driver's vendored
  copy): the first of ROOT/DIR/NAME that is no directory and has an execute bit (os.Stat:
  links followed for the check, NOT resolved in the path mounted); mounted alone at that
  path minus ROOT. DIR runs over the directories of the plugin process's own PATH first,
  in its order, then those of usr/local/sbin, usr/local/bin, usr/sbin, usr/bin, sbin, bin
  that PATH lacks (path.go:36-51). This restates that default list alone: the DRA
  driver's image, gcr.io/distroless/cc:debug, has /busybox in its PATH too (its
  deployments/container/Dockerfile:106-110; where in PATH was not read here), so
  ROOT/busybox/NAME is looked at as well, which no install dir of ours has: the file
  found is the same;
- libraries (pkg/lookup/library.go:27-58, internal/lookup/root/root.go:146-176,
  driver-nvml.go:292-315): libcuda.so.*.* first found under ROOT/, ROOT/usr/lib64,
  ROOT/usr/lib/x86_64-linux-gnu[/nvidia/current], ROOT/lib64,
  ROOT/lib/x86_64-linux-gnu[/nvidia/current] gives the version and, links resolved
  (filepath.EvalSymlinks), the library directory; every *.so.VERSION there is mounted at
  its resolved path minus ROOT;
- GSP firmware (driver-nvml.go:218-269): ROOT/lib/firmware/nvidia/VERSION/gsp*.bin, links
  not resolved, at that path minus ROOT;
- Vulkan ICD (internal/discover/graphics.go:82-139): ROOT/etc/vulkan/icd.d/nvidia_icd.json,
  else ROOT/vulkan/icd.d/nvidia_icd.json (GKE's layout), at /etc/vulkan/icd.d/;
- hooks (internal/discover/hooks.go:208-287, symlinks.go:60-207, driver-nvml.go:93-129,
  common-nvml.go:40-47), all createContainer, path HOOK, args[0] its base name, env
  NVIDIA_CTK_DEBUG=false, in this order: create-symlinks (libcuda.so.1::DIR/libcuda.so,
  and each soname link that exists beside its library on the host), enable-cuda-compat
  --host-driver-version=VERSION, update-ldcache --folder DIR, disable-device-node-
  modification, update-application-profile;
- device nodes: /dev/nvidiactl, nvidia-uvm, nvidia-uvm-tools, nvidia-modeset where they
  exist, and one device per GPU (by index) with its /dev/nvidiaN, plus "all"; mounts with
  ro, nosuid, nodev, rbind, rprivate (internal/discover/mounts.go:56-113).

--toolkit VERSION writes the hooks of an older toolkit, the one a device plugin before
v0.18 vendors (its go.mod: v0.16.x 1.16, v0.17.0 1.17.0, v0.17.1 1.17.5-rc.1, v0.17.2
1.17.6, v0.17.3 and v0.17.4 1.17.8); the mounts are the same (pkg/nvcdi/driver-nvml.go,
getVersionLibs: every *.so.VERSION beside libcuda.so.VERSION, links resolved), the hooks
are fewer, and none of them makes a soname link: those specs rely on the ldconfig that
update-ldcache runs making them (ldconfig without -X: runLdconfig in
cmd/nvidia-cdi-hook/update-ldcache/update-ldcache.go up to 1.17.x):
- 1.16: update-ldcache --folder DIR only (pkg/nvcdi/driver-nvml.go,
  NewDriverLibraryDiscoverer: the libraries and NewLDCacheUpdateHook), no env;
- 1.17.0: create-symlinks only for libcuda.so (internal/discover/symlinks.go,
  additionalSymlinks.getLinksForMount; its libGLX_indirect.so.0 and
  libnvidia-opticalflow.so cases need graphics and optical-flow libraries, which a compute
  package lacks), then update-ldcache, no env;
- 1.17.5: enable-cuda-compat between them (internal/discover/compat_libs.go);
- 1.17.8: each hook's env NVIDIA_CTK_DEBUG=false (internal/discover/hooks.go).
None of them has disable-device-node-modification or update-application-profile.

Usage: nvcdi-shape.py --fs FS --driver-root ROOT --hook PATH --gpus N --out FILE
       [--toolkit 1.16|1.17.0|1.17.5|1.17.8|1.20]
FS is where host paths are read (the fake root, or /): ROOT and the paths written are host
paths, as the plugin writes them after transformroot. Prints the paths it mounts on stderr.
"""
import argparse
import glob
import json
import os
import sys

BIN_DIRS = ["usr/local/sbin", "usr/local/bin", "usr/sbin", "usr/bin", "sbin", "bin"]
BINARIES = ["nvidia-smi", "nvidia-debugdump", "nvidia-persistenced", "nvidia-cuda-mps-control",
            "nvidia-cuda-mps-server", "nvidia-imex", "nvidia-imex-ctl"]
LIB_DIRS = ["", "usr/lib64", "usr/lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu/nvidia/current",
            "lib64", "lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu/nvidia/current"]
OPTIONS = ["ro", "nosuid", "nodev", "rbind", "rprivate"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fs", required=True)
    ap.add_argument("--driver-root", required=True)
    ap.add_argument("--hook", required=True)
    ap.add_argument("--gpus", type=int, required=True)
    ap.add_argument("--kind", default="k8s.device-plugin.nvidia.com/gpu")
    ap.add_argument("--out", required=True)
    ap.add_argument("--toolkit", choices=["1.16", "1.17.0", "1.17.5", "1.17.8", "1.20"],
                    default="1.20")
    a = ap.parse_args()
    fs = os.path.abspath(a.fs).rstrip("/")
    root = a.driver_root.rstrip("/")
    at = lambda p: fs + p  # a host path as this process reads it
    host = lambda p: p[len(fs):] if fs else p  # back to the host path
    mounts, links = [], []

    # The version and the library directory: libcuda.so.*.*, links resolved.
    found = None
    for d in LIB_DIRS:
        hits = sorted(glob.glob(at(os.path.join(root, d, "libcuda.so.*.*"))))
        if hits:
            found = hits[0]
            break
    if not found:
        sys.exit("nvcdi-shape: no libcuda.so.*.* under %s" % root)
    version = os.path.basename(found)[len("libcuda.so."):]
    real_dir = os.path.dirname(os.path.realpath(found))
    ctr_dir = host(real_dir)[len(root):]
    for lib in sorted(glob.glob(os.path.join(real_dir, "*.so." + version))):
        mounts.append((host(lib), host(lib)[len(root):]))
    # Soname links that exist beside their library on the host (symlinks.go:137-207), from 1.18.
    for entry in sorted(os.listdir(real_dir)) if a.toolkit == "1.20" else []:
        p = os.path.join(real_dir, entry)
        if os.path.islink(p) and ".so." in entry and not entry.endswith("." + version):
            target = os.readlink(p)
            if target.endswith(".so." + version):
                links.append("%s::%s/%s" % (target, ctr_dir, entry))
    if a.toolkit != "1.16":
        links.insert(0, "libcuda.so.1::%s/libcuda.so" % ctr_dir)

    for name in BINARIES:
        for d in BIN_DIRS:
            p = os.path.join(root, d, name)
            if os.path.exists(at(p)) and not os.path.isdir(at(p)) and os.access(at(p), os.X_OK):
                mounts.append((p, p[len(root):]))
                break
    for fw in sorted(glob.glob(at(os.path.join(root, "lib/firmware/nvidia", version, "gsp*.bin")))):
        mounts.append((host(fw), host(fw)[len(root):]))
    for rel in ("etc/vulkan/icd.d/nvidia_icd.json", "vulkan/icd.d/nvidia_icd.json"):
        if os.path.isfile(at(os.path.join(root, rel))):
            mounts.append((os.path.join(root, rel), "/etc/vulkan/icd.d/nvidia_icd.json"))
            break

    base = os.path.basename(a.hook)

    older = a.toolkit != "1.20"

    def hook(name, *args):
        lead = ["nvidia-ctk", "hook"] if base == "nvidia-ctk" else [base]
        h = {"hookName": "createContainer", "path": a.hook, "args": lead + [name] + list(args)}
        if a.toolkit in ("1.17.8", "1.20"):
            h["env"] = ["NVIDIA_CTK_DEBUG=false"]
        return h

    hooks = []
    if links:
        hooks.append(hook("create-symlinks", *[x for l in links for x in ("--link", l)]))
    if a.toolkit not in ("1.16", "1.17.0"):
        hooks.append(hook("enable-cuda-compat", "--host-driver-version=" + version))
    hooks.append(hook("update-ldcache", "--folder", ctr_dir))
    if not older:
        hooks += [hook("disable-device-node-modification"), hook("update-application-profile")]
    nodes = [{"path": "/dev/" + n, "hostPath": "/dev/" + n}
             for n in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")]
    devices = [{"name": str(i), "containerEdits": {"deviceNodes": [
        {"path": "/dev/nvidia%d" % i, "hostPath": "/dev/nvidia%d" % i}]}} for i in range(a.gpus)]
    devices.append({"name": "all", "containerEdits": {"deviceNodes": [
        {"path": "/dev/nvidia%d" % i, "hostPath": "/dev/nvidia%d" % i} for i in range(a.gpus)]}})
    spec = {"cdiVersion": "0.5.0", "kind": a.kind, "devices": devices,
            "containerEdits": {"env": ["NVIDIA_VISIBLE_DEVICES=void"], "deviceNodes": nodes,
                               "hooks": hooks,
                               "mounts": [{"hostPath": h, "containerPath": c, "options": OPTIONS}
                                          for h, c in mounts]}}
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(spec, f, indent=1)
    os.rename(tmp, a.out)
    for h, c in mounts:
        print("mount %s -> %s" % (h, c), file=sys.stderr)


main()
