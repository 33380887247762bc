#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What the GPU Operator's driver validator finds on a host, and the driver-ready file it writes.

The validator cannot run here; this restates its rules, from NVIDIA/gpu-operator at
a22dbf671f2e26f9a1e342f8eea28e196235e110:
- cmd/nvidia-validator/main.go, (*Driver).runValidation(): validateHostDriver() first:
  resolveHostNvidiaSMI("/host") tries hostNvidiaSMISearchPaths (/usr/bin, /usr/sbin, /bin,
  /sbin, /usr/lib/wsl/lib, /opt/bin + "/nvidia-smi") opened inside the host root (links
  followed within it) and takes the first regular, non-empty file with an execute bit.
  Found: a host driver, getDriverInfo(true, ...).
- Otherwise (the Operator's driver disabled, so isDriverManagedByOperator() is false)
  validateDriverContainer(): internal/driver/root.go, Root(DRIVER_INSTALL_DIR_CTR_PATH):
  GetDriverLibraryPath() looks for libnvidia-ml.so.1 in the root itself, then /usr/lib64,
  /usr/lib/x86_64-linux-gnu, /usr/lib/aarch64-linux-gnu, /lib64, /lib/x86_64-linux-gnu,
  /lib/aarch64-linux-gnu; GetNvidiaSMIPath() looks for nvidia-smi in the root, /usr/bin,
  /usr/sbin, /bin, /sbin (findFile: the first that filepath.EvalSymlinks resolves), and runs
  it at that resolved path (validateDriver(): exec.Command) with the library first on
  LD_PRELOAD (internal/utils/utils.go, PrependPathListEnvvar) and nothing on LD_LIBRARY_PATH
  but what the validator's own environment has; a non-zero exit fails validation. Then
  getDriverInfo(false, HOST_ROOT, DRIVER_INSTALL_DIR, ...) (driver.go): the dev
  root is the install dir when it has a dev/ directory (GetDevRoot), else the host root.
- createStatusFile(): IS_HOST_DRIVER, NVIDIA_DRIVER_ROOT, DRIVER_ROOT_CTR_PATH,
  NVIDIA_DEV_ROOT, DEV_ROOT_CTR_PATH, one "KEY=value" line each.
The Operator sets DRIVER_INSTALL_DIR and DRIVER_INSTALL_DIR_CTR_PATH of the validator to
hostPaths.driverInstallDir, mounted at that same path (controllers/object_controls.go,
transformForDriverInstallDir); HOST_ROOT is "/" (hostPaths.rootFS).

Usage: operator-validator.py HOSTROOT DRIVER_INSTALL_DIR. Prints the driver-ready file the
validator would write and exits 0, or says why validation fails and exits 1.
"""
import os
import stat
import subprocess
import sys

HOST_SMI = ["/usr/bin/nvidia-smi", "/usr/sbin/nvidia-smi", "/bin/nvidia-smi", "/sbin/nvidia-smi",
            "/usr/lib/wsl/lib/nvidia-smi", "/opt/bin/nvidia-smi"]
LIB_DIRS = ["/", "/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
            "/lib64", "/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu"]
SMI_DIRS = ["/", "/usr/bin", "/usr/sbin", "/bin", "/sbin"]


def in_root(root, path, depth=0):
    """PATH resolved inside ROOT, symlinks (absolute ones too) kept in it, like OpenInRoot."""
    if depth > 40:
        return None
    cur = root
    parts = [p for p in path.split("/") if p]
    for i, part in enumerate(parts):
        nxt = os.path.join(cur, part)
        if os.path.islink(nxt):
            target = os.readlink(nxt)
            rest = "/".join(parts[i + 1:])
            base = target if target.startswith("/") else \
                os.path.relpath(cur, root) + "/" + target
            return in_root(root, os.path.normpath("/" + base + "/" + rest), depth + 1)
        if part == "..":
            nxt = os.path.dirname(cur) if cur != root else root
        cur = nxt
    return cur if os.path.lexists(cur) else None


def find_file(root, name, dirs):
    # findFile joins the container path and resolves links in the container, where the
    # install dir is mounted at its host path: inside the host root for this restatement.
    for d in dirs:
        p = in_root(HOSTROOT, os.path.join(root, d.lstrip("/"), name))
        if p:
            return p
    return None


def main():
    global HOSTROOT
    HOSTROOT, install_dir = os.path.realpath(sys.argv[1]), sys.argv[2]
    for p in HOST_SMI:
        f = in_root(HOSTROOT, p)
        if f is None:
            continue
        st = os.stat(f)
        if stat.S_ISREG(st.st_mode) and st.st_size > 0 and st.st_mode & 0o111:
            print("IS_HOST_DRIVER=true\nNVIDIA_DRIVER_ROOT=/\nDRIVER_ROOT_CTR_PATH=/host\n"
                  "NVIDIA_DEV_ROOT=/\nDEV_ROOT_CTR_PATH=/host")
            return 0
    lib = find_file(install_dir, "libnvidia-ml.so.1", LIB_DIRS)
    if lib is None:
        print(f"validator: no libnvidia-ml.so.1 under {install_dir}", file=sys.stderr)
        return 1
    smi = find_file(install_dir, "nvidia-smi", SMI_DIRS)
    if smi is None or not os.access(smi, os.X_OK):
        print(f"validator: no nvidia-smi to run under {install_dir}", file=sys.stderr)
        return 1
    # The validator's container sets no LD_LIBRARY_PATH: neither does this run.
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    env["LD_PRELOAD"] = ":".join(
        [lib] + [p for p in os.environ.get("LD_PRELOAD", "").split(":") if p])
    run = subprocess.run([smi], env=env, stdout=sys.stderr, stderr=sys.stderr, check=False)
    if run.returncode != 0:
        print(f"validator: {smi} failed (exit {run.returncode})", file=sys.stderr)
        return 1
    dev = in_root(HOSTROOT, os.path.join(install_dir, "dev"))
    own_dev = dev is not None and os.path.isdir(dev)
    print(f"IS_HOST_DRIVER=false\nNVIDIA_DRIVER_ROOT={install_dir}\n"
          f"DRIVER_ROOT_CTR_PATH=/driver-root\n"
          f"NVIDIA_DEV_ROOT={install_dir if own_dev else '/'}\n"
          f"DEV_ROOT_CTR_PATH={'/driver-root' if own_dev else '/host'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
