# No slow peer freezes the node agent (docs/design.md, "The node agent"): its probes and
# SIGTERM answer on time whatever the API server and the clients of its port do.
#   1. idle connections held open to the agent's port, more than one client at a time would
#      be allowed to delay it (2 s each): /healthz and /readyz answer within 2 s;
#   2. an API server that answers byte by byte: the call ends within its deadline (5 s), not
#      the 15 s an attempt once had, and the probes answer meanwhile;
#   3. an API server that reads the request and never answers: the probes answer within 2 s
#      while the agent's call waits, and SIGTERM ends the agent within 2 s, exit 0;
#   4. a CUDA check that hangs (a libcuda whose cuInit never returns): the probes answer,
#      SIGTERM ends the agent within 2 s, and the readiness the install gave stays (a
#      check the signal cut short judges nothing).
# Every wait is for an event: the connections open, the stand-in's log of the slow call.
# serial: wall-clock bounds: the probes and SIGTERM within 2 s (0.5 s and 30 ms here)
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args)
cat >"$T/cluster.json" <<EOF
{"nodes": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-1"}, "spec": {}}]}
EOF
kube_stub "$T/cluster.json"
env LD_PRELOAD="$FAKEKERNEL" FAKE_KERNEL_ROOT="$T/root" \
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
    "$BIN" --root "$T/root" agent --listen 127.0.0.1:0 --interval 1 --kernel-release "$KERNEL" \
    --node-name gpu-node-1 --kube-sa-dir "$KUBE_SA" 2>"$T/agent.log" &
apid=$!
trap 'rc=$?; kill -KILL "$apid" 2>/dev/null || true; [ $rc = 0 ] || tail -15 "$T/agent.log"' EXIT
agent_said() { grep -q -- "$1" "$T/agent.log"; }
wait_for "the agent's start" 30 agent_said "agent: watching the node"
port=$(sed -n 's/.*agent: watching the node (.*port=\([0-9]*\) .*/\1/p' "$T/agent.log")
wait_for "the agent's first look" 30 agent_said "agent: node ready: a CUDA job can run"

# probe PATH WHAT: PATH answers (any status) within 2 s, as the kubelet's probe asks (5 s).
probe() {
    local out
    out=$(curl -s -o /dev/null -m 10 -w '%{http_code} %{time_total}' "http://127.0.0.1:$port$1") || true
    case $out in 200\ * | 503\ *) ;; *) fail "$2: $1 not answered within 10 s ($out)" ;; esac
    awk -v t="${out#* }" 'BEGIN { exit !(t < 2) }' || fail "$2: $1 took ${out#* } s"
    echo "$2: $1 ${out% *} in ${out#* } s"
}

# 1. Idle connections: 8, each allowed 2 s for its request, are 16 s one after another.
idle=()
for i in 1 2 3 4 5 6 7 8; do
    exec {fd}<>"/dev/tcp/127.0.0.1/$port"
    idle+=("$fd")
done
probe /healthz "8 idle connections"
probe /readyz "8 idle connections"
probe /metrics "8 idle connections"
# More than the connections the agent serves at once: the oldest give way to new clients.
for i in $(seq 1 40); do
    exec {fd}<>"/dev/tcp/127.0.0.1/$port"
    idle+=("$fd")
done
probe /healthz "48 idle connections"
probe /readyz "48 idle connections"
for fd in "${idle[@]}"; do exec {fd}>&-; done

# stalled STATUS N: the stand-in logged its Nth request answered STATUS ("stall", "trickle").
stalled() { [ "$(grep -c "\"status\": \"$1\"" "$KUBE_LOG")" -ge "$2" ]; }
gets() { grep -c '"method": "GET", "path": "/api/v1/nodes/gpu-node-1"' "$KUBE_LOG"; }

# 2. An answer byte by byte, a byte every half second (its head alone takes a minute): the
#    call ends at its deadline, and the next look asks again.
echo '{"faults": [{"method": "GET", "path": "/api/v1/nodes/gpu-node-1", "trickle": 0.5, "times": 1}]}' >"$KUBE_FAULTS"
wait_for "a trickled answer" 30 stalled trickle 1
n=$(gets)
probe /healthz "an API call answered byte by byte"
probe /readyz "an API call answered byte by byte"
t0=$(date +%s%N)
asked_again() { [ "$(gets)" -gt "$n" ]; }
# 5 s for the call, 1 s to the next look; an attempt that outlived the call took 15 s.
wait_for "the next call after a trickled one" 11 asked_again
echo "the trickled call ended, and the next one began, $((($(date +%s%N) - t0) / 1000000)) ms after the probes"

# 3. No answer at all: the probes answer, and SIGTERM ends the agent at once.
echo '{"faults": [{"method": "GET", "path": "/api/v1/nodes/gpu-node-1", "stall": 60, "times": 100}]}' >"$KUBE_FAULTS"
wait_for "a stalled call" 30 stalled stall 1
probe /healthz "a stalled API call"
probe /readyz "a stalled API call"
# The next one, which the agent is in now: its start is logged before the stall.
k=$(grep -c '"status": "stall"' "$KUBE_LOG")
wait_for "the next stalled call" 30 stalled stall $((k + 1))
gone() { ! kill -0 "$apid" 2>/dev/null; }
# term_within_2s WHAT: SIGTERM ends the agent, exit 0, within 2 s, during WHAT.
term_within_2s() {
    local t0 ms rc
    t0=$(date +%s%N)
    kill -TERM "$apid"
    wait_for "the agent to end on SIGTERM during $1" 30 gone
    ms=$((($(date +%s%N) - t0) / 1000000))
    set +e
    wait "$apid"
    rc=$?
    set -e
    assert_eq "$rc" 0 "the agent's exit on SIGTERM during $1"
    [ "$ms" -lt 2000 ] || fail "SIGTERM during $1 took $ms ms"
    echo "SIGTERM during $1: exit 0 in $ms ms"
}
lines=$(wc -l <"$T/agent.log")
term_within_2s "a stalled API call"
agent_said "agent: stopping (signal=SIGTERM)" || fail "no stop line"
# The call SIGTERM cut short is no API failure: the agent is leaving, and says only that.
! tail -n +$((lines + 1)) "$T/agent.log" | grepq "call to the API server failed" ||
    fail "a call SIGTERM ended said as a failure: $(tail -n +$((lines + 1)) "$T/agent.log" | grep 'API server failed')"

# 4. A CUDA check that hangs. The installed libcuda.so.1 becomes one whose cuInit marks a
#    file and never returns (its other functions are there for the binding).
cat >"$T/hang.c" <<'C'
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
int cuInit(unsigned f) { (void)f; close(open(getenv("CUDA_HANG_MARK"), O_CREAT | O_WRONLY, 0644)); for (;;) pause(); }
int cuDriverGetVersion(int *v) { (void)v; return 0; }
int cuDeviceGetCount(int *n) { (void)n; return 0; }
int cuDeviceGet(int *d, int i) { (void)d, (void)i; return 0; }
int cuDeviceGetPCIBusId(char *b, int l, int d) { (void)b, (void)l, (void)d; return 0; }
int cuCtxCreate_v2(void **c, unsigned f, int d) { (void)c, (void)f, (void)d; return 0; }
int cuCtxDestroy_v2(void *c) { (void)c; return 0; }
int cuGetErrorName(int e, const char **s) { (void)e, (void)s; return 0; }
int cuGetErrorString(int e, const char **s) { (void)e, (void)s; return 0; }
C
lib=$(realpath "$T/root/$IDIR_REL/.current/lib64/libcuda.so.1")
rm -f "$lib"
cc -shared -fPIC -o "$lib" "$T/hang.c"
marker=$T/root/run/nvidia/validations/driver-ready
[ -f "$marker" ] || fail "no readiness marker before the hanging CUDA check"
: >"$T/agent.log"
env LD_PRELOAD="$FAKEKERNEL" FAKE_KERNEL_ROOT="$T/root" CUDA_HANG_MARK="$T/cuda-hangs" \
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
    "$BIN" --root "$T/root" agent --listen 127.0.0.1:0 --interval 1 --kernel-release "$KERNEL" \
    2>"$T/agent.log" &
apid=$!
wait_for "the agent's start" 30 agent_said "agent: watching the node"
port=$(sed -n 's/.*agent: watching the node (.*port=\([0-9]*\) .*/\1/p' "$T/agent.log")
wait_for "the CUDA check to hang" 30 test -e "$T/cuda-hangs"
probe /healthz "a CUDA check that hangs"
probe /readyz "a CUDA check that hangs"
term_within_2s "a hanging CUDA check"
[ -f "$marker" ] || fail "the readiness marker withdrawn for a CUDA check SIGTERM cut short"
! agent_said "node not ready" || fail "judged from a CUDA check SIGTERM cut short: $(grep 'not ready' "$T/agent.log")"
# The check's child, which has the library mapped, went with it.
no_child_in_check() { ! grep -qsF "$lib" /proc/[0-9]*/maps; }
wait_for "the CUDA check's child to end with the agent" 30 no_child_in_check
