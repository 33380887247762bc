#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The real-GPU check, for a machine with an NVIDIA GPU and its driver already loaded:
#
#   scripts/gpu-check.sh [BINARY]
#
# Packs this machine's own user-space driver (libraries of the loaded version,
# nvidia-smi, GSP firmware) into a throwaway signed repository, installs it with
# --skip-modules into a scratch host root whose /proc, /sys and /dev are the machine's
# (bound read-only, in a private mount namespace), so that the NVML verification runs
# against the real driver and the CDI spec names the real /dev/nvidia*; then prints
# status --json, doctor and a summary. The machine's driver, /dev and ld cache are
# not changed. BINARY defaults to build/nvidia-driver-installer (built when missing).
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
V=$(sed -n 's/.*Kernel Module *\([0-9.]*\) .*/\1/p' /proc/driver/nvidia/version | head -1)
[ -n "$V" ] || V=$(sed -n 's/.*  \([0-9]\{3\}\.[0-9.]*\)  .*/\1/p' /proc/driver/nvidia/version | head -1)
[ -n "$V" ] || fail "cannot read the loaded driver's version"
[ -x "$BIN" ] || make -C "$SRC" >/dev/null
[ -x "$BIN" ] || fail "no installer binary at $BIN"
KERNEL=$(uname -r)

step "Loaded driver $V on kernel $KERNEL; packing its user space"
nvml=$(ldconfig -p | sed -n 's/.*libnvidia-ml.so.1 .*=> //p' | head -1)
[ -n "$nvml" ] || nvml=$(find / -xdev -name "libnvidia-ml.so.$V" 2>/dev/null | head -1)
[ -n "$nvml" ] || fail "libnvidia-ml.so.1 not found"
libdir=$(dirname "$(readlink -f "$nvml")")
mkdir -p "$W/tree/lib64" "$W/tree/bin" "$W/tree/kernel" "$W/tree/firmware"
for lib in "$libdir"/lib*.so."$V"; do
    cp "$lib" "$W/tree/lib64/"
    soname=$(objdump -p "$lib" 2>/dev/null | sed -n 's/ *SONAME *//p')
    [ -n "$soname" ] && [ "$soname" != "$(basename "$lib")" ] &&
        ln -sf "$(basename "$lib")" "$W/tree/lib64/$soname"
done
smi=$(command -v nvidia-smi || true)
[ -n "$smi" ] && cp "$(readlink -f "$smi")" "$W/tree/bin/nvidia-smi"
[ -d "/lib/firmware/nvidia/$V" ] && mkdir -p "$W/tree/firmware/nvidia" &&
    cp -r "/lib/firmware/nvidia/$V" "$W/tree/firmware/nvidia/"
echo "   $(ls "$W/tree/lib64" | wc -l) library files from $libdir, nvidia-smi: ${smi:-none}"

openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$W/key.pem" 2>/dev/null
openssl pkey -in "$W/key.pem" -pubout -out "$W/pub.pem"
"$SRC/scripts/make-repo" pack "$W/tree" "$W/pkg.tar.zst"
"$SRC/scripts/make-repo" add --repo "$W/repo" --key "$W/key.pem" --version "$V" \
    --kernel "$KERNEL" --arch "$(uname -m)" --tag default "$W/pkg.tar.zst" >/dev/null

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
cat "$W/root/var/run/cdi/nvidia.json" 2>/dev/null || echo "(none written)"
step "Summary"
cat "$W/install.rc"
python3 - "$W/status.json" "$W/root/var/run/cdi/nvidia.json" <<'PY' || true
import json, os, sys
s = json.load(open(sys.argv[1]))
n = s.get("nvml") or {}
print("driver installed: %s, loaded: %s" % (s.get("driver_version"), s.get("loaded_version")))
if "gpus" in n:
    print("NVML: driver %s, CUDA %d.%d, %d GPU(s)" % (n["driver_version"], n["cuda_version"] // 1000,
          n["cuda_version"] % 1000 // 10, len(n["gpus"])))
    for g in n["gpus"]:
        print("  %s  %s  %d MiB" % (g["name"], g["uuid"], g["memory_mib"]))
else:
    print("NVML: %s" % n)
if os.path.exists(sys.argv[2]):
    c = json.load(open(sys.argv[2]))
    print("CDI devices: %s" % ", ".join(d["name"] for d in c["devices"]))
PY
tail -1 "$W/doctor.txt"
