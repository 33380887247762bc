#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# GPU partitions on a real MIG-capable GPU (A100, H100, H200, B200, GB200): what only a real
# GPU proves of `--mig-layout` (docs/testing.md, "MIG on a real GPU"). It REPARTITIONS the
# node's GPUs: run it only where that is allowed (a node of your own, drained), never on a
# shared machine whose MIG layout others rely on; it refuses unless
# NDI_MIG_MAY_REPARTITION=1. The node runs this installer's driver already (an install
# from your repository: the same --repo, --repo-key and version settings in the
# environment, NVIDIA_DRIVER_REPO and friends, as the DaemonSet gives them).
#
#   NDI_MIG_MAY_REPARTITION=1 tests/real/mig-gpu.sh /path/to/nvidia-driver-installer
#
# Steps, each checked against NVIDIA's own view (nvidia-smi from the install dir):
#   1. the smallest profile NVML lists (nvidia-smi mig -lgip) fills every GPU: nvidia-smi -L
#      lists that many MIG devices, the CDI spec names each GPU:INDEX and MIG UUID that
#      nvidia-smi -L shows, /dev/nvidia-caps has their nodes; a reset needed (exit 10) is
#      reported as such and ends the script (reboot, run again);
#   2. a re-run changes nothing (the GPU-instance ids nvidia-smi mig -lgi shows stay);
#   3. a process holding /dev/nvidia0 refuses another layout (exit 7), nothing changed;
#   4. all-disabled: no MIG device left, MIG mode off; the mode the GPUs had before the
#      script is put back last (all-enabled when it was on).
set -euo pipefail
. "$(dirname "$0")/../tools/pipes.sh"
BIN=${1:?usage: mig-gpu.sh NVIDIA-DRIVER-INSTALLER}
[ "${NDI_MIG_MAY_REPARTITION:-}" = 1 ] || {
    echo "mig-gpu: this repartitions the node's GPUs; set NDI_MIG_MAY_REPARTITION=1 where that is allowed" >&2
    exit 2
}
INST=${NVIDIA_INSTALL_DIR_HOST:-/home/kubernetes/bin/nvidia}
SMI=$INST/bin/nvidia-smi
SPEC=${NVIDIA_CDI_DIR:-/var/run/cdi}/nvidia-driver-installer.json
fail() {
    echo "mig-gpu: FAIL: $*" >&2
    exit 1
}
step() { echo "mig-gpu: $*"; }
install() {
    local rc=0
    "$BIN" install "$@" >/tmp/mig-gpu.out 2>/tmp/mig-gpu.err || rc=$?
    echo "$rc"
}

was_on=$("$SMI" --query-gpu=mig.mode.current --format=csv,noheader | grep -c Enabled || true)
profile=$("$SMI" mig -lgip 2>/dev/null | sed -n 's/.*MIG \([0-9]g\.[0-9]*gb\) .*/\1/p' | sed -n 1p)
if [ -z "$profile" ]; then
    # Profiles are listed in MIG mode only: the installer turns it on for all-enabled.
    rc=$(install --mig-layout all-enabled)
    [ "$rc" = 10 ] && { step "MIG mode waits for a GPU reset (exit 10): reboot, then run again"; exit 0; }
    [ "$rc" = 0 ] || fail "all-enabled: exit $rc: $(tail -3 /tmp/mig-gpu.err)"
    profile=$("$SMI" mig -lgip | sed -n 's/.*MIG \([0-9]g\.[0-9]*gb\) .*/\1/p' | sed -n 1p)
fi
[ -n "$profile" ] || fail "nvidia-smi mig -lgip lists no profile: not a MIG GPU"
step "1. all-$profile"
rc=$(install --mig-layout "all-$profile")
[ "$rc" = 10 ] && { step "MIG mode waits for a GPU reset (exit 10): reboot, then run again"; exit 0; }
[ "$rc" = 0 ] || fail "all-$profile: exit $rc: $(tail -3 /tmp/mig-gpu.err)"
grep -q "GPU layout applied\|GPU layout already in place" /tmp/mig-gpu.err || fail "no layout line: $(cat /tmp/mig-gpu.err)"
"$SMI" -L | tee /tmp/mig-gpu.L
migs=$(grep -c "^  MIG $profile" /tmp/mig-gpu.L || true)
[ "$migs" -gt 0 ] || fail "nvidia-smi -L shows no $profile device"
python3 - "$SPEC" /tmp/mig-gpu.L "$migs" <<'PY' || fail "the CDI spec disagrees with nvidia-smi -L"
import json, re, sys
spec = json.load(open(sys.argv[1]))
names = {d["name"]: d for d in spec["devices"]}
uuids = re.findall(r"UUID: (MIG-[0-9a-f-]+)", open(sys.argv[2]).read())
assert len(uuids) == int(sys.argv[3]), uuids
for u in uuids:
    nodes = [n["path"] for n in names[u]["containerEdits"]["deviceNodes"]]
    assert len(nodes) == 3 and all(__import__("os").path.exists(p) for p in nodes), (u, nodes)
assert sum(1 for n in names if re.fullmatch(r"\d+:\d+", n)) == len(uuids), sorted(names)
PY
"$SMI" mig -lgi >/tmp/mig-gpu.lgi

step "2. the same layout again"
rc=$(install --mig-layout "all-$profile")
{ [ "$rc" = 0 ] && grep -q "GPU layout already in place" /tmp/mig-gpu.err; } || fail "re-run: exit $rc: $(tail -3 /tmp/mig-gpu.err)"
"$SMI" mig -lgi | diff /tmp/mig-gpu.lgi - || fail "the instances changed on a re-run"

step "3. another layout while a process holds /dev/nvidia0"
bash -c 'exec 9</dev/nvidia0; exec sleep 120' &
holder=$!
sleep 1
rc=$(install --mig-layout all-disabled)
kill "$holder"
{ [ "$rc" = 7 ] && grep -q "open in pid $holder" /tmp/mig-gpu.err; } || fail "busy: exit $rc: $(tail -3 /tmp/mig-gpu.err)"
"$SMI" mig -lgi | diff /tmp/mig-gpu.lgi - || fail "the instances changed on a refused run"

step "4. all-disabled"
rc=$(install --mig-layout all-disabled)
[ "$rc" = 0 ] || [ "$rc" = 10 ] || fail "all-disabled: exit $rc: $(tail -3 /tmp/mig-gpu.err)"
! "$SMI" -L | grepq "^  MIG " || fail "MIG devices left"
if [ "$was_on" -gt 0 ]; then
    rc=$(install --mig-layout all-enabled)
    [ "$rc" = 0 ] || [ "$rc" = 10 ] || fail "putting MIG mode back: exit $rc"
fi
step "passed"
