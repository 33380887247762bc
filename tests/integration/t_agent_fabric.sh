# Fabric Manager on NVSwitch systems (HGX-like: two GPUs and two NVSwitches, PCI class
# 0x0680), run by the node agent. tests/standin/daemon.c built as nv-fabricmanager trains
# the stand-in fabric when it starts; the stand-in libcuda answers 802 until then.
#   1. A package without Fabric Manager on an NVSwitch node: install exits 8 naming it,
#      and the agent says not ready, reason fabric_manager, naming what is missing; one
#      whose Fabric Manager is of another version: not started, both versions named.
#   2. A package with it: install exits 0 without the marker or labels (CUDA waits for
#      the Fabric Manager the agent starts); the agent starts it with the installed
#      config, the fabric trains, the node is ready, marker and labels written by the agent.
#   3. Fabric Manager killed: readiness withdrawn while it is started again, then restored.
#   4. An upgrade's hold and the agent's SIGTERM stop Fabric Manager before the persistence
#      daemon; a node without NVSwitch starts no Fabric Manager from the same package.
#   5. NVLink 5 (HGX B200-like): no NVSwitch on the PCI bus, two ConnectX-7 management
#      functions (VPD SMDL=SW_MNG) among plain ones. Without NVLSM in the package, or with
#      ib_umad not loaded, install exits 8 and the agent says not ready, naming which one; with
#      both, NVLSM starts on the first port's GUID, Fabric Manager after it with -g GUID
#      (the stand-in trains nothing without NVLSM on that port), and the node is ready;
#      NVLSM killed withdraws readiness until it is back; SIGTERM stops Fabric Manager,
#      NVLSM, then the persistence daemon.
#   The installer makes the NVSwitch device nodes (and uninstall removes them).
FAKE_KERNEL=1
# mkhost DIR [--switches]: a host root with two GPUs, and two NVSwitches if asked.
mkhost() {
    rm -rf "$T/root"
    mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330 --gpu 10de:2330
    mkkernel "$T/root"
    if [ "${1:-}" = --switches ]; then
        add_pci "$T/root" 0000:00:0a.0 10de 22a3 0x068000
        add_pci "$T/root" 0000:00:0b.0 10de 22a3 0x068000
    fi
    : >"$T/root/dev/kmsg"
}
# nvlink_function ROOT IBDEV VPD GUID: an InfiniBand function of Mellanox's under ROOT's
# sysfs, its VPD carrying VPD, its port 1 GID's interface id GUID (16 hex digits).
nvlink_function() {
    local d=$1/sys/devices/pci0000:00/$2 c=$1/sys/class/infiniband/$2 g=$4
    mkdir -p "$d" "$c/ports/1/gids"
    echo 0x15b3 >"$d/vendor"
    printf '\x82\x10Board Id\x90\x20V3\x0b%s\x78\x00' "$3" >"$d/vpd"
    ln -s "../../../devices/pci0000:00/$2" "$c/device"
    echo "fe80:0000:0000:0000:${g:0:4}:${g:4:4}:${g:8:4}:${g:12:4}" >"$c/ports/1/gids/0"
}
# Two versions of a driver with both daemons and Fabric Manager's config.
for v in "$V_OLD" "$V_NEW"; do
    "$SRC/scripts/make-standin-driver" "$v" "$T/drv-$v" 4
    cc -O1 -o "$T/drv-$v/bin/nvidia-persistenced" "$SRC/tests/standin/daemon.c"
    cc -O1 -DSTANDIN_FABRIC -DSTANDIN_VERSION="\"$v\"" -o "$T/drv-$v/bin/nv-fabricmanager" "$SRC/tests/standin/daemon.c"
    mkdir -p "$T/drv-$v/share/nvidia/nvswitch"
    printf 'LOG_LEVEL=4\nDAEMONIZE=1\nTOPOLOGY_FILE_PATH=/usr/share/nvidia/nvswitch\nLOG_FILE_NAME=/var/log/fabricmanager.log\n' \
        >"$T/drv-$v/share/nvidia/nvswitch/fabricmanager.cfg"
    sign_modules "$T/drv-$v/kernel"
    "$SRC/scripts/make-repo" pack "$T/drv-$v" "$T/pkg-$v.tar.zst"
    "$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$v" \
        --kernel "$KERNEL" "$T/pkg-$v.tar.zst" >/dev/null
done
marker=$T/root/run/nvidia/validations/driver-ready
labels=$T/root/etc/kubernetes/node-feature-discovery/features.d/00-nvidia-driver
dlog=$T/daemons.log
: >"$dlog"
apid=
trap 'rc=$?; [ -z "$apid" ] || kill "$apid" 2>/dev/null || true; sleep 0.2; kill_leftovers
[ $rc = 0 ] || { tail -8 "$T/agent.log"; cat "$dlog"; }' EXIT
said() { grep -c -- "$1" "$T/agent.log" || true; }
said_at_least() { [ "$(said "$1")" -ge "$2" ]; }
starts() { grep -c "^start $1 " "$dlog" || true; }
starts_at_least() { [ "$(starts "$1")" -ge "$2" ]; }
# said_since N PATTERN: a line after the log's first N says PATTERN (grep's BRE).
said_since() { tail -n +$(($1 + 1)) "$T/agent.log" | grepq -- "$2"; }
port() { sed -n 's/.*agent: watching the node (.*port=\([0-9]*\) .*/\1/p' "$T/agent.log" | tail -1; }
readyz() { curl -s "http://127.0.0.1:$(port)/readyz"; }
readyz_is() { [ "$(readyz)" = "$1" ]; }

# 1. No Fabric Manager in the package (the shared fixtures' driver has none).
mkhost --switches
new_signed_repo "$T/repo-nofm" "$V_OLD:default"
expect_rc 8 install --repo "file://$T/repo-nofm" $(kernel_args)
expect_err "this node has 2 NVSwitch(es) and its NVLink fabric is not trained"
start_agent
wait_for "the agent's judgement" 30 readyz_is "not ready (fabric_manager): this node has 2 NVSwitch(es) and the installed driver has no Fabric Manager (bin/nv-fabricmanager)"
stop_agent

# 1b. Fabric Manager of another version than the driver: not started, named.
"$SRC/scripts/make-standin-driver" "$V_OLD" "$T/drv-mixed" 4
cc -O1 -DSTANDIN_FABRIC -DSTANDIN_VERSION="\"$V_NEW\"" -o "$T/drv-mixed/bin/nv-fabricmanager" "$SRC/tests/standin/daemon.c"
sign_modules "$T/drv-mixed/kernel"
"$SRC/scripts/make-repo" pack "$T/drv-mixed" "$T/pkg-mixed.tar.zst"
"$SRC/scripts/make-repo" add --repo "$T/repo-mixed" --key "$FIX/keys/key.pem" --version "$V_OLD" \
    --kernel "$KERNEL" "$T/pkg-mixed.tar.zst" >/dev/null
mkhost --switches
expect_rc 0 install --repo "file://$T/repo-mixed" $(kernel_args) --driver-version "$V_OLD"
start_agent
wait_for "the version refused" 30 readyz_is "not ready (fabric_manager): Fabric Manager $V_NEW is not the driver's version $V_OLD: not started (NVIDIA requires the same version)"
sleep 1.5
assert_eq "$(starts nv-fabricmanager)" 0 "Fabric Manager of another version started"
assert_eq "$(said "ERROR agent: Fabric Manager $V_NEW is not the driver's version")" 1 "the refusal said once"
stop_agent

# 2. With Fabric Manager: the install leaves readiness to the agent, which starts it.
mkhost --switches
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_OLD"
expect_err "verify: CUDA waits for Fabric Manager (802: the NVLink fabric is not trained): the node agent starts it and makes the node ready (nvswitches=2)"
[ ! -e "$marker" ] && [ ! -e "$labels" ] || fail "ready before Fabric Manager ran"
[ -f "$T/root/var/run/cdi/nvidia-driver-installer.json" ] || fail "no CDI spec"
# The NVSwitch device nodes, as nvidia-modprobe -s makes them (the fake kernel's
# nvidia-nvswitch major is 508): the control node and one per switch, root's, 0666.
assert_eq "$(devnode nvidia-nvswitchctl) $(devnode nvidia-nvswitch0) $(devnode nvidia-nvswitch1) $(devnode nvidia-nvswitch2)" \
    "c 508:255 666 c 508:0 666 c 508:1 666 missing" "the NVSwitch nodes"
[ "$(stat -c %u:%g "$T/root/dev/nvidia-nvswitch1")" = 0:0 ] || fail "the NVSwitch node's owner"
[ "$(readlink "$T/root/dev/char/508:255")" = ../nvidia-nvswitchctl ] || fail "the /dev/char link"
start_agent
wait_for "ready once the fabric trained" 30 readyz_is ready
[ -f "$marker" ] && [ -f "$labels" ] || fail "the agent did not write the marker and labels"
idir_real=$(realpath "$(idir)")
# Started with the package's config, its paths pointed into the install dir, logging to
# stderr, from our own directory under the host's /run.
cfg=$(realpath "$T/root/run/nvidia-driver-installer")/fabricmanager.cfg
grep -qx "start nv-fabricmanager pid=[0-9]* args=-c $cfg" "$dlog" ||
    fail "Fabric Manager's arguments: $(cat "$dlog")"
assert_eq "$(grep -v '^#' "$cfg")" "LOG_LEVEL=4
DAEMONIZE=1
TOPOLOGY_FILE_PATH=$idir_real/share/nvidia/nvswitch
DATABASE_PATH=$idir_real/share/nvidia/nvswitch
LOG_FILE_NAME=" "the config Fabric Manager is given"
grep -qx "trained" "$T/root/run/nvidia-fabricmanager/standin-fabric" || fail "the fabric"

# 2b. Fabric Manager runs, but NVML says a GPU's fabric is not trained yet
#     (nvmlDeviceGetGpuFabricInfo): not ready until it is.
echo training >"$T/root/run/nvidia-fabricmanager/standin-fabric"
wait_for "the fabric's state" 30 readyz_is "not ready (fabric_manager): the NVLink fabric is not trained: GPU GPU-00000000-0000-0000-0000-000000000000 reports its fabric not started (Fabric Manager runs)"
[ ! -e "$marker" ] || fail "ready with the fabric untrained"
echo trained >"$T/root/run/nvidia-fabricmanager/standin-fabric"
wait_for "ready once trained" 30 readyz_is ready

# 3. Fabric Manager killed: not ready while it comes back.
fm=$(sed -n 's/^start nv-fabricmanager pid=\([0-9]*\) .*/\1/p' "$dlog" | tail -1)
lines=$(wc -l <"$T/agent.log")
kill -KILL "$fm"
rm -rf "$T/root/proc/$fm"
wait_for "readiness withdrawn" 30 test ! -e "$marker"
# The look after the kill says why: the end, or, when the 1 s backoff ran out before that
# look came (a slow look, under load), the restart under way.
said_since "$lines" "node not ready (reason=fabric_manager cause=Fabric Manager \(ended (signal 9)\|is starting\) on this node of 2 NVSwitch(es)" ||
    fail "no error line: $(tail -3 "$T/agent.log")"
wait_for "Fabric Manager again" 30 starts_at_least nv-fabricmanager 2
wait_for "ready again" 30 readyz_is ready
[ -f "$marker" ] || fail "the marker not restored"

# 4. An upgrade's hold: Fabric Manager stops first, then the persistence daemon.
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_NEW"
expect_err "kernel: the node agent's daemons are stopped for this run (stopped=2)"
assert_eq "$(grep '^stop ' "$dlog" | awk '{print $2}' | tr '\n' ' ')" "nv-fabricmanager nvidia-persistenced " "the order of the stops"
# Ready again once the new version's Fabric Manager runs (the last judgement stays while
# the installer holds the lock).
wait_for "Fabric Manager on the new version" 30 said_at_least "daemon running (daemon=nv-fabricmanager" 3
wait_for "ready on the new version" 30 readyz_is ready
stop_agent
assert_eq "$(grep '^stop ' "$dlog" | awk '{print $2}' | tail -2 | tr '\n' ' ')" "nv-fabricmanager nvidia-persistenced " "SIGTERM's order"
# Uninstall takes the NVSwitch nodes with the others.
expect_rc 0 uninstall --kernel-release "$KERNEL"
[ -z "$(ls "$T/root/dev" | grep nvswitch)" ] || fail "NVSwitch nodes left: $(ls "$T/root/dev")"
[ ! -e "$T/root/dev/char/508:255" ] || fail "the /dev/char link left"
# The same package on a node without NVSwitch: the persistence daemon only, no NVSwitch node.
mkhost
: >"$dlog"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_OLD"
start_agent
wait_for "ready" 30 readyz_is ready
wait_for "the persistence daemon" 30 starts_at_least nvidia-persistenced 1
sleep 1.5
assert_eq "$(starts nv-fabricmanager)" 0 "Fabric Manager on a node without NVSwitch"
assert_eq "$(devnode nvidia-nvswitchctl)" missing "an NVSwitch control node without a switch"
stop_agent
apid=

# 5. NVLink 5: NVSwitches behind the ConnectX-7 bridge's management functions.
mkhost
nvlink_function "$T/root" mlx5_0 MODL=CX750A b8cef60300000010
nvlink_function "$T/root" mlx5_2 SMDL=SW_MNG b8cef60300000002
nvlink_function "$T/root" mlx5_1 SMDL=SW_MNG b8cef60300000001
guid=0xb8cef60300000001
: >"$dlog"
# 5a. ib_umad loaded; the package has Fabric Manager and no NVLSM.
mkdir -p "$T/root/sys/class/infiniband_mad"
expect_rc 8 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_OLD"
expect_err "this node has NVLink 5 NVSwitches behind 2 management port(s) and its NVLink fabric is not trained"
start_agent
wait_for "the agent's judgement" 30 readyz_is "not ready (fabric_manager): this node's NVLink 5 fabric needs NVLSM and the installed driver has none (bin/nvlsm)"
stop_agent
assert_eq "$(starts nv-fabricmanager)" 0 "Fabric Manager started without NVLSM"
# 5b. With NVLSM and its config, and ib_umad not loaded.
for v in "$V_OLD"; do
    cc -O1 -DSTANDIN_NVLSM -o "$T/drv-$v/bin/nvlsm" "$SRC/tests/standin/daemon.c"
    mkdir -p "$T/drv-$v/share/nvidia/nvlsm"
    echo "fm_sm_ipc_socket_path /var/run/nvidia-fabricmanager/fm_sm_ipc.socket" >"$T/drv-$v/share/nvidia/nvlsm/nvlsm.conf"
    # Where the stand-in NVLSM makes the FM-SM socket.
    echo "FM_SM_IPC_INTERFACE=$T/root/run/nvidia-fabricmanager/fm_sm_ipc.socket" >>"$T/drv-$v/share/nvidia/nvswitch/fabricmanager.cfg"
    "$SRC/scripts/make-repo" pack "$T/drv-$v" "$T/pkg-$v.tar.zst"
    "$SRC/scripts/make-repo" add --repo "$T/repo-nvl5" --key "$FIX/keys/key.pem" --version "$v" \
        --kernel "$KERNEL" "$T/pkg-$v.tar.zst" >/dev/null
done
rmdir "$T/root/sys/class/infiniband_mad"
expect_rc 8 install --repo "file://$T/repo-nvl5" $(kernel_args) --driver-version "$V_OLD"
expect_err "this node has NVLink 5 NVSwitches behind 2 management port(s) and ib_umad is not loaded, so NVLSM cannot train its NVLink fabric; fix: load ib_umad on the node (modprobe ib_umad)"
start_agent
wait_for "the agent's judgement" 30 readyz_is "not ready (fabric_manager): ib_umad is not loaded: NVLSM cannot reach the NVLink 5 NVSwitches behind mlx5_1"
stop_agent
assert_eq "$(starts nvlsm) $(starts nv-fabricmanager)" "0 0" "daemons started without ib_umad"
# 5c. ib_umad loaded: the install leaves readiness to the agent, which starts NVLSM, then
#     Fabric Manager on the same port.
mkdir -p "$T/root/sys/class/infiniband_mad"
expect_rc 0 install --repo "file://$T/repo-nvl5" $(kernel_args) --driver-version "$V_OLD"
expect_err "verify: CUDA waits for Fabric Manager (802: the NVLink fabric is not trained): the node agent starts it and makes the node ready (nvlink_ports=2)"
expect_err "NVLink 5 system: CUDA waits for NVLSM and Fabric Manager on its management port (guid=$guid device=mlx5_1 ib_umad=loaded)"
: >"$dlog"
# A socket left behind, as by an NVLSM killed before, and an NVLSM that serves 2 s after
# its start: the old socket must not count as the new one serving, or Fabric Manager
# would start first (the order checked below).
mkdir -p "$T/root/run/nvidia-fabricmanager"
: >"$T/root/run/nvidia-fabricmanager/fm_sm_ipc.socket"
export STANDIN_NVLSM_SOCKET_MS=2000
start_agent
wait_for "ready once NVLSM and Fabric Manager run" 30 readyz_is ready
idir_real=$(realpath "$(idir)")
cfg=$(realpath "$T/root/run/nvidia-driver-installer")/fabricmanager.cfg
# NVLSM before Fabric Manager (the persistence daemon, started first, forks: its line may
# come later).
assert_eq "$(grep '^start ' "$dlog" | cut -d' ' -f2 | grep -v persistenced | tr '\n' ' ')" "nvlsm nv-fabricmanager " "the order of the starts"
grep -qx "start nvlsm pid=[0-9]* args=--config $idir_real/share/nvidia/nvlsm/nvlsm.conf --guid $guid --log_file stdout" "$dlog" ||
    fail "NVLSM's arguments: $(cat "$dlog")"
grep -qx "start nv-fabricmanager pid=[0-9]* args=-c $cfg -g $guid" "$dlog" ||
    fail "Fabric Manager's arguments: $(cat "$dlog")"
[ -f "$marker" ] || fail "the agent did not write the marker"
# 5d. NVLSM killed: not ready until it runs again.
sm=$(sed -n 's/^start nvlsm pid=\([0-9]*\) .*/\1/p' "$dlog" | tail -1)
lines=$(wc -l <"$T/agent.log")
kill -KILL "$sm"
wait_for "readiness withdrawn" 30 test ! -e "$marker"
# As for Fabric Manager above: the end, or the restart when the backoff ran out first.
said_since "$lines" "node not ready (reason=fabric_manager cause=NVLSM \(ended (signal 9)\|is starting\) on management port $guid" ||
    fail "no error line: $(tail -3 "$T/agent.log")"
wait_for "NVLSM again" 30 starts_at_least nvlsm 2
wait_for "ready again" 30 readyz_is ready
# 5e. SIGTERM: Fabric Manager, NVLSM, then the persistence daemon.
stop_agent
assert_eq "$(grep '^stop ' "$dlog" | awk '{print $2}' | tail -3 | tr '\n' ' ')" "nv-fabricmanager nvlsm nvidia-persistenced " "SIGTERM's order"
apid=
