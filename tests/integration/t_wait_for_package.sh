# install --wait-for-package (docs/design.md, "A kernel nobody built for"): a node whose
# kernel the repository has no package for waits instead of exiting 3. It says so on its
# Node (the node-image and wants annotations, the Event DriverPackageWanted, in the API
# stand-in's journal with the JSON docs/design.md gives), in its record (status, status
# --json, doctor) and its metrics, without the node lock between checks; each check asks
# the repository afresh although the index's max_age would let the node reuse its copy; a
# package published while it waits is installed at the next check, the wants annotation
# removed and DriverPackageArrived posted. SIGTERM ends a wait at once (exit 143); a
# refusal a new package cannot lift (a version the repository lacks, a bad signature) does
# not wait; without API access the wait goes on and says once that it is not published.
FAKE_KERNEL=1
# debian_root: a Debian node, whose os-release has no BUILD_ID, with one GPU.
debian_root() {
    mkroot "$T/root" debian x --gpu 10de:2330
    printf 'ID=debian\nVERSION_ID=12\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n' \
        >"$T/root/etc/os-release"
}
debian_root
mkkernel "$T/root"
# The repository serves the driver for another kernel only, and lets nodes reuse its index
# for an hour: a wait that trusted its copy would never see the package come.
mkdir -p "$T/srv/repo"
"$SRC/scripts/make-repo" add --repo "$T/srv/repo" --key "$FIX/keys/key.pem" --version "$V_OLD" \
    --kernel "$OTHER_KERNEL" --tag default "$FIX/spkg-$V_OLD.tar.zst" >/dev/null
"$SRC/scripts/make-repo" sign --repo "$T/srv/repo" --key "$FIX/keys/key.pem" --max-age 3600 >/dev/null
start_httpd "$T/srv"
cat >"$T/cluster.json" <<'JSON'
{"nodes": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-1"}, "spec": {}}]}
JSON
kube_stub "$T/cluster.json"
export NVIDIA_DRIVER_REPO=$HTTP/repo
metrics=var/lib/node_exporter/textfile_collector/ndi.prom
mkdir -p "$T/root/${metrics%/*}"

# wait_bg ARGS...: the installer as the DaemonSet's init container runs it, in the
# background (pid in $wpid, log in $wlog or $T/wait.log).
wait_bg() {
    # A log of an earlier run must not answer a wait for this one's lines: the background
    # process truncates it only once it starts (seen: SIGTERM sent before the wait began).
    rm -f "${wlog:-$T/wait.log}"
    env LD_PRELOAD="$FAKEKERNEL" FAKE_KERNEL_ROOT="$T/root" \
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
        NVIDIA_WAIT_FOR_PACKAGE=yes "$BIN" --root "$T/root" install $(kernel_args) \
        --metrics-file "/$metrics" "$@" >"$T/wait.out" 2>"${wlog:-$T/wait.log}" &
    wpid=$!
}
trap 'rc=$?; kill -CONT ${apid:-} ${wpid:-} 2>/dev/null || true; kill ${apid:-} ${wpid:-} 2>/dev/null || true; [ $rc = 0 ] || tail -20 "$T/wait.log"' EXIT
said() { grep -q -- "$1" "$T/wait.log"; }
# node_has PY-EXPR over n (the Node), ann (its annotations), events (the Events' reasons).
node_has() {
    python3 - "$KUBE_STATE" "$1" <<'PY'
import json, sys
db = json.load(open(sys.argv[1]))
n = db["nodes"][0]
ann = n["metadata"].get("annotations", {})
events = [e["reason"] for e in db["events"]]
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}
index_gets() { served_requests '"/repo/index.json"'; }
waiting_checks() { grep -c "waiting for the repository to serve this node's package" "$T/wait.log" || true; }
checks_past() { [ "$(waiting_checks)" -gt "$1" ]; }

# 1. Waiting: on the Node, in the record, status, doctor and the metrics. The API server
# refuses the node-image patch twice: one warning, told again at the next checks, the wait
# unaffected.
printf '{"faults": [{"method": "PATCH", "path": "/api/v1/nodes/gpu-node-1", "body": "node-image", "status": 403, "times": 2}]}\n' \
    >"$KUBE_FAULTS"
wait_bg --node-name gpu-node-1 --kube-sa-dir "$KUBE_SA" --wait-for-package-interval 1
wait_for "the wait's first record" 30 has_file "$T/root/$IDIR_REL/.waiting.json"
wait_for "the Event DriverPackageWanted" 30 node_has '"DriverPackageWanted" in events'
wait_for "the node-image annotation, told again" 30 node_has '"nvidia.com/gpu.driver-installer.node-image" in ann'
[ "$(grep -c "the Node could not be told: the install goes on" "$T/wait.log")" = 1 ] ||
    fail "the refused patches not said once: $(cat "$T/wait.log")"
node_has 'json.loads(ann["nvidia.com/gpu.driver-installer.node-image"]) == {"os": "debian", "os_build": None, "kernel": "'"$KERNEL"'", "arch": "x86_64"}' ||
    fail "node-image: $(cat "$KUBE_STATE")"
python3 - "$KUBE_STATE" "$KERNEL" "$V_OLD" <<'PY' || fail "wants: $(cat "$KUBE_STATE")"
import json, re, sys
db = json.load(open(sys.argv[1]))
w = json.loads(db["nodes"][0]["metadata"]["annotations"]["nvidia.com/gpu.driver-installer.wants"])
since = w.pop("since")
assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", since), since
assert w == {"kernel": sys.argv[2], "arch": "x86_64", "os": "debian", "os_build": None,
             "driver_version": sys.argv[3], "flavour": "proprietary"}, w
ev = [e for e in db["events"] if e["reason"] == "DriverPackageWanted"]
assert len(ev) == 1, ev
e = ev[0]
assert e["type"] == "Warning" and e["involvedObject"]["name"] == "gpu-node-1", e
assert e["involvedObject"]["kind"] == "Node" and e["action"] == "DriverPackage", e
assert "waiting for the repository to serve kernel " + sys.argv[2] in e["message"], e
PY
# Between two checks the node lock is free: status and doctor answer at once.
gets=$(index_gets)
wait_for "another check" 30 checks_past "$(waiting_checks)"
[ "$(index_gets)" -gt "$gets" ] || fail "a check reused the node's copy of the index: $(cat "$HTTP_LOG")"
expect_rc 3 status
expect_out "^waiting: *waiting for the repository to serve kernel $KERNEL (driver $V_OLD, proprietary) since 20"
expect_out "has no package for kernel $KERNEL"
expect_rc 3 status --json
python3 - "$T/out" "$KERNEL" "$V_OLD" <<'PY' || fail "status --json: $(cat "$T/out")"
import json, sys
w = json.load(open(sys.argv[1]))["waiting_for_package"]
assert w["kernel"] == sys.argv[2] and w["driver_version"] == sys.argv[3], w
assert w["flavour"] == "proprietary" and w["arch"] == "x86_64" and w["os"] == "debian", w
assert w["os_build"] is None and "has no package for kernel" in w["reason"], w
assert w["since"] <= w["last_check"] <= w["next_check"], w
PY
python3 "$SRC/tests/tools/json-contract.py" "$SRC/docs/json.md" '`status --json`' "$T/out" >"$T/contract.out" 2>&1 ||
    fail "docs/json.md: $(cat "$T/contract.out")"
inst doctor
expect_out "^\[warn\] package  *waiting for the repository to serve kernel $KERNEL (driver $V_OLD, proprietary) since "
expect_out "fix: publish a package of that driver for this kernel"
prom=$T/root/$metrics
grep -q "^nvidia_driver_installer_waiting_for_package{kernel=\"$KERNEL\",driver_version=\"$V_OLD\",flavour=\"proprietary\",arch=\"x86_64\"} 1$" "$prom" ||
    fail "metrics: $(cat "$prom")"
grep -Eq '^nvidia_driver_installer_waiting_since_seconds [1-9][0-9]{9}$' "$prom" || fail "since: $(cat "$prom")"
promtool check metrics <"$prom" >"$T/promtool.out" 2>&1 || fail "promtool: $(cat "$T/promtool.out")"

# 2. The package is published: installed at the next check, the ask withdrawn.
"$SRC/scripts/make-repo" add --repo "$T/srv/repo" --key "$FIX/keys/key.pem" --version "$V_OLD" \
    --kernel "$KERNEL" "$FIX/spkg-$V_OLD.tar.zst" >/dev/null
wait_for "the Event DriverPackageArrived" 30 node_has '"DriverPackageArrived" in events'
wait "$wpid" || fail "the install after the wait: exit $?, $(tail -5 "$T/wait.log")"
node_has '"nvidia.com/gpu.driver-installer.wants" not in ann and "nvidia.com/gpu.driver-installer.node-image" in ann' ||
    fail "the wants annotation stayed: $(cat "$KUBE_STATE")"
said "driver installed" || fail "not installed: $(cat "$T/wait.log")"
[ ! -e "$T/root/$IDIR_REL/.waiting.json" ] || fail "the record stayed"
grep -q '^nvidia_driver_installer_waiting_for_package{kernel="",driver_version="",flavour="",arch=""} 0$' "$prom" ||
    fail "metrics after: $(cat "$prom")"
grep -q '^nvidia_driver_installer_success 1$' "$prom" || fail "success: $(cat "$prom")"
expect_rc 0 status
[ "$(grep -c '^waiting:' "$T/out")" = 0 ] || fail "status still waits: $(cat "$T/out")"
python3 - "$KUBE_STATE" "$V_OLD" <<'PY' || fail "arrived: $(cat "$KUBE_STATE")"
import json, sys
db = json.load(open(sys.argv[1]))
e = [e for e in db["events"] if e["reason"] == "DriverPackageArrived"][0]
assert e["type"] == "Normal" and sys.argv[2] in e["message"], e
PY
# Every call is one the manifests' RBAC grants the installer's service account.
for m in daemonset-preloaded.yaml daemonset-generic.yaml; do
    python3 "$SRC/tests/tools/rbac-check.py" --calls-only "$SRC/$m" nvidia-driver-installer "$KUBE_LOG" \
        >"$T/rbac.out" 2>&1 || fail "RBAC ($m): $(cat "$T/rbac.out")"
done
# The bodies it sent, against the Kubernetes OpenAPI schemas (tests/k8s/check-requests.mjs).
k8s_node_modules
node "$SRC/tests/k8s/check-requests.mjs" "$KUBE_LOG" >"$T/schema.out" 2>&1 ||
    fail "request bodies: $(cat "$T/schema.out")"
for kind in Event Node; do
    grep -q "$kind [0-9]" "$T/schema.out" || fail "no $kind body checked: $(cat "$T/schema.out")"
done

# 3. SIGTERM while waiting ends the wait at once, its record cleared.
rm -rf "$T/root/$IDIR_REL" "$T/root/var/cache/nvidia-driver-installer"
wait_bg --kernel-release 6.1.0-99-amd64 --driver-version latest
wait_for "a wait" 30 said "waiting for the repository to serve this node's package"
t0=$(date +%s%N)
kill -TERM "$wpid"
set +e
wait "$wpid"
rc=$?
set -e
assert_eq "$rc" 143 "the exit on SIGTERM while waiting"
[ $((($(date +%s%N) - t0) / 1000000)) -lt 4000 ] || fail "the wait did not end at once"
said "stopped by SIGTERM before the next check for a package" || fail "$(cat "$T/wait.log")"
[ ! -e "$T/root/$IDIR_REL/.waiting.json" ] || fail "the record stayed after SIGTERM"
# Without --node-name: waits all the same, and says once that the Node is not told.
[ "$(grep -c "the wait is not published on the Node" "$T/wait.log")" = 1 ] ||
    fail "not said once: $(cat "$T/wait.log")"

# Two waits on one root (the DaemonSet's and one by hand, started while the first slept
# without the lock): the record is the last writer's, and a run ends clearing only its own.
# A is stopped while it sleeps so that B writes last; then B is stopped, A SIGTERMed: B's
# record stays. Then B is SIGTERMed: its own record goes.
record_pid() {
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("pid"))' \
        "$T/root/$IDIR_REL/.waiting.json" 2>/dev/null
}
# stop_unlocked PID: PID stopped while it does not hold the node lock. A run logs its wait
# before it lets the lock go (install_wait.c: log_wait, then sleep_unlocked), so a stop
# right after the line could freeze it holding the lock: B would never get it, or A's
# SIGTERM would find it held and leave every record alone, proving nothing. Stopped first,
# then the lock tried: a run stopped can no longer take it between the try and the stop.
lockf=$T/root/run/nvidia-driver-installer.lock
stop_unlocked() {
    kill -STOP "$1"
    flock -n "$lockf" true && return 0
    kill -CONT "$1"
    return 1
}
wlog=$T/a.log wait_bg --kernel-release 6.1.0-99-amd64 --driver-version latest
apid=$wpid
wait_for "A's wait" 60 grep -q "waiting for the repository to serve" "$T/a.log"
wait_for "A stopped without the lock" 60 stop_unlocked "$apid"
wlog=$T/b.log wait_bg --kernel-release 6.1.0-99-amd64 --driver-version latest
wait_for "B's wait" 60 grep -q "waiting for the repository to serve" "$T/b.log"
wait_for "B stopped without the lock" 60 stop_unlocked "$wpid"
assert_eq "$(record_pid)" "$wpid" "the record's pid, B's"
kill -TERM "$apid"
kill -CONT "$apid"
set +e
wait "$apid"
rc=$?
set -e
apid=
assert_eq "$rc" 143 "A's exit on SIGTERM"
[ -e "$T/root/$IDIR_REL/.waiting.json" ] || fail "A removed B's record: $(cat "$T/a.log")"
assert_eq "$(record_pid)" "$wpid" "the record's pid after A ended"
kill -TERM "$wpid"
kill -CONT "$wpid"
set +e
wait "$wpid"
rc=$?
set -e
assert_eq "$rc" 143 "B's exit on SIGTERM"
[ ! -e "$T/root/$IDIR_REL/.waiting.json" ] || fail "B's own record stayed after its SIGTERM"
unset wlog

# --wait-for-package-max: the refusal's exit 3 once the limit is past, the record cleared.
expect_rc 3 install $(kernel_args) --kernel-release 6.1.0-99-amd64 --wait-for-package \
    --wait-for-package-max 2 --wait-for-package-interval 1
expect_err "waited 2 s for a package (--wait-for-package-max): select: the default driver $V_OLD has no package for kernel 6.1.0-99-amd64"
[ "$(grep -c "waiting for the repository to serve this node's package" "$T/err")" -ge 2 ] ||
    fail "no check before the limit: $(cat "$T/err")"
[ ! -e "$T/root/$IDIR_REL/.waiting.json" ] || fail "the record stayed after the limit"

# 4. Refusals a package would not lift exit as before, at once.
expect_rc 3 install $(kernel_args) --wait-for-package --driver-version 999.1.1
expect_err "no driver in the repository matches version '999.1.1'"
# (docs/operations.md, runbook 4: a pinned version the index lacks does not wait.)
if grep -q "waiting for the repository" "$T/err"; then fail "waited for 999.1.1: $(cat "$T/err")"; fi
[ ! -e "$T/root/$IDIR_REL/.waiting.json" ] || fail "a record for a version the index lacks"
expect_rc 5 install --repo-key "$FIX/keys/other-pub.pem" --kernel-release 6.1.0-99-amd64 \
    --wait-for-package --index-max-age 0
[ ! -e "$T/root/$IDIR_REL/.waiting.json" ] || fail "a record for a refusal that does not wait"
if grep -q "waiting for the repository" "$T/err"; then fail "waited: $(cat "$T/err")"; fi
