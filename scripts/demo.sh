#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The built-in demo (`make demo`): a signed repository with stand-in drivers, served on
# 127.0.0.1, installed into a scratch host root, stage by stage. Everything it makes
# stays in build/demo for inspection.
set -euo pipefail

BIN=$(realpath "${1:-build/nvidia-driver-installer}")
SRC=$(cd "$(dirname "$0")/.." && pwd)
D="$SRC/build/demo"
KERNEL=6.1.0-57-amd64
export PATH="/usr/bin:/bin:$PATH"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() {
    printf '$ %s\n' "$*"
    "$@"
}

demo_t0=$(date +%s)
rm -rf "$D"
mkdir -p "$D/keys" "$D/srv" "$D/root/etc"

# NVIDIA's real 535.261.03, when `make check-real` has built it for this kernel.
# Its proprietary package for this kernel, as the repository's index names it.
REAL_PKG=$(python3 -c 'import json, os, sys
r = os.path.dirname(sys.argv[1])
for p in json.load(open(sys.argv[1]))["drivers"][0]["packages"]:
    if p["kernel"] == sys.argv[2] and p.get("module_type", "proprietary") == "proprietary" and "os" not in p:
        print(os.path.join(r, p["path"]))
        break' "$SRC/build/real/repo/index.json" "$KERNEL" 2>/dev/null || true)
if [ -s "$REAL_PKG" ]; then
    step "1. A signed repository: NVIDIA's real 535.261.03 (default), a stand-in 550.90.07"
    echo "   535.261.03 is the package make check-real built from Debian's non-free packages"
else
    step "1. A signed repository with two stand-in drivers (535.261.03 default, 550.90.07)"
    echo "   (stand-ins: run 'make check-real' once to build NVIDIA's real 535.261.03 and"
    echo "   the demo installs that instead)"
fi
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$D/keys/repo-key.pem" 2>/dev/null
openssl pkey -in "$D/keys/repo-key.pem" -pubout -out "$D/keys/repo-pub.pem"
for spec in 535.261.03:default 550.90.07; do
    v=${spec%%:*}
    if [ "$v" = 535.261.03 ] && [ -s "$REAL_PKG" ]; then
        cp "$REAL_PKG" "$D/nvidia-$v.tar.zst"
    else
        "$SRC/scripts/make-standin-driver" "$v" "$D/drv-$v"
        "$SRC/scripts/make-repo" pack "$D/drv-$v" "$D/nvidia-$v.tar.zst"
    fi
    tag=()
    [ "$spec" != "$v" ] && tag=(--tag "${spec#*:}")
    "$SRC/scripts/make-repo" add --repo "$D/srv/repo" --key "$D/keys/repo-key.pem" \
        --version "$v" --kernel "$KERNEL" --pci-ids "10de:2330 10de:20b0" "${tag[@]}" \
        "$D/nvidia-$v.tar.zst"
done
(cd "$D/srv/repo" && find . -type f | sort | sed 's/^/   /')

step "2. Serving it on 127.0.0.1 (Range support; stops by itself)"
python3 "$SRC/tests/tools/httpd.py" --dir "$D/srv" --port-file "$D/port" --log "$D/http.log" \
    --lifetime 120 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$D/port" ] && break; sleep 0.05; done
REPO="http://127.0.0.1:$(cat "$D/port")/repo"
echo "   $REPO"

step "3. A fake GPU node: COS host root with one H100 (10de:2330) on the PCI bus"
printf 'ID=cos\nVERSION_ID=117\nBUILD_ID=17800.66.78\nPRETTY_NAME="Container-Optimized OS from Google"\n' \
    >"$D/root/etc/os-release"
dev="$D/root/sys/devices/pci0000:00/0000:00:04.0"
mkdir -p "$dev" "$D/root/sys/bus/pci/devices"
printf '0x10de\n' >"$dev/vendor"
printf '0x2330\n' >"$dev/device"
printf '0x030200\n' >"$dev/class"
ln -s ../../../devices/pci0000:00/0000:00:04.0 "$D/root/sys/bus/pci/devices/0000:00:04.0"
echo "   $D/root"

export ROOT_MOUNT_DIR="$D/root" NVIDIA_DRIVER_REPO="$REPO" \
    NVIDIA_DRIVER_REPO_KEY="$D/keys/repo-pub.pem" NVIDIA_KERNEL_RELEASE="$KERNEL"

step "4. What this host could install"
show "$BIN" list-versions

step "5. The plan, without changing anything"
show "$BIN" install --skip-modules --dry-run

step "6. Install user space (this build host cannot load modules: step 10 does, in a VM)"
show "$BIN" install --skip-modules
echo
show ls -l "$D/root/home/kubernetes/bin/nvidia/"
show ls "$D/root/home/kubernetes/bin/nvidia/lib64/" "$D/root/home/kubernetes/bin/nvidia/bin/"
# No library path is given: bin/nvidia-smi is the installer's launcher, which runs the
# driver's own with the version's lib64 (docs/design.md, "The launcher in bin/"). NVIDIA's
# real nvidia-smi finds no driver here; it says so and exits 9.
show env -i "$D/root/home/kubernetes/bin/nvidia/bin/nvidia-smi" ||
    echo "   (exit $?: no NVIDIA driver is loaded on this build host)"
# status exits 8 here: a GPU is on the (fake) bus and NVML cannot answer without the
# kernel modules, which is what it is for.
show "$BIN" status || echo "   (exit $?: no NVIDIA driver is loaded on this build host, so NVML cannot answer)"

step "7. Re-run: already installed, no package bytes fetched"
: >"$D/http.log"
t0=$(date +%s%N)
"$BIN" install --skip-modules
echo "   wall time: $((($(date +%s%N) - t0) / 1000000)) ms; package requests: $(grep -c tar.zst "$D/http.log" || true)"

step "8. Upgrade to the newest driver: one atomic switch"
show "$BIN" install --skip-modules --driver-version latest

step "9. A package altered on the mirror is refused; the installed driver stays"
pkg=$(ls "$D"/srv/repo/packages/*/*/nvidia-535.261.03.tar.zst)
printf 'X' | dd of="$pkg" bs=1 seek=1000 conv=notrunc 2>/dev/null
set +e
"$BIN" install --skip-modules --driver-version 535.261.03
rc=$?
set -e
echo "   exit code $rc (5: verification failed)"
show "$BIN" status || echo "   (exit $?: as in step 6, NVML cannot answer without the modules)"

step "10. Into a real kernel: Debian's kernel under qemu, stand-in modules signed by a test key"
echo "   (the stand-ins are built against the installed headers; the first run takes a minute."
echo "   NVIDIA's real nvidia.ko finds no GPU in qemu and refuses to load: make check-real shows that)"
"$SRC/tests/vm/run.sh" "$BIN" demo

step "Done in $(($(date +%s) - demo_t0)) s: the scratch host root is $D/root; the VM's work files are in build/vm"
