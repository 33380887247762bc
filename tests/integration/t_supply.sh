# scripts/supply against a stand-in cluster (kube_stub): node-a runs a kernel the signed
# repository serves, node-b runs another and asks for it (the installer's wants annotation,
# SPEC47 §1). One pass builds node-b's package with the real build-driver-package
# (--stage-to; the stand-in driver's user space and its modules for that kernel, signed
# again), publishes it with make-repo publish, and `coverage` then serves the asked kernel;
# the report answers the ask. A second pass builds nothing. A build that fails is reported
# with its own line, the pass exits 1, and what was served stays served.
run_source "$FIX/odrv"
# The repository serves $KERNEL, its package's module type said (a node asks for one).
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$V_NEW" \
    --kernel "$KERNEL" --module-type proprietary "$FIX/spkg-$V_NEW.tar.zst" >/dev/null
cp "$T/repo/index.json" "$T/index-before.json"
python3 - "$KERNEL" "$OTHER_KERNEL" "$V_NEW" >"$T/cluster.json" <<'PY'
import json, sys
k, other, v = sys.argv[1:]
def node(name, kernel, ann):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "annotations": ann},
            "spec": {}, "status": {"nodeInfo": {
                "kernelVersion": kernel, "osImage": "Debian GNU/Linux 12 (bookworm)",
                "architecture": "amd64", "operatingSystem": "linux"}}}
wants = {"kernel": other, "arch": "x86_64", "os": "debian", "os_build": None,
         "driver_version": v, "flavour": "proprietary", "since": "2026-12-06T18:00:00Z"}
print(json.dumps({"nodes": [
    node("node-a", k, {}),
    node("node-b", other, {"nvidia.com/gpu.driver-installer.wants": json.dumps(wants)})]}))
PY
kube_stub "$T/cluster.json"
cat >"$T/supply.json" <<EOF
{"supply": 1, "driver_versions": ["$V_NEW"], "flavours": ["proprietary"],
 "platforms": {"debian": {"build_args": ["--source", "$T/src",
                                         "--prebuilt-modules", "$FIX/odrv/kernel"]}}}
EOF
supply() {
    set +e
    "$SRC/scripts/supply" --repo "$T/repo" --repo-key "$FIX/keys/key.pem" --config "$T/supply.json" \
        --kube-server "https://127.0.0.1:$KUBERNETES_SERVICE_PORT" --kube-token-file "$KUBE_SA/token" \
        --kube-ca "$KUBE_SA/ca.crt" --installer "$BIN" --work "$T/work" --parallel 2 "$@" \
        -- --sign-key "$FIX/keys/modkey.pem" --sign-cert "$FIX/keys/modkey.crt" --installer "$BIN" \
        >"$T/supply.out" 2>"$T/supply.err"
    RC=$?
    set -e
}
served() {
    "$BIN" coverage --repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --os debian \
        --kernel "$1" --driver-version "$V_NEW" >"$T/cov.out" 2>&1
}
report_has() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2" ||
    { cat "$1" >&2; fail "report $1: $2 does not hold"; }; }

served "$OTHER_KERNEL" && fail "the repository served $OTHER_KERNEL before the pass"
# A dry run says what it would build, and builds nothing.
supply --dry-run --json "$T/dry.json"
[ "$RC" = 0 ] || { cat "$T/supply.err" >&2; fail "supply --dry-run: exit $RC"; }
report_has "$T/dry.json" '[t["result"] for t in r["targets"]] == ["served", "to build"]'
cmp -s "$T/repo/index.json" "$T/index-before.json" || fail "the dry run changed the index"

supply --json "$T/first.json"
[ "$RC" = 0 ] || { cat "$T/supply.out" "$T/supply.err" >&2; fail "the first pass: exit $RC"; }
grep -Eq "^debian $OTHER_KERNEL x86_64 +$V_NEW +proprietary +built +node node-b asked since 2026-12-06T18:00:00Z; node node-b runs it +in [0-9]+ s$" "$T/supply.out" ||
    { cat "$T/supply.out" >&2; fail "the asked kernel not built, or its origins not said"; }
grep -Eq "^debian $KERNEL x86_64 +$V_NEW +proprietary +served +node node-a runs it +driver $V_NEW" "$T/supply.out" ||
    { cat "$T/supply.out" >&2; fail "node-a's kernel not served"; }
report_has "$T/first.json" 'r["asks"] == [{"node": "node-b", "since": "2026-12-06T18:00:00Z", "kernel": "'"$OTHER_KERNEL"'", "os": "debian", "driver_version": "'"$V_NEW"'", "flavour": "proprietary", "answered": True}]'
report_has "$T/first.json" 'r["counts"]["built"] == 1 and r["counts"]["served"] == 1 and r["publish"]["stages"] == 1'
served "$OTHER_KERNEL" || { cat "$T/cov.out" >&2; fail "coverage does not serve $OTHER_KERNEL after the pass"; }
served "$KERNEL" || fail "$KERNEL no longer served"

# A second pass builds nothing: both served.
supply --json "$T/second.json"
[ "$RC" = 0 ] || { cat "$T/supply.err" >&2; fail "the second pass: exit $RC"; }
report_has "$T/second.json" 'r["counts"]["served"] == 2 and r["counts"]["built"] == 0 and r["publish"]["stages"] == 0'
report_has "$T/second.json" 'r["asks"][0]["answered"]'

# A third node asks for a kernel nothing can build (no modules for it): the build fails
# with build-driver-package's own line, the pass exits 1, the index is what it was.
cp "$T/repo/index.json" "$T/index-second.json"
python3 - "$KUBE_STATE" "$V_NEW" >"$T/cluster2.json" <<'PY'
import json, sys
db = json.load(open(sys.argv[1]))
n = json.loads(json.dumps(db["nodes"][1]))
wants = {"kernel": "6.1.0-99-amd64", "arch": "x86_64", "os": "debian", "os_build": None,
         "driver_version": sys.argv[2], "flavour": "proprietary", "since": "2026-12-06T18:05:00Z"}
n["metadata"] = {"name": "node-c",
                 "annotations": {"nvidia.com/gpu.driver-installer.wants": json.dumps(wants)}}
n["status"]["nodeInfo"]["kernelVersion"] = "6.1.0-99-amd64"
print(json.dumps({"nodes": db["nodes"] + [n]}))
PY
kube_stub "$T/cluster2.json"
supply --json "$T/third.json"
[ "$RC" = 1 ] || { cat "$T/supply.out" "$T/supply.err" >&2; fail "a failed build: exit $RC, not 1"; }
grep -Eq "^debian 6.1.0-99-amd64 x86_64 +$V_NEW +proprietary +failed +node node-c .* +build-driver-package exit 1: nvidia.ko is built for kernel $OTHER_KERNEL, not 6.1.0-99-amd64" "$T/supply.out" ||
    { cat "$T/supply.out" >&2; fail "the failed build not reported"; }
report_has "$T/third.json" '[a["answered"] for a in r["asks"]] == [True, False]'
cmp -s "$T/repo/index.json" "$T/index-second.json" || fail "a pass with nothing built changed the index"
served "$OTHER_KERNEL" || fail "$OTHER_KERNEL no longer served after a failed pass"

# --watch: a pass at once, then a new ask (node-a's wants annotation for the kernel it
# runs, merge-patched as the installer writes it) starts the next pass before the 3600 s
# are up, seen through the API's watch of the Nodes.
"$SRC/scripts/supply" --repo "$T/repo" --repo-key "$FIX/keys/key.pem" --config "$T/supply.json" \
    --kube-server "https://127.0.0.1:$KUBERNETES_SERVICE_PORT" --kube-token-file "$KUBE_SA/token" \
    --kube-ca "$KUBE_SA/ca.crt" --installer "$BIN" --work "$T/work" --json "$T/watch.json" \
    --watch 3600 -- --sign-key "$FIX/keys/modkey.pem" --sign-cert "$FIX/keys/modkey.crt" \
    >"$T/watch.out" 2>"$T/watch.err" &
watcher=$!
wait_for "the watch's first pass" 60 test -s "$T/watch.json"
asked_by() { python3 -c 'import json,sys; sys.exit(0 if sys.argv[2] in [a["node"] for a in json.load(open(sys.argv[1]))["asks"]] else 1)' "$T/watch.json" "$1"; }
asked_by node-a && fail "node-a asked before it did"
python3 - "$KERNEL" "$V_NEW" >"$T/patch.json" <<'PY'
import json, sys
w = {"kernel": sys.argv[1], "arch": "x86_64", "os": "debian", "os_build": None,
     "driver_version": sys.argv[2], "flavour": "proprietary", "since": "2026-12-06T18:10:00Z"}
print(json.dumps({"metadata": {"annotations": {"nvidia.com/gpu.driver-installer.wants": json.dumps(w)}}}))
PY
kube_api PATCH /api/v1/nodes/node-a -H 'Content-Type: application/merge-patch+json' \
    --data-binary @"$T/patch.json" >/dev/null
assert_eq "$(cat "$KUBE_DIR/status")" 200 "the ask's patch"
wait_for "a pass on node-a's ask" 60 asked_by node-a
grep -q "supply: a new ask: node-a; a pass now" "$T/watch.err" || { cat "$T/watch.err" >&2; fail "the watch did not say why it ran"; }
# It learnt of the ask through the API's watch, not a poll.
python3 -c 'import json,sys; sys.exit(0 if any(r["path"] == "/api/v1/nodes" and "watch=1" in r["query"] for r in map(json.loads, open(sys.argv[1]))) else 1)' "$KUBE_LOG" ||
    fail "no watch of the Nodes in the stand-in's journal"
kill "$watcher"
wait "$watcher" || true
