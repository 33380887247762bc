# The node agent and another producer's CDI spec of our kind written after the install
# (nvidia-ctk cdi generate's /etc/cdi/nvidia.yaml): two specs that define nvidia.com/gpu=0
# make a runtime resolve neither (podman drops the device: t_cdi_podman). The agent applies
# the install's rule (docs/design.md, "One producer per kind") at the first look that sees
# the spec; the test holds the installer's lock while it writes the spec, so that the first
# look after the lock is let go is the first to see it, and reads the agent's per-look
# line (-v) for what that look judged:
#   1. by default theirs win: ours is withdrawn at that look, said once; /readyz stays 200
#      (the devices are theirs and resolve) and the marker stays; status names our spec
#      absent and theirs as the node's;
#   2. where ours cannot be withdrawn (the agent's view of the spec directory read-only),
#      no readiness is claimed: that look judges "cdi", /readyz says 503 and why, the marker
#      and the labels go, status says a runtime resolves neither; their spec gone, ready
#      again at the next look;
#   3. with --cdi-replace the agent sets theirs aside at that look and ours stays;
#   4. ours of a kind of its own (the install's --cdi-kind), the agent not told: theirs of
#      nvidia.com/gpu is no conflict, ours stays (the kind is the one ours declares).
[ "$(id -u)" = 0 ] || fail "needs root (a mount namespace for the read-only spec directory)"
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args)
: >"$T/root/dev/kmsg"
marker=$T/root/run/nvidia/validations/driver-ready
labels=$T/root/etc/kubernetes/node-feature-discovery/features.d/00-nvidia-driver
ours=$T/root/var/run/cdi/nvidia-driver-installer.json
theirs=$T/root/etc/cdi/nvidia.yaml
[ -s "$ours" ] || fail "the install wrote no spec"
apid=
trap 'rc=$?; [ -z "$apid" ] || kill "$apid" 2>/dev/null || true; [ $rc = 0 ] || tail -25 "$T/agent.log"' EXIT

# The agent, -v for its line per look, in a mount namespace of its own where the spec
# directory may be made read-only (RO=1).
agent() {
    local starts readies
    starts=$(count "agent: watching the node")
    readies=$(count "agent: node ready: a CUDA job can run")
    cat >"$T/agent.sh" <<'EOF'
set -eu
dir=$1
shift
if [ "$RO" = 1 ]; then
    mount --make-rprivate /
    mount --bind "$dir" "$dir"
    mount -o remount,bind,ro "$dir" "$dir"
fi
exec env LD_PRELOAD="$PRELOAD" "$@"
EOF
    RO=$1 PRELOAD="$FAKEKERNEL" FAKE_KERNEL_ROOT="$T/root" STANDIN_ROOT="$T/root" \
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
        unshare -m bash "$T/agent.sh" "$(dirname "$ours")" "$BIN" --root "$T/root" -v agent \
        --listen 127.0.0.1:0 --interval 1 --kernel-release "$KERNEL" "${@:2}" 2>>"$T/agent.log" &
    apid=$!
    wait_for "the agent's start" 30 more_than "agent: watching the node" "$starts"
    wait_for "ready" 30 more_than "agent: node ready: a CUDA job can run" "$readies"
    port=$(sed -n 's/.*agent: watching the node (.*port=\([0-9]*\) .*/\1/p' "$T/agent.log" | tail -1)
    [ -n "$port" ] || fail "no port in the agent's log: $(cat "$T/agent.log")"
}
stop() {
    kill -TERM "$apid"
    wait "$apid" || fail "the agent's exit on SIGTERM"
    apid=
}
agent_said() { grep -q -- "$1" "$T/agent.log"; }
count() {
    local n
    n=$(grep -c -- "$1" "$T/agent.log" 2>/dev/null) || true
    echo "${n:-0}"
}
more_than() { [ "$(count "$1")" -gt "$2" ]; }
code() { curl -s -o "$T/body" -w '%{http_code}' "http://127.0.0.1:$port$1"; }
exec {lk}>>"$T/root/run/nvidia-driver-installer.lock"

# their_spec_first_look: writes their spec while the lock is held and a look has been put
# off by it, lets the lock go, and puts the agent's line of the first look after in $T/look.
their_spec_first_look() {
    local held looks
    held=$(count "an installer run holds the lock")
    flock -x "$lk"
    wait_for "a look put off by the lock" 30 more_than "an installer run holds the lock" "$held"
    cat >"$T/root/etc/cdi/.nvidia.yaml.tmp" <<'EOF'
---
cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
- name: "0"
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
- name: all
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
containerEdits:
  deviceNodes:
  - path: /dev/nvidiactl
EOF
    mv "$T/root/etc/cdi/.nvidia.yaml.tmp" "$theirs"
    looks=$(count "agent: looked")
    flock -u "$lk"
    wait_for "the first look after the lock" 30 more_than "agent: looked" "$looks"
    grep -- "agent: looked" "$T/agent.log" | sed -n "$((looks + 1))p" >"$T/look"
}

mkdir -p "$T/root/etc/cdi"
agent 0
grep -q "agent: looked (ready=yes reason=ready cdi=ours)" "$T/agent.log" || fail "the per-look line: $(grep looked "$T/agent.log" | tail -1)"

# 1. Theirs win: ours withdrawn at the first look that sees theirs; the node stays ready.
their_spec_first_look
grep -q "ready=yes reason=ready cdi=theirs" "$T/look" || fail "the first look after their spec: $(cat "$T/look")"
[ ! -e "$ours" ] || fail "our spec stayed beside theirs"
assert_eq "$(count "another producer's CDI spec declares our kind: ours withdrawn")" 1 "the withdrawal said once"
agent_said "ours withdrawn, the node's devices are theirs (spec=/etc/cdi/nvidia.yaml kind=nvidia.com/gpu" ||
    fail "the withdrawal's line: $(grep withdrawn "$T/agent.log")"
assert_eq "$(code /readyz)" 200 "/readyz with their spec serving"
[ -f "$marker" ] && [ -f "$labels" ] || fail "the marker or the labels went while their spec serves"
expect_rc 0 status
grep -q "^cdi_spec: .*nvidia-driver-installer.json (absent)$" "$T/out" || fail "status: $(cat "$T/out")"
grep -q "^cdi_conflict:   /etc/cdi/nvidia.yaml, another producer's, declares nvidia.com/gpu: the node's devices are theirs" "$T/out" ||
    fail "status: $(cat "$T/out")"
stop

# 2. Ours cannot be withdrawn: no readiness claimed while both define the devices.
rm "$theirs"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args)
[ -s "$ours" ] || fail "the install did not write ours again"
agent 1
their_spec_first_look
grep -q "ready=no reason=cdi cdi=both" "$T/look" || fail "the first look with both specs: $(cat "$T/look")"
assert_eq "$(code /readyz)" 503 "/readyz with both specs"
grep -q "^not ready (cdi): another producer's CDI spec /etc/cdi/nvidia.yaml declares nvidia.com/gpu as ours does, and ours cannot be withdrawn (.*Read-only file system.*): a runtime resolves neither's devices$" "$T/body" ||
    fail "/readyz's cause: $(cat "$T/body")"
agent_said "ERROR agent: node not ready (reason=cdi cause=another producer's CDI spec /etc/cdi/nvidia.yaml" ||
    fail "no error line: $(tail -5 "$T/agent.log")"
[ ! -e "$marker" ] && [ ! -e "$labels" ] || fail "the marker or the labels stayed while no device resolves"
expect_rc 0 status
grep -q "^cdi_spec: .*nvidia-driver-installer.json (present)$" "$T/out" &&
    grep -q "^cdi_conflict:   /etc/cdi/nvidia.yaml, another producer's, declares nvidia.com/gpu as ours does: a runtime resolves neither's devices" "$T/out" ||
    fail "status with both specs: $(cat "$T/out")"
grep -q "^ready: *no$" "$T/out" || fail "status's ready with both specs: $(cat "$T/out")"
readies=$(count "agent: node ready: a CUDA job can run")
rm "$theirs"
wait_for "ready again once their spec is gone" 30 more_than "agent: node ready: a CUDA job can run" "$readies"
wait_for "the marker again" 30 test -f "$marker"
[ -s "$ours" ] || fail "our spec went"
stop

# 3. --cdi-replace: theirs set aside at the first look, ours stays.
agent 0 --cdi-replace
their_spec_first_look
grep -q "ready=yes reason=ready cdi=ours" "$T/look" || fail "the first look with --cdi-replace: $(cat "$T/look")"
[ -e "$theirs.replaced-by-nvidia-driver-installer" ] && [ ! -e "$theirs" ] || fail "theirs not set aside"
[ -s "$ours" ] || fail "ours went under --cdi-replace"
agent_said "another producer's CDI spec set aside (--cdi-replace) (spec=/etc/cdi/nvidia.yaml" || fail "the set-aside line"
assert_eq "$(code /readyz)" 200 "/readyz under --cdi-replace"
expect_rc 0 status
grep -q "^cdi_conflict" "$T/out" && fail "status names a conflict after theirs was set aside: $(cat "$T/out")"
stop

# 4. The install's --cdi-kind, not the agent's.
rm -f "$theirs.replaced-by-nvidia-driver-installer"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --cdi-kind example.com/gpu
grep -q '"kind": *"example.com/gpu"' "$ours" || fail "the install's own kind: $(head -c 300 "$ours")"
agent 0
their_spec_first_look
grep -q "ready=yes reason=ready cdi=ours" "$T/look" || fail "the first look with ours of another kind: $(cat "$T/look")"
[ -s "$ours" ] && [ -e "$theirs" ] || fail "a spec went although the kinds differ"
stop
