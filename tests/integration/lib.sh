# SPDX-License-Identifier: Apache-2.0
# Helpers for the integration tests: sourced by run.sh, never run alone.
#
# Each test runs in its own scratch directory $T with a fake host root $T/root.
# Shared fixtures (keys, stand-in drivers, packages) are built once in $FIX.

KERNEL=6.1.0-57-amd64
OTHER_KERNEL=6.1.0-58-amd64
V_OLD=535.261.03
V_NEW=550.90.07
V_BRANCH_OLD=535.183.01

# grepq: grep -q at the end of a pipe (every test runs under pipefail).
. "$SRC/tests/tools/pipes.sh"

SIGN_FILE=$(ls /usr/lib/linux-kbuild-*/scripts/sign-file 2>/dev/null | tail -1)

# Signs every .ko under DIR with the pinned test key: sign_modules DIR [sign-file options]
sign_modules() {
    local dir=$1
    shift
    for ko in "$dir"/*.ko; do
        "$SIGN_FILE" "$@" sha256 "$FIX/keys/modkey.pem" "$FIX/keys/modkey.pem" "$ko"
    done
}

# The open flavour of stand-in driver V, packed at OUT: the same stand-in, its modules
# licensed as NVIDIA's open ones ("Dual MIT/GPL", no P taint) and signed with the test key.
open_standin_pkg() {
    local v=$1 out=$2
    MODULE_LICENSE="Dual MIT/GPL" "$SRC/scripts/make-standin-driver" "$v" "$T/drv-open-$v" 64
    sign_modules "$T/drv-open-$v/kernel"
    "$SRC/scripts/make-repo" pack "$T/drv-open-$v" "$out"
}

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# wait_for WHAT SECONDS COMMAND...: runs COMMAND until it succeeds, and fails the test
# naming WHAT when SECONDS have passed. Tests wait for the event they need (a file, a log
# line, a process state, a lock held), never for a fixed time; the short pause between
# tries only spaces the polls.
wait_for() {
    local what=$1 secs=$2
    shift 2
    local deadline=$(($(date +%s%N) + secs * 1000000000))
    until "$@"; do
        [ "$(date +%s%N)" -lt "$deadline" ] || fail "waited ${secs} s for $what"
        sleep 0.02
    done
}

# has_file PATTERN: a file matches the glob PATTERN (for wait_for).
has_file() {
    compgen -G "$1" >/dev/null
}

# hold_mount_ns: a private mount namespace that lives as long as the test, held by a
# background `unshare -m ... sleep`; sets NS_PID, and INST_WRAP to run commands in it.
# Ready once unshare has exec'd sleep: by then the namespace is made and private, so a
# mount made in it cannot propagate out.
hold_mount_ns() {
    unshare -m --propagation private sleep 300 &
    NS_PID=$!
    wait_for "unshare -m (pid $NS_PID) to hold a private mount namespace" 60 ns_ready "$NS_PID"
    INST_WRAP="nsenter -t $NS_PID -m"
}
ns_ready() {
    [ "$(cat "/proc/$1/comm" 2>/dev/null)" = sleep ] &&
        [ "$(readlink "/proc/$1/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ]
}

# Host root with os-release and, optionally, NVIDIA GPUs: mkroot DIR [ID [BUILD_ID]] [--gpu 10de:2330]...
mkroot() {
    local dir=$1 id=${2:-cos} build=${3:-17800.66.78}
    shift $(($# < 3 ? $# : 3))
    mkdir -p "$dir/etc"
    printf 'NAME="Test OS"\nID=%s\nVERSION_ID=117\nBUILD_ID=%s\nPRETTY_NAME="Test OS %s"\n' \
        "$id" "$build" "$id" >"$dir/etc/os-release"
    local n=4
    while [ $# -gt 0 ]; do
        [ "$1" = --gpu ] || fail "mkroot: unknown argument $1"
        add_pci "$dir" "0000:00:0$n.0" "${2%%:*}" "${2##*:}" 0x030200
        n=$((n + 1))
        shift 2
    done
}

# add_pci ROOT BDF VENDOR DEVICE CLASS: a PCI function as sysfs shows it (a symlink to /sys/devices).
add_pci() {
    local root=$1 bdf=$2 vendor=$3 device=$4 class=$5
    local dev="$root/sys/devices/pci0000:00/$bdf"
    mkdir -p "$dev" "$root/sys/bus/pci/devices"
    printf '0x%s\n' "$vendor" >"$dev/vendor"
    printf '0x%s\n' "$device" >"$dev/device"
    printf '%s\n' "$class" >"$dev/class"
    ln -sfn "../../../devices/pci0000:00/$bdf" "$root/sys/bus/pci/devices/$bdf"
}

# The installer with this test's defaults; output in $T/out and $T/err, status in $RC.
# With FAKE_KERNEL set (to anything), it runs against the fake kernel, whose state is the
# test's host root; FAKE_KERNEL_FAIL injects errors (tests/tools/fakekernel.c).
inst() {
    local pre=()
    [ -n "${FAKE_KERNEL:-}" ] && pre=(env LD_PRELOAD="$FAKEKERNEL" FAKE_KERNEL_ROOT="$T/root"
        FAKE_KERNEL_FAIL="${FAKE_KERNEL_FAIL:-}" NVML_STANDIN_FAIL="${NVML_STANDIN_FAIL:-}"
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0")
    # INST_WRAP: a command to run it under (nsenter into a test's mount namespace).
    [ -n "${INST_WRAP:-}" ] && pre=($INST_WRAP "${pre[@]}")
    set +e
    "${pre[@]}" "$BIN" --root "$T/root" "$@" >"$T/out" 2>"$T/err"
    RC=$?
    set -e
}

# A host root a kernel can be faked in: /dev, /proc, the kernel's trust switches, the
# firmware loader's path, and /lib/modules/$KERNEL with drm and drm_kms_helper (what
# nvidia-drm needs) and nouveau, indexed by depmod. mkkernel ROOT
mkkernel() {
    local r=$1 tree="$1/lib/modules/$KERNEL/kernel/drivers/gpu/drm"
    mkdir -p "$r/dev" "$r/proc" "$r/lib/firmware" "$tree/nouveau" \
        "$r/sys/module/module/parameters" "$r/sys/kernel/security" \
        "$r/sys/module/firmware_class/parameters"
    echo N >"$r/sys/module/module/parameters/sig_enforce"
    echo "[none] integrity confidentiality" >"$r/sys/kernel/security/lockdown"
    : >"$r/sys/module/firmware_class/parameters/path"
    for m in drm drm_kms_helper nouveau; do
        local dst="$tree/$m.ko"
        [ "$m" = nouveau ] && dst="$tree/nouveau/nouveau.ko"
        # The fixtures hold them for $KERNEL and $OTHER_KERNEL (a compile each is 50 ms).
        if [ -f "${FIX:-}/kmod/$KERNEL/$m.ko" ]; then
            cp "$FIX/kmod/$KERNEL/$m.ko" "$dst"
        else
            stub_kmod "$m" "$KERNEL" "$dst"
        fi
    done
    depmod -b "$r" "$KERNEL" 2>/dev/null
}

# stub_kmod NAME KERNEL DST: an object with only the .modinfo of module NAME for KERNEL.
stub_kmod() {
    local c
    c=$(mktemp --suffix=.c)
    printf 'static const char mi[] __attribute__((section(".modinfo"), used, aligned(1))) = "license=GPL\\0name=%s\\0vermagic=%s SMP preempt mod_unload modversions ";\n' \
        "$1" "$2" >"$c"
    cc -c -o "$3" "$c"
    rm -f "$c"
}

# A repository of packages with signed modules: new_signed_repo DIR [VERSION[:tag]...]
new_signed_repo() {
    repo_from spkg "$@"
}

# The CDI JSON schema (schema.json, defs.json), beside the checkout or in it.
cdi_schema_dir() {
    local d
    for d in "${CDI_SCHEMA_DIR:-}" "$SRC/shared/reference/cdi" "$SRC/../shared/reference/cdi"; do
        [ -n "$d" ] && [ -f "$d/schema.json" ] && [ -f "$d/defs.json" ] && {
            echo "$d"
            return 0
        }
    done
    return 0
}

# tests/k8s's node modules (kubernetes-models, js-yaml), for the tests that check manifests.
# Several such tests run at once, and `npm ci` empties node_modules before it fills it: the
# install holds a lock (on the tracked lock file, which npm ci only reads), and a stamp
# written after it succeeds, not a directory that appears early, says it is complete.
k8s_node_modules() {
    local dir=$SRC/tests/k8s
    flock "$dir/package-lock.json" sh -c '
        cd "$1" || exit 1
        [ -f node_modules/.ndi-complete ] && [ ! package-lock.json -nt node_modules/.ndi-complete ] && exit 0
        npm ci --no-audit --no-fund --silent && touch node_modules/.ndi-complete' sh "$dir" ||
        fail "npm ci in tests/k8s failed (the npm registry must be reachable once)"
}

# The node agent on the fake kernel, in the background (its pid in $apid, its log appended
# to $T/agent.log), HTTP on 127.0.0.1, a look a second, with the options given; the stand-in daemons it starts
# (tests/standin/daemon.c) hold the driver under $T/root and record themselves in $dlog.
start_agent() {
    env LD_PRELOAD="$FAKEKERNEL" FAKE_KERNEL_ROOT="$T/root" STANDIN_ROOT="$T/root" STANDIN_DAEMON_LOG="${dlog:-}" \
        STANDIN_DAEMON_FAIL="${STANDIN_DAEMON_FAIL:-}" \
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
        "$BIN" --root "$T/root" agent --listen 127.0.0.1:0 --interval 1 --kernel-release "$KERNEL" \
        "$@" 2>>"$T/agent.log" &
    apid=$!
}
# restart_agent OPTIONS...: the agent of gpu-node-1 started again (the one at $apid, if any,
# ended first) against the API stand-in ($KUBE_SA) with OPTIONS, its log emptied; returns
# once it watches the node.
restart_agent() {
    [ -z "${apid:-}" ] || { kill "$apid"; wait "$apid" 2>/dev/null || true; }
    : >"$T/agent.log"
    start_agent --node-name gpu-node-1 --kube-sa-dir "$KUBE_SA" "$@"
    wait_for "the agent's start" 60 grep -q -- "agent: watching the node" "$T/agent.log"
}
stop_agent() {
    kill -TERM "$apid"
    wait "$apid" || fail "the agent's exit on SIGTERM"
}
# A stand-in daemon left behind (an agent that lost it) is found by its executable, which
# lives under $T.
kill_leftovers() {
    local p
    for p in /proc/[0-9]*; do
        case $(readlink "$p/exe" 2>/dev/null) in "$T"/*) kill -KILL "${p#/proc/}" 2>/dev/null || true ;; esac
    done
}

kernel_args() {
    echo --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" --fetch-timeout 20 \
        --module-cert "$FIX/keys/modkey.crt"
}

# Loaded modules, sorted, on one line.
loaded_modules() {
    awk '{print $1}' "$T/root/proc/modules" 2>/dev/null | sort | tr '\n' ' '
}

# devnode NAME: "c MAJ:MIN MODE" of a node under the host root's /dev, or "missing".
devnode() {
    local f="$T/root/dev/$1" t maj min mode
    [ -e "$f" ] || [ -L "$f" ] || {
        echo missing
        return
    }
    IFS='|' read -r t maj min mode < <(stat -c '%F|%t|%T|%a' "$f")
    [ "$t" = "character special file" ] && t=c
    echo "$t $((16#$maj)):$((16#$min)) $mode"
}

install_args() {
    echo --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" --skip-modules --fetch-timeout 20
}

expect_rc() {
    local want=$1
    shift
    inst "$@"
    if [ "$RC" != "$want" ]; then
        echo "--- stdout" >&2
        cat "$T/out" >&2
        echo "--- stderr" >&2
        cat "$T/err" >&2
        fail "expected exit $want, got $RC: $*"
    fi
}

expect_err() {
    grep -q -- "$1" "$T/err" || {
        cat "$T/err" >&2
        fail "stderr lacks '$1'"
    }
}

expect_out() {
    grep -q -- "$1" "$T/out" || {
        cat "$T/out" >&2
        fail "stdout lacks '$1'"
    }
}

assert_eq() {
    [ "$1" = "$2" ] || fail "${3:-value}: expected '$2', got '$1'"
}

# The driver version the install dir currently serves (via status --json).
installed_version() {
    ${INST_WRAP:-} "$BIN" --root "$T/root" status --json 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["driver_version"] or "")'
}

IDIR_REL=home/kubernetes/bin/nvidia
idir() { echo "$T/root/$IDIR_REL"; }

# A listing of a tree (names, types, sizes, link targets, modes) to compare before/after.
snapshot() {
    (cd "$1" && find . -printf '%p %y %s %l %m\n' 2>/dev/null | sort)
}

# Fresh repository in DIR from fixture packages: new_repo DIR [VERSION[:tag]...]
new_repo() {
    repo_from pkg "$@"
}

# repo_from PREFIX DIR [VERSION[:tag]...]: the fixture packages $FIX/PREFIX-VERSION.tar.zst.
repo_from() {
    local prefix=$1 dir=$2
    shift 2
    mkdir -p "$dir"
    for spec in "$@"; do
        local v=${spec%%:*} tagopt=()
        [ "$spec" != "$v" ] && tagopt=(--tag "${spec#*:}")
        "$SRC/scripts/make-repo" add --repo "$dir" --key "$FIX/keys/key.pem" --version "$v" \
            --kernel "$KERNEL" "${tagopt[@]}" "$FIX/$prefix-$v.tar.zst" >/dev/null
    done
}

# A repository in $T/srv/repo whose one driver ($V_NEW, default) carries MIB MiB of
# incompressible firmware, so that its transfer takes measurable time. Sets pkg (the
# package's path under $T/srv) and size. big_package_repo MIB
big_package_repo() {
    cp -a "$FIX/drv-$V_NEW" "$T/drv"
    head -c $(($1 * 1024 * 1024)) /dev/urandom >"$T/drv/firmware/nvidia/$V_NEW/big.bin"
    "$SRC/scripts/make-repo" pack "$T/drv" "$T/big.tar.zst"
    mkdir -p "$T/srv/repo"
    "$SRC/scripts/make-repo" add --repo "$T/srv/repo" --key "$FIX/keys/key.pem" --version "$V_NEW" \
        --kernel "$KERNEL" --tag default "$T/big.tar.zst" >/dev/null
    pkg=$(cd "$T/srv" && ls repo/packages/*/*/*.tar.zst)
    size=$(stat -c %s "$T/srv/$pkg")
}

# Rewrites index.json with a Python expression over `idx`, then re-signs it (--new-key: the
# edit is ours, so the old signature no longer verifying is no sign of another key).
edit_index() {
    local repo=$1 expr=$2
    python3 - "$repo/index.json" "$expr" <<'EOF'
import json, sys
path, expr = sys.argv[1], sys.argv[2]
idx = json.load(open(path))
exec(expr)
open(path, "w").write(json.dumps(idx, indent=2))
EOF
    "$SRC/scripts/make-repo" sign --repo "$repo" --key "$FIX/keys/key.pem" --new-key
}

# Starts the test HTTP server on DIR; sets HTTP (base URL), HTTP_LOG and HTTP_FAULTS.
# It stops once the test's shell (its parent) is gone (serverutil.py's watchdog), so its
# lifetime, counted from its start, is only a backstop: 1800 s, past any test's length
# under ASan on a loaded machine.
start_httpd() {
    local dir=$1 name=${2:-httpd} scheme=http
    shift
    [ $# -gt 0 ] && shift
    case " $* " in *" --tls-cert "*) scheme=https ;; esac
    HTTP_LOG="$T/$name.log"
    HTTP_FAULTS="$T/$name.faults.json"
    : >"$HTTP_LOG"
    rm -f "$T/$name.port"
    python3 "$SRC/tests/tools/httpd.py" --dir "$dir" --port-file "$T/$name.port" \
        --log "$HTTP_LOG" --faults "$HTTP_FAULTS" --lifetime 1800 "$@" &
    wait_for "httpd to write its port" 60 test -s "$T/$name.port"
    HTTP="$scheme://127.0.0.1:$(cat "$T/$name.port")"
}

# oci_registry_start MODE [--storage-redirect]: a real OCI registry (Debian's docker-registry,
# tests/tools/oci-registry.py) on 127.0.0.1 over TLS, MODE anonymous, htpasswd or token, in
# $T/oci-MODE (-2, -3... for more); its D/env sourced: OCI_HOST, OCI_CA, OCI_CERT_DIR,
# OCI_USER, OCI_PASS, OCI_AUTH_FILE, OCI_PID, OCI_LOG, OCI_TOKEN_LOG, OCI_STORAGE_LOG, OCI_DIR.
# As the other test servers, it stops by itself once the test's shell is gone (--owner).
oci_registry_start() {
    local mode=$1 d=$T/oci-$1 n=1
    shift
    while [ -e "$d" ]; do
        n=$((n + 1))
        d=$T/oci-$mode-$n
    done
    python3 "$SRC/tests/tools/oci-registry.py" start --dir "$d" --mode "$mode" \
        --owner "$BASHPID" "$@" || fail "the $mode registry in $d did not start"
    . "$d/env"
}
# oci_registry_stop [DIR]: stops the registry in DIR ($OCI_DIR) and waits until it is gone.
oci_registry_stop() {
    python3 "$SRC/tests/tools/oci-registry.py" stop --dir "${1:-$OCI_DIR}" ||
        fail "the registry in ${1:-$OCI_DIR} did not stop"
}

# oci_small_layout DIR TAG: an OCI image layout (image-spec's image-layout.md) of one small
# image (a config and one uncompressed tar layer holding hello.txt), tagged TAG, for skopeo.
oci_small_layout() {
    python3 - "$1" "$2" <<'PY'
import hashlib, io, json, os, sys, tarfile
d, tag = sys.argv[1], sys.argv[2]
os.makedirs(d + "/blobs/sha256", exist_ok=True)
def blob(data, media_type):
    h = hashlib.sha256(data).hexdigest()
    with open("%s/blobs/sha256/%s" % (d, h), "wb") as f:
        f.write(data)
    return {"mediaType": media_type, "digest": "sha256:" + h, "size": len(data)}
buf, data = io.BytesIO(), b"hello, registry\n"
with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
    info = tarfile.TarInfo("hello.txt")
    info.size = len(data)
    t.addfile(info, io.BytesIO(data))
layer = blob(buf.getvalue(), "application/vnd.oci.image.layer.v1.tar")
config = blob(json.dumps({"architecture": "amd64", "os": "linux", "rootfs": {
    "type": "layers", "diff_ids": [layer["digest"]]}}).encode(),
    "application/vnd.oci.image.config.v1+json")
mt = "application/vnd.oci.image.manifest.v1+json"
manifest = blob(json.dumps({"schemaVersion": 2, "mediaType": mt, "config": config,
                            "layers": [layer]}).encode(), mt)
manifest["annotations"] = {"org.opencontainers.image.ref.name": tag}
with open(d + "/index.json", "w") as f:
    json.dump({"schemaVersion": 2, "manifests": [manifest]}, f)
with open(d + "/oci-layout", "w") as f:
    json.dump({"imageLayoutVersion": "1.0.0"}, f)
PY
}

# oci_standin_start NAME REPO [oci-standin.py options]: the hostile registry stand-in
# (tests/tools/oci-standin.py) serving the repository directory REPO as the OCI artifact,
# in $T/NAME, its env sourced (STANDIN_REF, STANDIN_CA, STANDIN_AUTH_FILE, STANDIN_FAULTS,
# STANDIN_LOG, STANDIN_TOKEN_LOG, STANDIN_STORAGE_LOG); the faults: oci_standin_faults.
# It stops by itself once the test's shell is gone.
oci_standin_start() {
    # The owner read here: in the background command, $BASHPID is the stand-in's own pid.
    local d=$T/$1 repo=$2 owner=$BASHPID pid
    shift 2
    rm -f "$d/env"
    python3 "$SRC/tests/tools/oci-standin.py" --dir "$d" --repo "$repo" --owner "$owner" \
        "$@" 2>>"$d.err" &
    pid=$!
    wait_for "the registry stand-in in $d to write its env" 60 standin_ready "$d" "$pid"
    . "$d/env"
}
standin_ready() {
    [ -s "$1/env" ] && return 0
    kill -0 "$2" 2>/dev/null || fail "the registry stand-in in $1 exited: $(cat "$1.err")"
    return 1
}
# oci_standin_faults AUTH [FAULT[:KEY=VALUE,...]]...: the stand-in's next answers under auth
# AUTH (none, basic, token) with FAULTs (oci-standin.py's names; numbers and true/false as
# JSON), e.g. oci_standin_faults none lying-blob:layer=index
oci_standin_faults() {
    python3 - "$STANDIN_FAULTS" "$@" <<'PY'
import json, os, sys
path, auth, faults = sys.argv[1], sys.argv[2], []
for spec in sys.argv[3:]:
    name, _, params = spec.partition(":")
    fault = {"fault": name}
    for kv in filter(None, params.split(",")):
        k, _, v = kv.partition("=")
        fault[k] = json.loads(v) if v in ("true", "false") or v.isdigit() else v
    faults.append(fault)
with open(path + ".tmp", "w") as f:
    json.dump({"auth": auth, "faults": faults}, f)
os.replace(path + ".tmp", path)
PY
}

# http_settle: returns once the server at $HTTP has logged every answer it began before
# (GET /.settle, tests/tools/httpd.py), or fails the test. A file's line is written after
# its bytes went out: the client can have them all and exit first, and under load the line
# comes later still (seen as a count one short, or a stray line after a truncation). An
# answer a stall or a trickle holds is not waited for while held.
http_settle() {
    local code
    code=$(curl -sk --noproxy '*' --max-time 90 -o "$T/settle.out" -w '%{http_code}' \
        "$HTTP/.settle") || true
    [ "$code" = 204 ] ||
        fail "the server at $HTTP did not settle (HTTP $code): $(cat "$T/settle.out" 2>/dev/null)"
}

# served_bytes and served_requests are called inside $(...), where http_settle's `fail`
# would end only the substitution, leaving '' for the caller to compare: so when the server
# does not settle they print that (after http_settle's FAIL line) in place of a number, and
# return 1. The caller's check then fails naming it; called at the top level, the test ends.
settled_or_say() {
    ( http_settle ) || {
        echo "no count: the server did not settle (the FAIL line above)"
        return 1
    }
}

# Bytes the server sent for paths containing SUBSTR.
served_bytes() {
    settled_or_say || return 1
    python3 - "$HTTP_LOG" "$1" <<'EOF'
import json, sys
total = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    if sys.argv[2] in e["path"]:
        total += e["bytes"]
print(total)
EOF
}

# Empties the server's log once every answer given so far is in it.
http_log_reset() {
    http_settle
    : >"$HTTP_LOG"
}

# Requests made for paths containing SUBSTR.
served_requests() {
    settled_or_say || return 1
    grep -c -- "$1" "$HTTP_LOG" || true
}

# A port on 127.0.0.1 where nothing listens. Chosen below the kernel's ephemeral range, so
# that a server of a test running beside this one, which binds port 0, cannot be given it.
dead_port() {
    python3 - <<'EOF'
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
while True:
    port = random.randrange(min(10000, low // 2), low)
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
    print(port)
    break
EOF
}

# run_source DRV: the stand-in driver DRV ($FIX/drv-$V_NEW, $FIX/odrv) at $T/src as NVIDIA's
# installer extracts its .run (build-driver-package --source): the libraries and programs,
# and V_NEW's GSP firmware in firmware/.
run_source() {
    mkdir -p "$T/src/firmware"
    find "$1/lib64" -type f -exec cp {} "$T/src/" \;
    cp "$1/bin/"* "$T/src/"
    cp "$1/firmware/nvidia/$V_NEW/"*.bin "$T/src/firmware/"
}

# flavour_modules: each flavour's modules, the stand-in's of V_NEW, in $T/mods-proprietary
# and $T/mods-open; the open nvidia.ko says so in its license, as NVIDIA's open sources
# declare it ("Dual MIT/GPL").
flavour_modules() {
    mkdir -p "$T/mods-proprietary" "$T/mods-open"
    cp "$FIX/drv-$V_NEW/kernel/"*.ko "$T/mods-proprietary/"
    cp "$FIX/drv-$V_NEW/kernel/"*.ko "$T/mods-open/"
    objcopy -O binary --only-section=.modinfo "$T/mods-open/nvidia.ko" "$T/modinfo"
    sed 's|license=NVIDIA|license=Dual MIT/GPL|' "$T/modinfo" >"$T/modinfo-open"
    objcopy --update-section .modinfo="$T/modinfo-open" "$T/mods-open/nvidia.ko"
}

# kube_stub STATE_JSON [LIFETIME]: tests/tools/kube-api.py, the API server stand-in, on
# 127.0.0.1 with TLS, started with the objects in STATE_JSON; a service account for it in
# $KUBE_SA (token, ca.crt, namespace kube-system) and KUBERNETES_SERVICE_HOST/PORT exported,
# as a pod has them. $KUBE_STATE is its store after each change, $KUBE_LOG its requests,
# $KUBE_FAULTS the faults it injects, all in $KUBE_DIR (a new one each call). It stops with
# the test (its parent) or its lifetime (1800 s unless given, a backstop as start_httpd's).
# A watch the stand-in serves without timeoutSeconds lasts its lifetime.
kube_stub() {
    local d
    d=$(mktemp -d "$T/kube.XXXXXX")
    "$SRC/tests/tools/kube-certs" "$d" 127.0.0.1 || fail "kube_stub: certificates"
    echo "token-$RANDOM" >"$d/sa/token"
    printf kube-system >"$d/sa/namespace"
    KUBE_DIR=$d KUBE_SA=$d/sa KUBE_STATE=$d/state.json KUBE_LOG=$d/requests.log
    KUBE_FAULTS=$d/faults.json
    cp "$1" "$KUBE_STATE"
    python3 "$SRC/tests/tools/kube-api.py" "$d/port" "$d/api.pem" "$d/api.key" "$d/sa/token" \
        "$KUBE_STATE" "$KUBE_FAULTS" "$KUBE_LOG" "${2:-1800}" &
    wait_for "the API server stand-in" 60 test -s "$d/port"
    export KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT
    KUBERNETES_SERVICE_PORT=$(cat "$d/port")
    # For kubectl (kubectl_stub): the same server, CA and token.
    cat >"$d/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: stub, cluster: {server: "https://127.0.0.1:$KUBERNETES_SERVICE_PORT", certificate-authority: "$d/sa/ca.crt"}}]
users: [{name: agent, user: {tokenFile: "$d/sa/token"}}]
contexts: [{name: stub, context: {cluster: stub, user: agent}}]
current-context: stub
EOF
}

# kubectl_stub ARGS...: kubectl itself ($KUBECTL, else PATH's) against the stand-in that
# kube_stub started last, its discovery cache in $KUBE_DIR.
kubectl_stub() {
    KUBECONFIG=$KUBE_DIR/kubeconfig HOME=$KUBE_DIR "${KUBECTL:-kubectl}" "$@"
}

# run_doc_block NAME: docs/operations.md's ```sh test=NAME block, unchanged, run by `bash -e`
# with kubectl (kubectl_stub's) against the stand-in and NODE=$NODE; its output goes to
# $T/NAME.out, its status is returned.
run_doc_block() {
    python3 "$SRC/tests/tools/runbook.py" block "$SRC/docs/operations.md" "$1" >"$T/$1.sh" ||
        fail "docs/operations.md has no block test=$1"
    mkdir -p "$KUBE_DIR/bin"
    ln -sf "$(command -v "${KUBECTL:-kubectl}")" "$KUBE_DIR/bin/kubectl"
    env PATH="$KUBE_DIR/bin:$PATH" KUBECONFIG="$KUBE_DIR/kubeconfig" HOME="$KUBE_DIR" NODE="$NODE" \
        bash -e "$T/$1.sh" >"$T/$1.out" 2>&1
}

# upgrade_node_has PY-EXPR: the expression holds of what the stand-in stores (the node
# agent's driver upgrade): n (its first Node), state (the upgrade-state label), rec (the
# upgrade record), unsched, leases (by name), holders (lease name: holder), slot (slot 0's
# holder), pods (names) and events (reasons, in order).
upgrade_node_has() {
    python3 - "$KUBE_STATE" "$1" <<'PY'
import json, sys
db = json.load(open(sys.argv[1]))
n = db["nodes"][0]
state = n["metadata"].get("labels", {}).get("nvidia.com/gpu.driver-installer.upgrade-state", "")
rec = json.loads(n["metadata"].get("annotations", {}).get("nvidia.com/gpu.driver-installer.upgrade", "{}"))
unsched = n.get("spec", {}).get("unschedulable", False)
leases = {x["metadata"]["name"]: x for x in db["leases"]}
holders = {k: v["spec"].get("holderIdentity", "") for k, v in leases.items()}
slot = holders.get("nvidia-driver-upgrade-slot-0", "")
pods = [p["metadata"]["name"] for p in db["pods"]]
events = [e["reason"] for e in db["events"]]
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}

# leave_pending VERSION [ROOT]: the installer (as the DaemonSet's init container) leaves
# VERSION pending on the node at ROOT ($T/root), busy with a process outside pods that holds
# /dev/nvidiactl; then that process ends.
leave_pending() {
    local r=${2:-$T/root}
    mkdir -p "$r/proc/4242/fd"
    ln -sfn /dev/nvidiactl "$r/proc/4242/fd/3"
    set +e
    env LD_PRELOAD="$FAKEKERNEL" FAKE_KERNEL_ROOT="$r" \
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
        "$BIN" --root "$r" install --when-busy defer --driver-version "$1" $(kernel_args) >"$T/out" 2>"$T/err"
    RC=$?
    set -e
    rm -rf "$r/proc/4242"
    [ "$RC" = 0 ] && [ -f "$r/$IDIR_REL/.pending.json" ] ||
        fail "leave_pending $1: exit $RC, $(tail -3 "$T/err")"
}

# evictions_of NS/NAME: how many Evictions of pod NS/NAME the API stand-in answered (2xx or
# 429), from its request log $KUBE_LOG.
evictions_of() {
    python3 - "$KUBE_LOG" "$1" <<'PY'
import json, sys
ns, name = sys.argv[2].split("/")
print(sum(1 for r in map(json.loads, open(sys.argv[1])) if r["method"] == "POST"
          and r["path"] == "/api/v1/namespaces/%s/pods/%s/eviction" % (ns, name)))
PY
}

# upgrade_node [--pending]: the node at $T/root (a COS node with one GPU) with $V_OLD
# installed from the signed repository $T/repo ($V_OLD the default, $V_NEW), which
# NVIDIA_DRIVER_REPO and NVIDIA_DRIVER_REPO_KEY name for what runs next; with --pending,
# $V_NEW left pending (leave_pending): the start of the agent's upgrade tests on one node.
upgrade_node() {
    mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
    mkkernel "$T/root"
    new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
    export NVIDIA_DRIVER_REPO=file://$T/repo NVIDIA_DRIVER_REPO_KEY=$FIX/keys/pub.pem
    expect_rc 0 install --driver-version "$V_OLD" $(kernel_args)
    if [ "${1:-}" = --pending ]; then
        leave_pending "$V_NEW"
    fi
}

# pending_fleet OLD NEW NODE...: a node root per NODE at $T/NODE (a COS node with one GPU,
# OLD installed and NEW left pending behind a holder), from one signed repository, and the
# API stand-in's cluster of those Nodes (kube_stub): the start of every fleet test.
pending_fleet() {
    local old=$1 new=$2 n
    shift 2
    new_signed_repo "$T/repo" "$old:default" "$new"
    export NVIDIA_DRIVER_REPO=file://$T/repo NVIDIA_DRIVER_REPO_KEY=$FIX/keys/pub.pem
    for n in "$@"; do
        mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
        mkkernel "$T/root"
        expect_rc 0 install --driver-version "$old" $(kernel_args)
        leave_pending "$new"
        mv "$T/root" "$T/$n"
    done
    python3 - "$@" >"$T/cluster.json" <<'PY'
import json, sys
print(json.dumps({"nodes": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n}, "spec": {}}
                            for n in sys.argv[1:]]}))
PY
    kube_stub "$T/cluster.json"
}

# kube_api METHOD PATH [CURL ARGS...]: a request to the stand-in, as a client with the
# account's token; the body goes to stdout, the status to $KUBE_DIR/status.
kube_api() {
    local m=$1 p=$2
    shift 2
    curl -s -X "$m" --cacert "$KUBE_SA/ca.crt" -H "Authorization: Bearer $(cat "$KUBE_SA/token")" \
        -w '%{stderr}%{http_code}' "$@" "https://127.0.0.1:$KUBERNETES_SERVICE_PORT$p" 2>"$KUBE_DIR/status"
}
