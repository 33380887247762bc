# plain build: the manifests as the kubelet would run them; the binary paths they take
# are t_defer's and t_pending_*'s
# A rollout of a new driver version over a busy node, as the shipped manifests run it
# (issue 18, "the DaemonSet's policy and the plugin's behaviour while a version is pending").
# Everything the kubelet and the device plugin do here is taken from the manifests, through
# tests/k8s/check-manifest.mjs --pods: the init container runs with the manifest's args and
# env (NVIDIA_WHEN_BUSY included), only the repository adapted as the README says and
# NVIDIA_DRIVER_VERSION changed as a rollout changes it; the readiness probe's command and
# the plugin's view run in stand-ins of their containers (tests/tools/pod-container.py: the
# manifest's mounts, bound from the fake root). While the new version waits, the plugin
# must see the old, loaded driver whole: the NVML library it loads is the loaded version's,
# and every device node it hands out is there; after the holder exits and the pod is
# replaced, the new one.
#
# What the plugins need, from their sources (we run our own program, tests/tools/plugin-view.c,
# never their code):
# - GKE's (github.com/GoogleCloudPlatform/container-engine-accelerators, daemonset-preloaded.yaml):
#   cmd/nvidia_gpu/nvidia_gpu.go, main: devDirectory "/dev"; it waits in
#   CheckDevicePaths (pkg/gpu/nvidia/manager.go: os.Stat of /dev/nvidiactl and
#   /dev/nvidia-uvm), then nvml.Init(), which go-nvml (vendor/github.com/NVIDIA/go-nvml/
#   pkg/nvml/lib.go, defaultNvmlLibraryName) dlopens as "libnvidia-ml.so.1" by name with
#   RTLD_LAZY|RTLD_GLOBAL: found through the container's LD_LIBRARY_PATH. Start ->
#   discoverGPUs (manager.go) asks NVML each device's minor number and registers
#   "nvidia<minor>"; DeviceSpec hands /dev/nvidia<minor> to GPU containers.
# - NVIDIA's (github.com/NVIDIA/k8s-device-plugin, daemonset-generic.yaml):
#   cmd/nvidia-device-plugin/main.go, startPlugins: nvml.WithLibraryPath(
#   driverRoot.tryResolveLibrary("libnvidia-ml.so.1")); root.go, tryResolveLibrary: the
#   first of /usr/lib64, /usr/lib/x86_64-linux-gnu, /usr/lib/aarch64-linux-gnu, /lib64,
#   /lib/x86_64-linux-gnu, /lib/aarch64-linux-gnu under the container's driver root
#   (/driver-root) that resolves (filepath.EvalSymlinks), loaded by that path.
#   internal/rm/nvml_manager.go, GetDevicePaths: /dev/nvidiactl, /dev/nvidia-uvm (and the
#   optional uvm-tools, modeset) plus each device's /dev/nvidia<minor>.
command -v node >/dev/null || fail "node is needed (scripts/deps.sh installs nodejs)"
k8s_node_modules
check() { node "$SRC/tests/k8s/check-manifest.mjs" "$@"; }
cc -O1 -o "$T/plugin-view" "$SRC/tests/tools/plugin-view.c" -ldl

# The policy: both manifests defer. The check can fail: `fail`, or no policy at all.
# edit IN OLD NEW OUT: OUT is IN with every OLD replaced by NEW (OLD must be there).
edit() {
    python3 -c 'import sys; t = open(sys.argv[1]).read(); assert sys.argv[2] in t, sys.argv[2]
open(sys.argv[4], "w").write(t.replace(sys.argv[2], sys.argv[3]))' "$@"
}
for p in gke:daemonset-preloaded.yaml generic:daemonset-generic.yaml; do
    profile=${p%%:*} m=$SRC/${p#*:}
    check "$profile" "$m" --pods >"$T/$profile.json"
    edit "$m" "              value: defer" "              value: fail" "$T/fail.yaml"
    check "$profile" "$T/fail.yaml" >/dev/null 2>"$T/err" && fail "$profile: NVIDIA_WHEN_BUSY=fail passed the check"
    grep -q "NVIDIA_WHEN_BUSY=defer" "$T/err" || fail "$profile: fail refused for another reason: $(cat "$T/err")"
    edit "$m" "            - name: NVIDIA_WHEN_BUSY
              value: defer
" "" "$T/nopolicy.yaml"
    check "$profile" "$T/nopolicy.yaml" >/dev/null 2>"$T/err" && fail "$profile: a manifest without NVIDIA_WHEN_BUSY passed the check"
    grep -q "NVIDIA_WHEN_BUSY=defer" "$T/err" || fail "$profile: no policy refused for another reason: $(cat "$T/err")"
done
# Every DaemonSet: a rolling update one node at a time, an installer deferring, and one
# container gating readiness: the agent's /readyz.
python3 - "$T/gke.json" "$T/generic.json" <<'PY'
import json, os, sys
for f in sys.argv[1:]:
    for d in json.load(open(f))["daemonsets"]:
        assert d["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}, d
        assert d["init"]["env"]["NVIDIA_WHEN_BUSY"] == "defer", d["name"]
        assert [c["readinessHttp"] for c in d["containers"] if c["readinessHttp"] or c["readinessProbe"]] == [
            {"path": "/readyz", "port": 9470}], d["name"]
PY

# The version the manifests pin is what the rollout brings; the node runs an older one.
pinned=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["daemonsets"][0]["init"]["env"]["NVIDIA_DRIVER_VERSION"])' "$T/gke.json")
[ "$(printf '%s\n' "$V_OLD" "$pinned" | sort -V | tail -1)" = "$pinned" ] && [ "$pinned" != "$V_OLD" ] ||
    fail "the manifests pin $pinned, not newer than $V_OLD: the rollout below would not be an upgrade"
# Its package: a stand-in driver of that version, modules signed with the test key.
"$SRC/scripts/make-standin-driver" "$pinned" "$T/drv-pinned" 4
sign_modules "$T/drv-pinned/kernel"
"$SRC/scripts/make-repo" pack "$T/drv-pinned" "$T/pinned.tar.zst"

mkdir -p "$T/keys"
cp "$FIX/keys/pub.pem" "$T/keys/repo.pem" # the ConfigMap's repo.pem, as the operator sets it

# init DS VERSION: the DaemonSet's pod starts: its init container runs install with the
# manifest's args and env. Container paths under the container's mounts are where the stand-in
# has them (the host's / is the fake root, the ConfigMap a directory); the repository is
# ours (the README's first adaptation); the node's kernel is the fake one's.
# container_env DS VERSION CONTAINER: that env (CONTAINER "init": the init container's), one
# line each, then the args.
container_env() {
    python3 - "$T/pods.json" "$1" "$2" "$T" "$FAKEKERNEL" "$KERNEL" "$3" <<'PY'
import json, os, sys
pods, name, version, t, fk, kernel, cname = sys.argv[1:]
ds = [d for d in json.load(open(pods))["daemonsets"] if d["name"] == name][0]
d = ds["init"] if cname == "init" else [c for c in ds["containers"] if c["name"] == cname][0]
mounts = {m["path"]: (t + "/root" + m["hostPath"] if m["hostPath"] else t + "/keys") for m in d["mounts"]}
def mapped(v):
    for mp in sorted(mounts, key=len, reverse=True):
        if v == mp or v.startswith(mp.rstrip("/") + "/"):
            return mounts[mp].rstrip("/") + v[len(mp.rstrip("/")):]
    return v
env = {k: mapped(v) if v.startswith("/") else v for k, v in d["env"].items()}
if cname == "init":
    env["NVIDIA_DRIVER_REPO"] = "file://%s/repo" % t
    env["NVIDIA_DRIVER_VERSION"] = version
env.update(PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NVIDIA_KERNEL_RELEASE=kernel,
           LD_PRELOAD=fk, FAKE_KERNEL_ROOT=t + "/root", FAKE_KERNEL_FAIL="", NVML_STANDIN_FAIL="")
# As lib.sh's inst: under ASan (make asan) the preloaded fake kernel comes first.
asan = os.environ.get("ASAN_OPTIONS", "")
env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "verify_asan_link_order=0"
for k, v in env.items():
    print("%s=%s" % (k, v))
print(" ".join(d["args"]))
PY
}
init() {
    container_env "$1" "$2" init >"$T/init.env"
    local args
    args=$(tail -1 "$T/init.env")
    mapfile -t envs < <(head -n -1 "$T/init.env")
    set +e
    env -i "${envs[@]}" "$BIN" $args >"$T/init.log" 2>&1
    RC=$?
    set -e
}
# in DS CONTAINER CMD...: CMD in a stand-in of that container of the DaemonSet's pod.
in_ctr() {
    local ds=$1 c=$2
    shift 2
    python3 "$SRC/tests/tools/pod-container.py" "$T/pods.json" "$ds" "$c" "$T/root" "$T/ctr" \
        --file "$T/plugin-view=/plugin-view" -- "$@"
}
# ready DS: the pod's readiness probe, as the kubelet runs it: the agent container runs
# with the manifest's args and env (host paths as init maps them; on 127.0.0.1, a look a
# second) until its first judgement, then the probe's GET: 0 for a 2xx or 3xx.
ready() {
    local ds=$1 c args apid port rc
    c=$(python3 -c 'import json,sys
d = [d for d in json.load(open(sys.argv[1]))["daemonsets"] if d["name"] == sys.argv[2]][0]
print([c["name"] for c in d["containers"] if c["readinessHttp"]][0])' "$T/pods.json" "$ds")
    container_env "$ds" "" "$c" >"$T/agent.env"
    args=$(tail -1 "$T/agent.env")
    mapfile -t envs < <(head -n -1 "$T/agent.env")
    # Emptied here, before the agent starts: its own redirection happens in the child, which
    # the waits below may outrun, reading the previous agent's log (its judgement, its port).
    : >"$T/agent.log"
    env -i "${envs[@]}" NVIDIA_AGENT_LISTEN=127.0.0.1:0 NVIDIA_AGENT_INTERVAL=1 "$BIN" $args 2>"$T/agent.log" &
    apid=$!
    judged() { grep -q '"msg":"node \(not \)\?ready' "$T/agent.log"; }
    wait_for "$ds: the agent's first judgement" 30 judged
    port=$(sed -n 's/.*"msg":"watching the node".*"port":\([0-9]*\).*/\1/p' "$T/agent.log")
    rc=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")
    kill -TERM "$apid"
    wait "$apid" || fail "$ds: the agent's exit: $(tail -2 "$T/agent.log")"
    [ "$rc" -ge 200 ] && [ "$rc" -lt 400 ]
}
# view DS: what the node's device plugin finds. Where the DaemonSet runs none, GKE runs its
# own, which ours copies (mounts, LD_LIBRARY_PATH: check-manifest.mjs asserts them), so the
# manifest's plugin container stands in for it; or, in the generic manifest's DRA pool,
# NVIDIA's DRA driver's kubelet plugin does: the install dir as its driver root at
# /driver-root (its chart's templates/kubeletplugin.yaml, values-dra.yaml), libnvidia-ml.so.1
# looked up in the same six directories under it as NVIDIA's device plugin does
# (k8s-dra-driver-gpu at 2240711, cmd/gpu-kubelet-plugin/root.go:29-45), so NVIDIA's plugin
# container stands in for it.
plugin_kind() { view "$1" kind; }
view() {
    local kind ds c args
    read -r kind ds c < <(python3 -c 'import json,sys
ds = json.load(open(sys.argv[1]))["daemonsets"]
own = [d for d in ds if d["name"] == sys.argv[2]]
for d in own + ds:
    p = [c for c in d["containers"] if c["plugin"]]
    if p:
        print(p[0]["plugin"], d["name"], p[0]["name"])
        break' "$T/pods.json" "$1")
    [ "${2:-}" != kind ] || { echo "$kind"; return; }
    case ${2:-$kind} in
    gke) args=(gke) ;;
    # Its driver root: NVIDIA_DRIVER_ROOT mounted at /driver-root (api/config/v1/consts.go).
    nvidia) args=(nvidia /driver-root) ;;
    *) fail "$1: no device plugin in the manifest" ;;
    esac
    # The NVML stand-in reads /proc/driver/nvidia: the node kernel's, in the container.
    in_ctr "$ds" "$c" /plugin-view "${args[@]}"
}
# sees DS VERSION: the plugin's view is VERSION's, whole and consistent with the kernel.
sees() {
    local v=$2 out
    out=$(view "$1") || fail "$1: the plugin cannot load the driver: $out"
    echo "$out" | sed "s/^/  $1 plugin: /"
    assert_eq "$(cat "$T/root/sys/module/nvidia/version")" "$v" "$1: the loaded module"
    assert_eq "$(echo "$out" | awk '$1 == "library" {print $2}' | sed 's/.*libnvidia-ml\.so\.//')" "$v" \
        "$1: the NVML library the plugin loads (the loaded version's, or NVML fails on a real node)"
    assert_eq "$(echo "$out" | awk '$1 == "nvml" {print $2}')" "$v" "$1: the version NVML reports"
    assert_eq "$(echo "$out" | awk '$1 == "cuda" {print $2}')" "$v" "$1: libcuda.so.1 beside it"
    assert_eq "$(echo "$out" | awk '$1 == "node" && $3 != "ok"')" "" "$1: device nodes the plugin hands out"
    assert_eq "$(echo "$out" | grep -c '^node /dev/nvidia[0-9]')" 2 "$1: one device node per GPU"
    assert_eq "$(echo "$out" | awk '$1 == "devnodes" {print $2}')" 2 "$1: GPU device nodes in /dev (GKE's count)"
    if [ "$(plugin_kind "$1")" = nvidia ]; then
        # NVML as the plugin and go-nvlib call it (the stand-in answers as NVML does):
        # the H100's PCI ids from sysfs, Hopper (NVML_DEVICE_ARCH_HOPPER 9), 9.0,
        # NVML_BRAND_NVIDIA (14); the last shutdown 0, one more NVML_ERROR_UNINITIALIZED.
        assert_eq "$(echo "$out" | grep -c '^gpu [01] 00000000:[0-9A-F]*:[0-9A-F]*\.0 pci 0x233010de arch 9 cc 9\.0 brand 14$')" 2 \
            "$1: NVML's PCI info, architecture, capability and brand: $out"
        assert_eq "$(echo "$out" | awk '$1 == "shutdown"')" "shutdown 0 1" "$1: NVML's reference count"
    fi
    # NVIDIA's plugin v0.16.0-v0.18.0 first asks go-nvlib's HasNvml, which then dlopened
    # "libnvidia-ml.so.1" by name (vendor/github.com/NVIDIA/go-nvlib/pkg/nvlib/info/
    # root.go, assertHasLibrary, without WithRoot until v0.18.1): the manifest's
    # LD_LIBRARY_PATH must answer it, as GKE's lookup does (plugin-view gke).
    if [ "$(plugin_kind "$1")" = nvidia ]; then
        out=$(view "$1" gke) || fail "$1: a plugin before v0.18.1 finds no NVML by name: $out"
        assert_eq "$(echo "$out" | awk '$1 == "nvml" {print $2}')" "$v" "$1: NVML by name (plugins before v0.18.1)"
    fi
}
labels=$T/root/etc/kubernetes/node-feature-discovery/features.d

ran=""
for profile in gke generic; do
    cp "$T/$profile.json" "$T/pods.json"
    for ds in $(python3 -c 'import json,sys; print(" ".join(d["name"] for d in json.load(open(sys.argv[1]))["daemonsets"]))' "$T/pods.json"); do
        echo "== $profile: daemonset/$ds"
        ran="$ran $profile/$ds"
        rm -rf "$T/root" "$T/repo"
        mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330 --gpu 10de:2330
        mkkernel "$T/root"
        # The kubelet's directories the plugins mount (hostPath type Directory).
        mkdir -p "$T/root/var/lib/kubelet/device-plugins" "$T/root/var/lib/kubelet/pod-resources"
        new_signed_repo "$T/repo" "$V_OLD"
        "$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$pinned" \
            --kernel "$KERNEL" "$T/pinned.tar.zst" >/dev/null
        metrics=$T/root$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["daemonsets"][0]["init"]["env"]["NVIDIA_METRICS_FILE"])' "$T/pods.json")
        # The probe can fail: nothing installed yet, no marker.
        set +e
        ready "$ds"
        RC=$?
        set -e
        assert_eq "$RC" 1 "$ds: the readiness probe before any install (/readyz: 503)"
        # Before the rollout: the fleet's previous version, installed by this pod.
        init "$ds" "$V_OLD"
        assert_eq "$RC" 0 "$ds: the first install: $(tail -2 "$T/init.log")"
        ready "$ds" || fail "$ds: not Ready after the first install"
        sees "$ds" "$V_OLD"
        # A GPU job holds /dev/nvidiactl; the rollout replaces the pod with the pinned version.
        mkdir -p "$T/root/proc/4242/fd"
        ln -sfn /dev/nvidiactl "$T/root/proc/4242/fd/3"
        echo cuda-app >"$T/root/proc/4242/comm"
        init "$ds" "$pinned"
        assert_eq "$RC" 0 "$ds: the rollout's pod on a busy node (exit 0: its containers start, the rollout goes on): $(tail -2 "$T/init.log")"
        grep -q "waits for idle GPUs or the next boot" "$T/init.log" || fail "$ds: not deferred: $(tail -2 "$T/init.log")"
        ready "$ds" || fail "$ds: not Ready while the new version waits (maxUnavailable 1: the rollout would stop here)"
        sees "$ds" "$V_OLD"
        assert_eq "$(cat "$labels/00-nvidia-driver-pending")" "nvidia.com/gpu.driver-installer.upgrade-pending=$pinned
nvidia.com/gpu.driver-installer.upgrade-pending-reason=driver_in_use" "$ds: pending labels"
        grep -qx "nvidia_driver_installer_upgrade_pending{version=\"$pinned\",reason=\"driver_in_use\"} 1" "$metrics" ||
            fail "$ds: metric: $(grep upgrade_pending "$metrics")"
        # The view check can fail: the install dir pointed at the staged version while the
        # old one is loaded (what the pending state must never do).
        I=$(idir)
        cur=$(readlink "$I/.current")
        staged=$(cd "$I/.versions" && ls -d "$pinned"-*)
        ln -sfn ".versions/$staged" "$I/.current.tmp" && mv -T "$I/.current.tmp" "$I/.current"
        (sees "$ds" "$V_OLD") >/dev/null 2>"$T/err" && fail "$ds: a plugin seeing the staged library passed"
        grep -q "the NVML library the plugin loads" "$T/err" || fail "$ds: $(cat "$T/err")"
        ln -sfn "$cur" "$I/.current.tmp" && mv -T "$I/.current.tmp" "$I/.current"
        # The holder exits; the pod is replaced (the same env): the switch.
        rm -rf "$T/root/proc/4242"
        init "$ds" "$pinned"
        assert_eq "$RC" 0 "$ds: the pod after the GPUs went idle: $(tail -2 "$T/init.log")"
        ready "$ds" || fail "$ds: not Ready after the switch"
        sees "$ds" "$pinned"
        [ ! -e "$labels/00-nvidia-driver-pending" ] || fail "$ds: still pending after the switch"
        grep -qx 'nvidia_driver_installer_upgrade_pending{version="",reason=""} 0' "$metrics" ||
            fail "$ds: metric after the switch: $(grep upgrade_pending "$metrics")"
    done
done
# Every DaemonSet was run: GKE's two, the generic two.
assert_eq "$ran" " gke/nvidia-driver-installer gke/nvidia-driver-installer-plugin generic/nvidia-driver-installer generic/nvidia-driver-installer-dra" \
    "the DaemonSets the rollout ran on"
