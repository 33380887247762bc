# plain build: podman runs the static hook and launcher, built alike for both; the agent's side runs under ASan in t_agent
# A CDI spec in the shape NVIDIA's tools write for our install dir as their driver root
# (tests/tools/nvcdi-shape.py restates nvcdi's rules, cited there: single-file program
# mounts found in usr/bin, libraries at their resolved .versions/ID/lib64 paths, GSP firmware
# under lib/firmware, and the create-symlinks, enable-cuda-compat, update-ldcache,
# disable-device-node-modification and update-application-profile hooks), with the hook
# path pointing at OUR hook, run by Debian's podman with runc. No NVIDIA Container Toolkit
# is on this host. In the container:
#   nvidia-smi (the real program, mounted alone at /usr/bin) runs and finds NVML; libcuda.so.1
#   and libnvidia-ml.so.1 load by soname from the ld cache our hook wrote; the soname and
#   libcuda.so links exist; the GSP firmware is where NVIDIA's spec puts it; the
#   application profile names the container's GPU.
# The same with the shapes of the plugins before v0.18 (toolkit 1.16, 1.17.0, 1.17.8: no
# soname link asked, libcuda.so at most): our hook's update-ldcache makes the soname links
# as NVIDIA's ldconfig does, and libcuda.so.1, libnvidia-ml.so.1 and nvidia-smi work.
# The launcher mounted alone (what NVIDIA's locator found before usr/bin existed) says what
# to mount instead, exit 127. NVIDIA's DRA driver's start check passes on the install dir.
# A switch to another version while that spec exists: its .versions/ID paths are gone and
# podman refuses the container; the agent finds the spec stale, sends SIGHUP to the process
# running nvidia-device-plugin (a stand-in that rewrites the spec on SIGHUP, as the plugin
# does), and the new spec's container runs the new version's nvidia-smi. Without such a
# process the agent says to restart the producer.
command -v podman >/dev/null && command -v runc >/dev/null || fail "podman and runc are needed (make deps)"
[ "$(id -u)" = 0 ] || fail "needs root (podman as root, mount namespaces)"
command -v nvidia-ctk >/dev/null && fail "this host has NVIDIA's toolkit: the test proves its absence does not matter"

FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
R="file://$T/repo"
expect_rc 0 install --repo "$R" $(kernel_args)
inst=/home/kubernetes/bin/nvidia
hook=$inst/.helpers/nvidia-cdi-hook
spec=$T/root/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json
shape() {
    python3 "$SRC/tests/tools/nvcdi-shape.py" --fs "$T/root" --driver-root "$inst" --hook "$hook" \
        --gpus 2 --out "$spec" "$@" 2>"$T/shape.err" || fail "nvcdi-shape: $(cat "$T/shape.err")"
}
shape
# What NVIDIA's locator found: the real program in usr/bin, the resolved libraries, the firmware.
grep -q "mount $inst/usr/bin/nvidia-smi -> /usr/bin/nvidia-smi" "$T/shape.err" || fail "nvidia-smi: $(cat "$T/shape.err")"
grep -q "mount $inst/.versions/[^/]*/lib64/libcuda.so.$V_OLD -> /.versions/" "$T/shape.err" || fail "libcuda: $(cat "$T/shape.err")"
grep -q "mount $inst/lib/firmware/nvidia/$V_OLD/gsp_ga10x.bin -> /lib/firmware/nvidia/$V_OLD/gsp_ga10x.bin" "$T/shape.err" ||
    fail "firmware: $(cat "$T/shape.err")"
cmp -s "$T/root$inst/usr/bin/nvidia-smi" "$T/root$inst/bin/.real/nvidia-smi" || fail "usr/bin/nvidia-smi is not the real program"

# NVIDIA's DRA driver's kubelet plugin waits in its init container until the driver root
# passes this check (NVIDIA/k8s-dra-driver-gpu @2240711, hack/kubelet-plugin-prestart.sh:
# 44-106, its commands with /driver-root as our install dir): nvidia-smi a regular file
# (find -type f: links are not followed, and our bin/ is one), libnvidia-ml.so.1 found
# following links, and nvidia-smi --version with only LD_PRELOAD set exits 0.
dr=$T/root$inst
nv_path=$(find "$dr/opt/bin" "$dr/usr/bin" "$dr/usr/sbin" "$dr/bin" "$dr/sbin" \
    -maxdepth 1 -type f -name nvidia-smi 2>/dev/null | sed -n 1p || true)
nv_lib=$(find -L "$dr/usr/lib64" "$dr/usr/lib/x86_64-linux-gnu" "$dr/usr/lib/aarch64-linux-gnu" \
    "$dr/lib64" "$dr/lib/x86_64-linux-gnu" "$dr/lib/aarch64-linux-gnu" \
    -maxdepth 1 -type f -name libnvidia-ml.so.1 2>/dev/null | sed -n 1p || true)
assert_eq "$nv_path" "$dr/usr/bin/nvidia-smi" "the DRA driver's nvidia-smi"
assert_eq "$nv_lib" "$dr/lib64/libnvidia-ml.so.1" "the DRA driver's libnvidia-ml.so.1"
env -i LD_PRELOAD="$nv_lib" "$nv_path" --version >"$T/dra.out" 2>&1 || fail "the DRA driver's check: $(cat "$T/dra.out")"

. "$SRC/tests/tools/probe-image.sh"
probe_ns_setup "$T" 2
probe_cdi_dirs_take
cleanup() {
    probe_cdi_dirs_release
    rm -rf "$T/storage" 2>/dev/null || true
    # The pod's init killed, the kernel ends what runs in its PID namespace (unshare
    # itself ignores SIGTERM while it waits for its child).
    [ -z "${pod:-}" ] || pkill -KILL -P "$pod" 2>/dev/null || true
}
trap cleanup EXIT
in_ns() { probe_in_ns "$T" "$1"; }
# Our own spec is there too (kind nvidia.com/gpu): NVIDIA's kind is another, no conflict.
[ -s "$T/root/var/run/cdi/nvidia-driver-installer.json" ] || fail "our spec is missing"

workload="ls /dev; probe libcuda.so.1 libnvidia-ml.so.1 libcuda.so; nvidia-smi; echo smi=\$?;
ls /lib/firmware/nvidia/*/; cat /etc/nvidia/nvidia-application-profiles-rc.d/10-container.conf; echo"
check_workload() {
    local v=$1
    grep -qx "dlopen libcuda.so.1: ok" "$T/ns.out" || fail "libcuda.so.1 by soname: $(cat "$T/ns.out")"
    grep -qx "dlopen libnvidia-ml.so.1: ok" "$T/ns.out" || fail "libnvidia-ml.so.1 by soname: $(cat "$T/ns.out")"
    grep -qx "dlopen libcuda.so: ok" "$T/ns.out" || fail "the libcuda.so link (create-symlinks): $(cat "$T/ns.out")"
    grep -qx "smi=0" "$T/ns.out" || fail "nvidia-smi: $(cat "$T/ns.out") $(cat "$T/ns.err")"
    grep -q "Driver Version: $v" "$T/ns.out" || fail "nvidia-smi's version, want $v: $(cat "$T/ns.out")"
    grep -qx "gsp_ga10x.bin" "$T/ns.out" || fail "GSP firmware: $(cat "$T/ns.out")"
    grep -q '"EGLVisibleDGPUDevices",0x1\]' "$T/ns.out" || fail "application profile: $(cat "$T/ns.out")"
    ! grep -qx nvidia1 "$T/ns.out" || fail "gpu=0 got nvidia1 too"
}
in_ns "run --device k8s.device-plugin.nvidia.com/gpu=0 $PROBE_IMAGE sh -c '$workload'" ||
    fail "podman with NVIDIA's spec shape: $(cat "$T/ns.err")"
check_workload "$V_OLD"

# The shapes of the plugins before v0.18 (toolkit 1.16 and 1.17, cited in nvcdi-shape.py):
# no create-symlinks for the sonames (1.16 none at all, 1.17 libcuda.so only), so the
# driver's directory in the container holds only the *.so.VERSION files mounted there;
# they rely on update-ldcache's ldconfig making libcuda.so.1 and libnvidia-ml.so.1 there.
# glibc's loader in the container then finds them by soname, and nvidia-smi runs (with
# ldconfig -X it could not load NVML and exited 12).
for tk in 1.16 1.17.0 1.17.8; do
    shape --toolkit "$tk"
    grep -q '"libcuda.so.1::' "$spec" && [ "$tk" = 1.16 ] && fail "toolkit 1.16's shape asks for libcuda.so"
    grep -q 'libnvidia-ml.so.1::' "$spec" && fail "toolkit $tk's shape asks for a soname link"
    in_ns "run --device k8s.device-plugin.nvidia.com/gpu=0 $PROBE_IMAGE sh -c 'probe libcuda.so.1 libnvidia-ml.so.1 libcuda.so; nvidia-smi; echo smi=\$?'" ||
        fail "podman with toolkit $tk's spec shape: $(cat "$T/ns.err")"
    # 1.17's libcuda.so names libcuda.so.1, which the hook's ldconfig makes after it.
    [ "$tk" = 1.16 ] || grep -qx "dlopen libcuda.so: ok" "$T/ns.out" || fail "toolkit $tk: libcuda.so: $(cat "$T/ns.out")"
    grep -qx "dlopen libcuda.so.1: ok" "$T/ns.out" || fail "toolkit $tk: libcuda.so.1 by soname: $(cat "$T/ns.out")"
    grep -qx "dlopen libnvidia-ml.so.1: ok" "$T/ns.out" || fail "toolkit $tk: libnvidia-ml.so.1 by soname: $(cat "$T/ns.out")"
    grep -qx "smi=0" "$T/ns.out" || fail "toolkit $tk: nvidia-smi: $(cat "$T/ns.out") $(cat "$T/ns.err")"
    grep -q "Driver Version: $V_OLD" "$T/ns.out" || fail "toolkit $tk: nvidia-smi's version: $(cat "$T/ns.out")"
done
shape

# The launcher alone, as a locator without usr/bin would mount it: it says what to mount.
python3 - "$spec" "$inst" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
for m in s["containerEdits"]["mounts"]:
    if m["containerPath"] == "/usr/bin/nvidia-smi":
        m["hostPath"] = sys.argv[2] + "/bin/nvidia-smi"
json.dump(s, open(sys.argv[1], "w"))
EOF
in_ns "run --device k8s.device-plugin.nvidia.com/gpu=0 $PROBE_IMAGE sh -c 'nvidia-smi; echo smi=\$?'" || fail "podman: $(cat "$T/ns.err")"
grep -qx "smi=127" "$T/ns.out" || fail "the launcher alone: $(cat "$T/ns.out")"
grep -q "this is the driver's launcher.*mount the install dir's bin/ whole, or the program itself from its usr/bin/" "$T/ns.err" ||
    fail "the launcher's message: $(cat "$T/ns.err")"
shape

# A switch: the spec's .versions/ID paths go with the old version.
expect_rc 0 install --repo "$R" $(kernel_args) --driver-version "$V_NEW"
in_ns "run --device k8s.device-plugin.nvidia.com/gpu=0 $PROBE_IMAGE true" &&
    fail "podman ran a container whose spec names removed files: staleness is not what this test thinks"

# The pod the agent and the device plugin share (shareProcessNamespace): a PID namespace of
# this test's own, since the agent asks every nvidia-device-plugin it sees, and a test
# beside this one (another make check's t_cdi_nvidia) runs a stand-in of its own (seen:
# this agent found that one and never said there was none).
unshare --pid --fork --mount-proc --kill-child sleep 1000000 &
pod=$!
pod_init() { pgrep -P "$pod" >/dev/null; }
wait_for "the pod's PID namespace" 30 pod_init
# in_pod CMD... &: CMD in the pod, nsenter in the background's place (its $!), CMD its
# child (nsenter forks it inside and waits for it).
in_pod() { exec nsenter --target "$(pgrep -P "$pod")" --pid --mount -- "$@"; }
# in_pod_stop PID: SIGTERM to what in_pod started as PID, then its end.
in_pod_stop() {
    pkill -TERM -P "$1" || true
    wait "$1" || true
}

# The agent, with no producer to ask: it says what to do.
agent() {
    in_pod env LD_PRELOAD="$FAKEKERNEL" FAKE_KERNEL_ROOT="$T/root" \
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
        "$BIN" --root "$T/root" -v agent --listen 127.0.0.1:0 --interval 1 --kernel-release "$KERNEL" 2>"$1" &
    apid=$!
}
agent "$T/agent1.log"
said() { grep -q -- "$2" "$1"; }
wait_for "the agent's word on the stale spec" 30 said "$T/agent1.log" \
    "no nvidia-device-plugin runs in this pod: restart its producer"
grep -q "spec=/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json" "$T/agent1.log" || fail "the spec is not named: $(grep stale "$T/agent1.log")"
in_pod_stop "$apid"

# A stand-in of the plugin: a program named nvidia-device-plugin (busybox's sh under that
# name) that rewrites its spec on SIGHUP, as the plugin's restart loop does.
cp /bin/busybox "$T/nvidia-device-plugin"
cat >"$T/plugin.sh" <<EOF
trap 'python3 "$SRC/tests/tools/nvcdi-shape.py" --fs "$T/root" --driver-root "$inst" --hook "$hook" --gpus 2 --out "$spec" 2>/dev/null; echo rewritten >>"$T/plugin.log"' HUP
echo ready >"$T/plugin.ready"
while :; do sleep 0.2; done
EOF
# SIGHUP at its default first: a shell cannot trap a signal ignored when it started, and
# a run under nohup (or a CI runner that ignores SIGHUP) passes that on to every child.
in_pod env --default-signal=HUP bash -c 'exec -a sh "$0" "$1"' "$T/nvidia-device-plugin" "$T/plugin.sh" &
# Its trap set before the agent can signal it (a SIGHUP before that would end it, and the
# agent asks a producer at most once a minute): seen under a loaded make check.
plugin_ready() { [ -s "$T/plugin.ready" ]; }
wait_for "the plugin stand-in's trap" 30 plugin_ready
agent "$T/agent2.log"
rewritten() { [ -s "$T/plugin.log" ]; }
# On a timeout, what each side did (seen once in a loaded make check, not alone).
rewritten_or_say() {
    rewritten && return 0
    [ "$(date +%s%N)" -lt "$hup_deadline" ] && return 1
    local holders="" f
    for f in /proc/[0-9]*/fd/*; do
        [ "$(readlink "$f" 2>/dev/null)" = "$T/root/run/nvidia-driver-installer.lock" ] &&
            holders="$holders ${f#/proc/} ($(tr '\0' ' ' <"${f%/fd/*}/cmdline" | cut -c1-80))"
    done
    local ppid
    ppid=$(pgrep -f "^sh $T/plugin.sh") || true
    fail "no SIGHUP reached the plugin stand-in (pid $ppid, $(cat "/proc/$ppid/status" 2>/dev/null | grep -E '^(State|SigCgt|SigIgn)' | tr '\n' ' '), exe $(readlink "/proc/$ppid/exe")); the lock's holders:${holders:- none}; the agent said: $(tail -8 "$T/agent2.log")"
}
hup_deadline=$(($(date +%s%N) + 20000000000))
wait_for "the plugin's SIGHUP" 30 rewritten_or_say
wait_for "the agent's word" 30 said "$T/agent2.log" "its producer was asked to rewrite it"
wait_for "the spec current again" 30 said "$T/agent2.log" "another producer's CDI spec is current again"
in_ns "run --device k8s.device-plugin.nvidia.com/gpu=0 $PROBE_IMAGE sh -c '$workload'" ||
    fail "podman after the rewrite: $(cat "$T/ns.err")"
check_workload "$V_NEW"
