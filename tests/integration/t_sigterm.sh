# SIGTERM, as the kubelet stops a pod: the installer, PID 1 of its container (here of a new
# PID namespace, where the kernel gives it no default action), stops at its next safe point
# and exits 143 with one error line; what it leaves, the next run completes.
#   1. SIGTERM while the package download stalls: the transfer ends at once (no retry, no
#      other mirror), the previous install is untouched, as PID 1 and not.
#   2. SIGTERM at the Nth file-system change (tests/tools/crashpoint.c, CRASH_SIGNAL=TERM) of
#      an upgrade, of a deferral on a busy node, of the switch to the pending version, and of
#      a reload with module parameters the kernel refuses (the restore of the previous ones):
#      with `-- true` after the options every run has a safe point after its last change, so
#      each one ends 143 (or, for the refused reload, with its own exit 6 once the previous
#      parameters run again); a signal before the switch leaves the old version serving;
#      the next run converges to the state of a run never signalled.
#   3. SIGTERM to `mirror` while a package streams: the same stop; the next run completes.
#   4. SIGTERM while the run waits for another one's lock: the wait ends, exit 143.
#   5. The manifests' long-running containers of our image (the agent, a holder) end on SIGTERM
#      as PID 1, at once and with exit 0.
#   6. SIGTERM while ldconfig, the run's child, blocks in a read: ldconfig is killed, the
#      run stops at once (exit 143), the next run rebuilds the ld cache.
FAKE_KERNEL=1
# Fewer under ASan (NDI_SANITIZED), as in t_crash.
TRIALS=${SIGTERM_TRIALS:-$([ -n "${NDI_SANITIZED:-}" ] && echo 7 || echo 11)}
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
args=(--repo "file://$T/repo" $(kernel_args))
good=(--module-arg nvidia.NVreg_DeviceFileMode=432)
bad=(--module-arg nvidia.NVreg_DeviceFileMode=abc)
refuse=nvidia.NVreg_DeviceFileMode=abc:EINVAL
stopped="ERROR install: .*stopped by SIGTERM before .*; fix: none needed: the node keeps a state the next run completes (exit 143)"

state() {
    local r=$T/root
    snapshot "$r/$IDIR_REL"
    echo "current: $(readlink "$r/$IDIR_REL/.current" 2>/dev/null || echo none)"
    echo "modules: $(loaded_modules) nvidia=$(cat "$r/sys/module/nvidia/version" 2>/dev/null || echo none)"
    echo "params: $(grep DeviceFileMode "$r/proc/driver/nvidia/params" 2>/dev/null || echo none)"
    (cd "$r/dev" && ls -l nvidia* 2>/dev/null | awk '{print $1, $5, $6, $NF}')
    ls "$r/var/cache/nvidia-driver-installer/packages" 2>/dev/null
    ls "$r/etc/ld.so.conf.d" "$r/run/nvidia/validations" "$r/var/run/cdi" 2>/dev/null
}
current_tree() {
    if [ -L "$T/root/$IDIR_REL/.current" ]; then snapshot "$T/root/$IDIR_REL/.current/"; else echo none; fi
}
# term_run N ARGS...: the installer as PID 1 of a new PID namespace, sent SIGTERM at its
# Nth change (0: never); its status in $T/term.rc.
term_run() {
    local n=$1
    shift
    set +e
    unshare -fp --mount-proc env LD_PRELOAD="$CRASHPOINT $FAKEKERNEL" FAKE_KERNEL_ROOT="$T/root" \
        CRASH_AT="$n" CRASH_SIGNAL=TERM CRASH_TRACE="$T/trace" FAKE_KERNEL_FAIL="${FAKE_KERNEL_FAIL:-}" \
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
        "$BIN" --root "$T/root" "$@" >"$T/out" 2>"$T/err"
    echo $? >"$T/term.rc"
    set -e
}
# points TRACE: TRIALS counts spread over the run's changes, and the count at which the
# package was unpacked and verified (0 when it was not): a signal up to there comes before
# the switch.
points() {
    python3 - "$1" "$TRIALS" <<'EOF'
import re, sys
# The hand-over execs: no "total" line then, but the count at "handing over".
total, unpacked = 0, 0
for line in open(sys.argv[1]):
    m = re.match(r"^(?:total )?(\d+)", line)
    if m:
        total = max(total, int(m.group(1)))
    if re.match(r"^\d+ INFO +unpack: package unpacked and verified", line):
        unpacked = int(line.split()[0])
want = int(sys.argv[2])
print(" ".join(str(p) for p in sorted({1 + (total - 1) * k // (want - 1) for k in range(want)})))
print(unpacked)
EOF
}
trials=0 restored=0
# run_trials NAME TEMPLATE REF_STATE OLD_TREE OK_RCS NEXT_RC OK_TREES... -- ARGS...: OK_RCS
# the exits a signalled run may have, NEXT_RC the exit of the run after it.
run_trials() {
    local name=$1 tmpl=$2 ref=$3 old=$4 rcs=$5 next=$6 n rc cur ok t pts unpacked
    shift 6
    local trees=()
    while [ "$1" != -- ]; do trees+=("$1"); shift; done
    shift
    rm -rf "$T/root" && cp -a "$tmpl" "$T/root"
    term_run 0 "$@" -- true
    { read -r pts; read -r unpacked; } < <(points "$T/trace")
    echo "$name: SIGTERM at changes $pts (unpacked at $unpacked)"
    for n in $pts; do
        rm -rf "$T/root" && cp -a "$tmpl" "$T/root"
        term_run "$n" "$@" -- true
        rc=$(cat "$T/term.rc")
        case " $rcs " in *" $rc "*) ;; *) fail "$name@$n: exit $rc, not a stop at a safe point: $(grep -E "ERROR|WARN" "$T/err" | tail -3)" ;; esac
        [ "$rc" != 143 ] || expect_err "$stopped"
        [ "$rc" != 6 ] || restored=$((restored + 1))
        [ "$(grep -c '^ERROR\|"level":"error"' "$T/err")" = 1 ] || fail "$name@$n: not one error line: $(cat "$T/err")"
        cur=$(current_tree)
        ok=0
        for t in "${trees[@]}"; do [ "$cur" = "$t" ] && ok=1; done
        [ $ok = 1 ] || fail "$name@$n: the install dir holds neither a whole old nor a whole new install:
$cur"
        if [ "$n" -le "$unpacked" ]; then
            assert_eq "$cur" "$old" "$name@$n: the tree served after a SIGTERM before the switch"
        fi
        inst "$@"
        [ "$RC" = "$next" ] || fail "$name@$n: the run after SIGTERM exited $RC: $(tail -3 "$T/err")"
        [ "$(state)" = "$ref" ] || fail "$name@$n: did not converge:
$(diff <(echo "$ref") <(state) || true)"
        trials=$((trials + 1))
    done
}

# References, never signalled.
cp -a "$T/root" "$T/empty"
inst install "${args[@]}" "${good[@]}" --driver-version "$V_OLD"
[ "$RC" = 0 ] || fail "install: $(cat "$T/err")"
tree_old=$(current_tree)
cp -a "$T/root" "$T/old"
inst install "${args[@]}" "${good[@]}" --driver-version "$V_NEW"
[ "$RC" = 0 ] || fail "upgrade: $(cat "$T/err")"
ref_new=$(state)
tree_new=$(current_tree)
cp -a "$T/old" "$T/busy"
mkdir -p "$T/busy/proc/4242/fd"
ln -s /dev/nvidiactl "$T/busy/proc/4242/fd/3"
echo cuda-app >"$T/busy/proc/4242/comm"
rm -rf "$T/root" && cp -a "$T/busy" "$T/root"
inst install "${args[@]}" "${good[@]}" --when-busy defer --driver-version "$V_NEW"
[ "$RC" = 0 ] || fail "deferral: $(cat "$T/err")"
ref_deferred=$(state)
cp -a "$T/root" "$T/deferred"
rm -rf "$T/deferred/proc/4242"
rm -rf "$T/root" && cp -a "$T/old" "$T/root"
FAKE_KERNEL_FAIL=$refuse inst install "${args[@]}" "${bad[@]}" --driver-version "$V_OLD"
[ "$RC" = 6 ] || fail "refused reload: exit $RC: $(cat "$T/err")"
ref_refused=$(state)
grep -q "params: DeviceFileMode: 432" <<<"$ref_refused" || fail "refused reload: not restored: $ref_refused"

# 1. SIGTERM while the package download stalls, from outside, to the installer as PID 1 of a
#    new PID namespace and as a plain process.
mkroot "$T/h"
new_repo "$T/srv/repo" "$V_OLD:default" "$V_NEW"
start_httpd "$T/srv"
"$BIN" --root "$T/h" install --repo "$HTTP/repo" $(install_args) >/dev/null 2>&1 ||
    fail "install over HTTP"
before=$(snapshot "$T/h/$IDIR_REL")
pkg=$(cd "$T/srv" && ls repo/packages/*/*/nvidia-$V_NEW.tar.zst)
gone() { ! kill -0 "$1" 2>/dev/null; }
# The child of `unshare -f`, once it runs the installer.
ns_child() {
    local c
    c=$(ps -o pid= --ppid "$1" | tr -d ' ')
    [ -n "$c" ] && [ "$(readlink "/proc/$c/exe")" = "$BIN" ] && echo "$c"
}
stalls=0
stalled() { [ "$(grep -c -- "/$pkg\$" "$HTTP_LOG.stalls" 2>/dev/null)" -ge "$1" ]; }
for as in pid1 plain; do
    printf '[{"path": "/%s", "action": "stall", "seconds": 60, "times": 1, "run": "%s"}]\n' "$pkg" "$as" >"$HTTP_FAULTS"
    if [ $as = pid1 ]; then
        unshare -fp --mount-proc "$BIN" --root "$T/h" install --repo "$HTTP/repo,$HTTP/repo" \
            $(install_args) --driver-version latest >/dev/null 2>"$T/term.err" &
    else
        "$BIN" --root "$T/h" install --repo "$HTTP/repo,$HTTP/repo" $(install_args) \
            --driver-version latest >/dev/null 2>"$T/term.err" &
    fi
    pid=$!
    wait_for "the download to open a staging tree ($as)" 30 has_file "$T/h/$IDIR_REL/.staging-*"
    # and the transfer to have begun (the server stalls it): a SIGTERM before it is a stop
    # before the first attempt, another message.
    stalls=$((stalls + 1))
    wait_for "the package's transfer to stall ($as)" 30 stalled "$stalls"
    target=$pid
    if [ $as = pid1 ]; then
        target=$(ns_child "$pid") || fail "no installer under unshare"
        grep -q "^NSpid:.*[[:space:]]1$" "/proc/$target/status" || fail "the installer is not PID 1: $(grep NSpid "/proc/$target/status")"
    fi
    kill -TERM "$target"
    set +e
    wait "$pid"
    rc=$?
    set -e
    assert_eq "$rc" 143 "exit after SIGTERM during the download ($as)"
    grep -q "ERROR install: download: package '.*': stopped by SIGTERM before the end of the transfer; fix: none needed: the node keeps a state the next run completes (exit 143)" "$T/term.err" ||
        fail "no stop named ($as): $(cat "$T/term.err")"
    ! grep -q "retry=yes\|waiting before" "$T/term.err" || fail "a stopped transfer was retried ($as): $(cat "$T/term.err")"
    assert_eq "$(snapshot "$T/h/$IDIR_REL")" "$before" "install dir after SIGTERM ($as)"
done
echo '[]' >"$HTTP_FAULTS"
"$BIN" --root "$T/h" install --repo "$HTTP/repo" $(install_args) --driver-version latest >/dev/null 2>"$T/term.err" ||
    fail "the run after SIGTERM: $(cat "$T/term.err")"
case $(readlink "$T/h/$IDIR_REL/.current") in *"$V_NEW"*) ;; *) fail "not upgraded by the run after SIGTERM" ;; esac

# 3. mirror, signalled while the package streams into its .part file.
printf '[{"path": "/%s", "action": "stall", "seconds": 60, "times": 1, "run": "mirror"}]\n' "$pkg" >"$HTTP_FAULTS"
mirror_args=(mirror --repo "$HTTP/repo" --repo-key "$FIX/keys/pub.pem" --to "$T/m" --kernel "$KERNEL" --driver-version "$V_NEW")
"$BIN" "${mirror_args[@]}" >/dev/null 2>"$T/term.err" &
pid=$!
wait_for "mirror to open its .part file" 30 has_file "$T/m/packages/*/*/*.part"
# and its transfer to have begun (the server stalls it), as for install above: the .part
# file is opened before the first attempt, and a SIGTERM there is a stop before it.
stalls=$((stalls + 1))
wait_for "the package's transfer to stall (mirror)" 30 stalled "$stalls"
kill -TERM "$pid"
wait_for "mirror to end on SIGTERM" 30 gone "$pid"
set +e
wait "$pid"
rc=$?
set -e
assert_eq "$rc" 143 "mirror's exit after SIGTERM"
grep -q "^ERROR mirror: .*stopped by SIGTERM before the end of the transfer; fix: none needed: the node keeps a state the next run completes (exit 143)$" "$T/term.err" ||
    fail "mirror's stop: $(cat "$T/term.err")"
! has_file "$T/m/packages/*/*/*.tar.zst" || fail "mirror: a package in place after SIGTERM"
echo '[]' >"$HTTP_FAULTS"
"$BIN" "${mirror_args[@]}" >/dev/null 2>"$T/term.err" || fail "mirror after SIGTERM: $(cat "$T/term.err")"
has_file "$T/m/packages/*/*/*.tar.zst" || fail "mirror after SIGTERM: no package"

# 4. SIGTERM to an installer (PID 1) that waits for the lock another run holds (a holder
#    of flock(2) on the same file, as session.c takes it, until the test releases it).
lockf="$T/h/run/nvidia-driver-installer.lock"
mkfifo "$T/release"
python3 -c 'import fcntl, sys
f = open(sys.argv[1], "a")
fcntl.flock(f, fcntl.LOCK_EX)
open(sys.argv[2], "w").close()
open(sys.argv[3]).read()' "$lockf" "$T/held" "$T/release" &
holder=$!
trap 'echo >"$T/release"' EXIT
wait_for "the lock to be held" 30 test -e "$T/held"
before=$(snapshot "$T/h/$IDIR_REL")
unshare -fp --mount-proc "$BIN" --root "$T/h" install --repo "$HTTP/repo" $(install_args) \
    --driver-version "$V_OLD" >/dev/null 2>"$T/term.err" &
pid=$!
waits() { grep -q "another installer is running; waiting for it" "$T/term.err"; }
wait_for "the installer to wait for the lock" 30 waits
target=$(ns_child "$pid") || fail "no installer under unshare"
kill -TERM "$target"
# Not `wait` at once: an installer that went on waiting would wait for this test.
wait_for "the installer to end on SIGTERM while it waits for the lock" 30 gone "$pid"
set +e
wait "$pid"
rc=$?
set -e
assert_eq "$rc" 143 "exit after SIGTERM during the wait for the lock"
grep -q "^ERROR install: lock: stopped by SIGTERM before the other installer released the lock; fix: none needed: the node keeps a state the next run completes (exit 143)$" "$T/term.err" ||
    fail "the wait for the lock: $(cat "$T/term.err")"
assert_eq "$(snapshot "$T/h/$IDIR_REL")" "$before" "install dir after SIGTERM during the wait for the lock"
echo >"$T/release"
trap - EXIT
wait "$holder"

# 6. SIGTERM while the run waits for a child blocked in a read: ldconfig, rebuilding the
#    host's ld cache, reads an included file that is a FIFO nobody writes. The run kills it
#    and stops (a handler with SA_RESTART would resume the waitpid until ldconfig ends).
fifo=$T/h/etc/ld.so.conf.d/zz-blocks.conf
echo "include /etc/ld.so.conf.d/*.conf" >"$T/h/etc/ld.so.conf"
mkfifo "$fifo"
rm -f "$T/h/etc/ld.so.cache"
mkfifo "$T/release-ld"
# Opening the FIFO's other end returns once ldconfig has opened it: it is blocked there
# then, in its read, for as long as this writer holds it open.
(exec 3>"$fifo" && : >"$T/ld-blocked" && read -r _ <"$T/release-ld") &
writer=$!
trap 'echo >"$T/release-ld"' EXIT
"$BIN" --root "$T/h" install --repo "$HTTP/repo" $(install_args) --driver-version latest \
    >/dev/null 2>"$T/term.err" &
pid=$!
wait_for "ldconfig to block on the FIFO" 30 test -e "$T/ld-blocked"
ldc=$(pgrep -f "^ldconfig -r $T/h\$") || fail "no ldconfig reading the FIFO"
kill -TERM "$pid"
wait_for "the installer to end on SIGTERM while ldconfig blocks" 30 gone "$pid"
set +e
wait "$pid"
rc=$?
set -e
assert_eq "$rc" 143 "exit after SIGTERM while ldconfig blocks"
grep -q "^ERROR install: .*stopped by SIGTERM before the end of ldconfig; fix: none needed: the node keeps a state the next run completes (exit 143)$" "$T/term.err" ||
    fail "the stop while ldconfig blocks: $(cat "$T/term.err")"
wait_for "ldconfig to end with the run" 30 gone "$ldc"
echo >"$T/release-ld"
trap - EXIT
wait "$writer" || true
rm -f "$fifo"
"$BIN" --root "$T/h" install --repo "$HTTP/repo" $(install_args) --driver-version latest >/dev/null 2>"$T/term.err" ||
    fail "the run after SIGTERM during ldconfig: $(cat "$T/term.err")"
grep -q "ldcache: ld cache updated" "$T/term.err" || fail "the next run did not rebuild the ld cache: $(cat "$T/term.err")"

# 5. Each container of our image that the DaemonSets start and keep running, as PID 1 of a
#    new PID namespace: SIGTERM ends it at once (`sleep infinity` there would ignore it). It
#    runs as the manifest says (the image's entrypoint, the Dockerfile's, unless a command is
#    given; its args and env), with a scratch host root as its ROOT_MOUNT_DIR and its HTTP
#    on 127.0.0.1.
mkroot "$T/holder-root" cos 17800.66.78
holders=$(python3 - "$T/holder-root" "$SRC"/daemonset-*.yaml <<'EOF'
import json, sys, yaml
root = sys.argv[1]
for path in sys.argv[2:]:
    for doc in yaml.safe_load_all(open(path)):
        spec = (doc or {}).get("spec", {}).get("template", {}).get("spec", {})
        for c in spec.get("containers", []):
            if "nvidia-driver-installer:" in c["image"]:
                env = {e["name"]: e["value"] for e in c.get("env", []) if "value" in e}
                if "ROOT_MOUNT_DIR" in env:
                    env["ROOT_MOUNT_DIR"] = root
                env["NVIDIA_AGENT_LISTEN"] = "127.0.0.1:0"
                cmd = c.get("command", ["/usr/bin/nvidia-driver-installer"]) + c.get("args", [])
                print(json.dumps([path.rsplit("/", 1)[1] + ":" + c["name"]] +
                                 ["env", "-i"] + ["%s=%s" % kv for kv in sorted(env.items())] + cmd))
EOF
)
[ "$(grep -c . <<<"$holders")" -ge 2 ] || fail "fewer holding containers in the manifests than two: $holders"
holder_pid() { ps -o pid= --ppid "$1" | tr -d ' '; }
holder_runs() { [ "$(readlink "/proc/$(holder_pid "$1")/exe")" = "$2" ]; }
# Until it catches or blocks SIGTERM (signal 15's bit, mask 0x4000, of SigCgt or SigBlk),
# the kernel drops the signal sent to a PID 1: no process can take it earlier (an ASan build
# starts slowly).
takes_term() {
    local k v
    while read -r k v; do
        case $k in SigCgt: | SigBlk:) (((16#$v >> 14) & 1)) && return 0 ;; esac
    done <"/proc/$(holder_pid "$1")/status"
    return 1
}
while read -r h; do
    name=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])[0])' "$h")
    mapfile -t cmd < <(python3 -c 'import json,sys; [print(a) for a in json.loads(sys.argv[1])[1:]]' "$h")
    for i in "${!cmd[@]}"; do [ "${cmd[$i]}" != /usr/bin/nvidia-driver-installer ] || cmd[$i]=$BIN; done
    # --kill-child: one that ignores SIGTERM goes with unshare when the test fails.
    unshare -fp --mount-proc --kill-child "${cmd[@]}" >"$T/holder.out" 2>&1 &
    pid=$!
    trap 'kill -KILL "$pid" 2>/dev/null || true' EXIT
    wait_for "$name to run" 30 holder_runs "$pid" "$(realpath "$BIN")"
    wait_for "$name to take SIGTERM" 30 takes_term "$pid"
    kill -TERM "$(holder_pid "$pid")"
    wait_for "$name to end on SIGTERM as PID 1" 30 gone "$pid"
    set +e
    wait "$pid"
    rc=$?
    set -e
    assert_eq "$rc" 0 "$name: exit on SIGTERM"
    trap - EXIT
done <<<"$holders"

# 2. SIGTERM at the Nth change, PID 1.
run_trials upgrade "$T/old" "$ref_new" "$tree_old" 143 0 "$tree_old" "$tree_new" -- \
    install "${args[@]}" "${good[@]}" --driver-version "$V_NEW"
run_trials defer "$T/busy" "$ref_deferred" "$tree_old" 143 0 "$tree_old" -- \
    install "${args[@]}" "${good[@]}" --when-busy defer --driver-version "$V_NEW"
run_trials pending-switch "$T/deferred" "$ref_new" "$tree_old" 143 0 "$tree_old" "$tree_new" -- \
    install "${args[@]}" "${good[@]}" --when-busy defer --driver-version "$V_NEW"
FAKE_KERNEL_FAIL=$refuse run_trials refused-reload "$T/old" "$ref_refused" "$tree_old" "143 6" 6 "$tree_old" -- \
    install "${args[@]}" "${bad[@]}" --driver-version "$V_OLD"
echo "SIGTERM trials: $trials, each stopped at a safe point and converged; $restored of them ended 6 with the previous module parameters restored"
# Four runs, TRIALS points each (two may fall on one change).
[ "$trials" -ge $((4 * TRIALS - 4)) ] || fail "only $trials trials"
# Some signals came between the unload and the restore: those runs ended as refused ones.
[ "$restored" -ge 1 ] || fail "no SIGTERM landed during the refused reload's restore"
