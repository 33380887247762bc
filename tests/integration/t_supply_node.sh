# Issue 47's loop end to end on a fake node, with no person: the node boots a kernel the
# repository has no package for; the installer, as the DaemonSet's init container runs it
# (--wait-for-package, --node-name, the pod's service account), waits and asks on its Node;
# scripts/supply, seeing the ask through the API stand-in, builds that kernel's package
# with the real build-driver-package (the stand-in driver, local executor), publishes it
# with make-repo publish into the repository the node reads over HTTP; the installer
# installs it at its next check. Then: the ask withdrawn, DriverPackageWanted and
# DriverPackageArrived, the pass's report answering the ask, and every call of the pass
# within deploy/supply.yaml's RBAC, every call of the installer within the DaemonSet's.
FAKE_KERNEL=1
# The node runs the kernel the fixture's stand-in modules are built for ($OTHER_KERNEL's);
# the repository has the driver for the other one.
node_kernel=$OTHER_KERNEL OTHER_KERNEL=$KERNEL
KERNEL=$node_kernel
mkroot "$T/root" debian x --gpu 10de:2330
printf 'ID=debian\nVERSION_ID=12\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n' \
    >"$T/root/etc/os-release"
mkkernel "$T/root"
# The repository serves V_NEW for another kernel only.
mkdir -p "$T/srv/repo"
"$SRC/scripts/make-repo" add --repo "$T/srv/repo" --key "$FIX/keys/key.pem" --version "$V_NEW" \
    --kernel "$OTHER_KERNEL" --tag default --module-type proprietary "$FIX/spkg-$V_NEW.tar.zst" \
    >/dev/null
start_httpd "$T/srv"
python3 - "$KERNEL" >"$T/cluster.json" <<'PY'
import json, sys
print(json.dumps({"nodes": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-1"},
                             "spec": {}, "status": {"nodeInfo": {
                                 "kernelVersion": sys.argv[1], "architecture": "amd64",
                                 "osImage": "Debian GNU/Linux 12 (bookworm)",
                                 "operatingSystem": "linux"}}}]}))
PY
kube_stub "$T/cluster.json"
# The driver's source for the pass: the stand-in user space, its modules prebuilt for the
# node's kernel (build-driver-package signs them again with the pass's key).
run_source "$FIX/odrv"
cat >"$T/supply.json" <<EOF
{"supply": 1, "driver_versions": ["$V_NEW"], "flavours": ["proprietary"],
 "platforms": {"debian": {"build_args": ["--source", "$T/src",
                                         "--prebuilt-modules", "$FIX/odrv/kernel"]}}}
EOF

env LD_PRELOAD="$FAKEKERNEL" FAKE_KERNEL_ROOT="$T/root" \
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
    NVIDIA_WAIT_FOR_PACKAGE=yes NVIDIA_DRIVER_REPO="$HTTP/repo" \
    NVIDIA_DRIVER_REPO_KEY="$FIX/keys/pub.pem" "$BIN" --root "$T/root" install $(kernel_args) \
    --driver-version "$V_NEW" --node-name gpu-1 --kube-sa-dir "$KUBE_SA" \
    --wait-for-package-interval 1 --wait-for-package-max 600 >"$T/wait.out" 2>"$T/wait.log" &
wpid=$!
trap 'rc=$?; kill ${wpid:-} 2>/dev/null || true; [ $rc = 0 ] || tail -20 "$T/wait.log"' EXIT
node_has() {
    python3 - "$KUBE_STATE" "$1" <<'PY'
import json, sys
db = json.load(open(sys.argv[1]))
ann = db["nodes"][0]["metadata"].get("annotations", {})
events = [e["reason"] for e in db["events"]]
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}
wait_for "the node's ask" 30 node_has '"nvidia.com/gpu.driver-installer.wants" in ann'
kill -0 "$wpid" 2>/dev/null || fail "the installer did not wait: $(tail -5 "$T/wait.log")"

# One pass, as the CronJob runs it (here with the local executor).
"$SRC/scripts/supply" --repo "$T/srv/repo" --repo-key "$FIX/keys/key.pem" --config "$T/supply.json" \
    --nodes in-cluster --kube-server "https://127.0.0.1:$KUBERNETES_SERVICE_PORT" \
    --kube-token-file "$KUBE_SA/token" --kube-ca "$KUBE_SA/ca.crt" --installer "$BIN" \
    --work "$T/work" --json "$T/report.json" \
    -- --sign-key "$FIX/keys/modkey.pem" --sign-cert "$FIX/keys/modkey.crt" --installer "$BIN" \
    >"$T/supply.out" 2>"$T/supply.err" || fail "the pass: $(cat "$T/supply.err" "$T/supply.out" | tail -8)"
python3 - "$T/report.json" "$KERNEL" <<'PY' || fail "the report: $(cat "$T/report.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["counts"]["built"] == 1, r["counts"]
t = [t for t in r["targets"] if t["result"] == "built"][0]
assert t["kernel"] == sys.argv[2] and t["os"] == "debian", t
assert [o["kind"] for o in t["origins"]][0] == "asked", t
assert [(a["node"], a["answered"]) for a in r["asks"]] == [("gpu-1", True)], r["asks"]
PY

# The node installs at its next check, no person involved.
wait_for "the Event DriverPackageArrived" 60 node_has '"DriverPackageArrived" in events'
wait "$wpid" || fail "the install after the wait: exit $?, $(tail -5 "$T/wait.log")"
grep -q "driver installed" "$T/wait.log" || fail "not installed: $(tail -5 "$T/wait.log")"
node_has '"nvidia.com/gpu.driver-installer.wants" not in ann and events[:1] == ["DriverPackageWanted"]' ||
    fail "the node after: $(cat "$KUBE_STATE")"
expect_rc 0 status
expect_out "$V_NEW"
[ "$(grep -c '^waiting:' "$T/out")" = 0 ] || fail "status still waits: $(cat "$T/out")"
# Each side's calls within the RBAC its manifest grants it.
python3 "$SRC/tests/tools/rbac-check.py" --calls-only --user-agent nvidia-driver-supply \
    "$SRC/deploy/supply.yaml" nvidia-supply "$KUBE_LOG" >"$T/rbac.out" 2>&1 ||
    fail "the pass's RBAC: $(cat "$T/rbac.out")"
python3 "$SRC/tests/tools/rbac-check.py" --calls-only "$SRC/daemonset-generic.yaml" \
    nvidia-driver-installer "$KUBE_LOG" >"$T/rbac.out" 2>&1 ||
    fail "the installer's RBAC: $(cat "$T/rbac.out")"
