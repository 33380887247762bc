#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The real-GPU check, for a machine with an NVIDIA GPU and its driver already loaded:
#
#   scripts/gpu-check.sh [BINARY]
#
# Packs this machine's own driver with scripts/build-driver-package: the loaded modules
# (found with modinfo, or in NVIDIA_MODULES_DIR), re-signed with a throwaway key; the
# libraries of the loaded version; nvidia-smi and the other tools; GSP firmware. The
# package goes into a throwaway signed repository and is installed with --skip-modules
# into a scratch host root whose /proc, /sys and /dev are the machine's (bound read-only,
# in a private mount namespace), so that the NVML verification runs against the real
# driver and the CDI spec names the real /dev/nvidia*; then prints status --json, doctor
# and a summary. The machine's driver, /dev and ld cache are not changed. BINARY defaults
# to build/nvidia-driver-installer (built when missing).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$SRC/build/nvidia-driver-installer}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

fail() {
    echo "gpu-check: $*" >&2
    exit 1
}
step() { printf '\n== %s\n' "$*"; }

[ -r /proc/driver/nvidia/version ] || fail "no NVIDIA driver is loaded (/proc/driver/nvidia/version)"
V=$(sed -n 's/.*Kernel Module *\([0-9.]*\) .*/\1/p' /proc/driver/nvidia/version | sed -n 1p)
[ -n "$V" ] || V=$(sed -n 's/.*  \([0-9]\{3\}\.[0-9.]*\)  .*/\1/p' /proc/driver/nvidia/version | sed -n 1p)
[ -n "$V" ] || fail "cannot read the loaded driver's version"
[ -x "$BIN" ] || make -C "$SRC" >/dev/null
[ -x "$BIN" ] || fail "no installer binary at $BIN"
KERNEL=$(uname -r)

step "Loaded driver $V on kernel $KERNEL; packing it with build-driver-package"
nvml=$(ldconfig -p | sed -n 's/.*libnvidia-ml.so.1 .*=> //p' | sed -n 1p)
[ -n "$nvml" ] || nvml=$(find / -xdev -name "libnvidia-ml.so.$V" -print -quit 2>/dev/null)
[ -n "$nvml" ] || fail "libnvidia-ml.so.1 not found"
libdir=$(dirname "$(readlink -f "$nvml")")
# The source, in the layout build-driver-package takes (that of a .run extract).
mkdir -p "$W/src/firmware" "$W/modules"
cp "$libdir"/lib*.so."$V" "$W/src/"
for t in nvidia-smi nvidia-debugdump nvidia-persistenced nvidia-cuda-mps-control nvidia-cuda-mps-server; do
    p=$(command -v "$t" || true)
    [ -n "$p" ] && cp "$(readlink -f "$p")" "$W/src/$t"
done
[ -d "/lib/firmware/nvidia/$V" ] && cp "/lib/firmware/nvidia/$V"/*.bin "$W/src/firmware/" 2>/dev/null
# The loaded modules' files: modinfo finds those under /lib/modules; NVIDIA_MODULES_DIR
# names a directory where an installer keeps them elsewhere.
for m in nvidia nvidia-uvm nvidia-modeset nvidia-drm nvidia-peermem; do
    f=""
    if [ -n "${NVIDIA_MODULES_DIR:-}" ]; then
        f=$(ls "$NVIDIA_MODULES_DIR/$m".ko* 2>/dev/null | sed -n 1p)
    else
        f=$(modinfo -n "$m" 2>/dev/null || true)
    fi
    [ -n "$f" ] && [ -f "$f" ] && cp "$f" "$W/modules/$m.ko${f##*.ko}"
done
ls "$W/modules"/nvidia.ko* >/dev/null 2>&1 ||
    fail "cannot find the loaded driver's nvidia.ko (modinfo -n nvidia); set NVIDIA_MODULES_DIR"
echo "   $(ls "$W/src" | grep -c '\.so\.') libraries from $libdir, modules: $(ls "$W/modules" | tr '\n' ' ')"
"$SRC/tests/tools/make-module-key" "gpu-check throwaway key" "$W/mod" >/dev/null
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$W/key.pem" 2>/dev/null
openssl pkey -in "$W/key.pem" -pubout -out "$W/pub.pem"
"$SRC/scripts/build-driver-package" --kernel "$KERNEL" --arch "$(uname -m)" --source "$W/src" \
    --prebuilt-modules "$W/modules" --sign-key "$W/mod.pem" --sign-cert "$W/mod.crt" \
    --repo "$W/repo" --repo-key "$W/key.pem" --tag default --installer "$(realpath "$BIN")" \
    --work "$W/work" || fail "build-driver-package failed"

step "Install into a scratch root (the machine's /proc, /sys, /dev bound read-only)"
mkdir -p "$W/root/etc" "$W/root/proc" "$W/root/sys" "$W/root/dev"
cp /etc/os-release "$W/root/etc/os-release" 2>/dev/null || cp /usr/lib/os-release "$W/root/etc/"
echo "include /etc/ld.so.conf.d/*.conf" >"$W/root/etc/ld.so.conf"
unshare -m bash -c '
    set -e
    W=$1 BIN=$2
    for d in proc sys dev; do
        mount --rbind "/$d" "$W/root/$d"
        mount -o remount,bind,ro "$W/root/$d" 2>/dev/null || true
    done
    args=(--root "$W/root" --repo "file://$W/repo" --repo-key "$W/pub.pem")
    set +e
    "$BIN" "${args[@]}" install --skip-modules 2>&1 | tee "$W/install.log"
    echo "install exit ${PIPESTATUS[0]}" >"$W/install.rc"
    "$BIN" --root "$W/root" status --json >"$W/status.json" 2>"$W/status.err"
    "$BIN" "${args[@]}" doctor >"$W/doctor.txt" 2>&1
    echo "doctor exit $?" >>"$W/doctor.txt"
' _ "$W" "$BIN"

step "status --json"
cat "$W/status.json"
step "doctor"
cat "$W/doctor.txt"
step "CDI spec"
cat "$W/root/var/run/cdi/nvidia-driver-installer.json" 2>/dev/null || echo "(none written)"
step "Summary"
cat "$W/install.rc"
python3 - "$W/status.json" "$W/root/var/run/cdi/nvidia-driver-installer.json" <<'PY' || true
import json, os, sys
s = json.load(open(sys.argv[1]))
n = s.get("nvml") or {}
print("driver installed: %s, loaded: %s" % (s.get("driver_version"), s.get("loaded_version")))
if n.get("cuda_version") is not None:  # NVML answered (status --json: docs/json.md)
    print("NVML: driver %s, CUDA %d.%d, %d GPU(s)" % (n["driver_version"], n["cuda_version"] // 1000,
          n["cuda_version"] % 1000 // 10, len(n["gpus"])))
    for g in n["gpus"]:
        print("  %s  %s  %d MiB" % (g["name"], g["uuid"], g["memory_mib"]))
else:
    print("NVML: %s" % (n.get("error") or "not asked"))
if os.path.exists(sys.argv[2]):
    c = json.load(open(sys.argv[2]))
    print("CDI devices: %s" % ", ".join(d["name"] for d in c["devices"]))
PY
tail -1 "$W/doctor.txt"
