# Crash consistency: the installer is killed (SIGKILL, tests/tools/crashpoint.c) at its Nth
# file-system change, for N spread over every stage of a fresh install, of an upgrade (with
# the fake kernel: modules are unloaded and loaded too), of an upgrade deferred on a busy
# node (--when-busy defer), of the switch to the pending version once the node is idle, and
# of a pending version that fails at boot (its withdrawal and the fallback load of the
# current version). After each kill the host
# shows a whole install (the previous one, or the new one once it was switched in) or,
# on a fresh host, none; the next plain run converges to exactly the state of a run that
# was never interrupted: same files, modules, nodes and cache, no leftovers.
FAKE_KERNEL=1
# Under ASan (NDI_SANITIZED) fewer points, one per stage at least: the sanitizer looks for
# memory errors on the recovery paths, which every stage's points reach; the plain run takes
# the wider spread, two per stage at least. CRASH_TRIALS and CRASH_PER_STAGE set them.
# Under ASan, too, the deferral and the damaged pending copy are left to the plain build:
# their recovery runs the code of the upgrade and of the refused pending version, which it
# kills under ASan, and t_defer and t_pending_failure run them whole there.
if [ -n "${NDI_SANITIZED:-}" ]; then
    TRIALS=${CRASH_TRIALS:-16} PER_STAGE=${CRASH_PER_STAGE:-1} MIN_TRIALS=40
    PLAIN_ONLY=" defer pending-damaged "
else
    TRIALS=${CRASH_TRIALS:-36} PER_STAGE=${CRASH_PER_STAGE:-2} MIN_TRIALS=100
    PLAIN_ONLY=
fi
plain_only() { # NAME: the scenario is skipped here; says so
    [[ "$PLAIN_ONLY" == *" $1 "* ]] && echo "$1: left to the plain build"
}
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
args=(--repo "file://$T/repo" $(kernel_args))

# The whole observable state of a host root, timestamps aside.
state() {
    local r=$T/root
    snapshot "$r/$IDIR_REL"
    echo "current: $(readlink "$r/$IDIR_REL/.current" 2>/dev/null || echo none)"
    echo "modules: $(loaded_modules) nvidia=$(cat "$r/sys/module/nvidia/version" 2>/dev/null || echo none)"
    (cd "$r/dev" && ls -l nvidia* 2>/dev/null | awk '{print $1, $5, $6, $NF}')
    ls "$r/var/cache/nvidia-driver-installer/packages" 2>/dev/null
    ls "$r/etc/ld.so.conf.d" "$r/run/nvidia/validations" "$r/var/run/cdi" 2>/dev/null
}
# The tree .current points at, when there is one.
current_tree() {
    if [ -L "$T/root/$IDIR_REL/.current" ]; then snapshot "$T/root/$IDIR_REL/.current/"; else echo none; fi
}
crash_run() { # N ARGS...: the installer, killed at its Nth change; its exit status
    local n=$1
    shift
    set +e
    # The group takes the shell's "Killed" report too.
    { env LD_PRELOAD="$CRASHPOINT $FAKEKERNEL" FAKE_KERNEL_ROOT="$T/root" CRASH_AT="$n" \
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
        CRASH_TRACE="$T/trace" "$BIN" --root "$T/root" "$@" >"$T/out" 2>"$T/err"
        echo $? >"$T/crash.rc"; } 2>/dev/null
    set -e
}
# plan TRACE N: N counts spread over the stages the trace shows, at least PER_STAGE per
# stage.
plan() {
    python3 - "$1" "$2" "$PER_STAGE" <<'EOF'
import re, sys
marks, total = [], 0
for line in open(sys.argv[1]):
    m = re.match(r"^(\d+) (?:INFO|WARN) +(\w+): ", line)
    if m:
        marks.append((int(m.group(1)), m.group(2)))
    elif line.startswith("total "):
        total = int(line.split()[1])
# A stage's changes are those before the line that reports it.
segs, lo = [], 0
for count, stage in marks + [(total, "end")]:
    if count > lo:
        segs.append((lo + 1, count, stage))
        lo = count
want = int(sys.argv[2])
points = set()
for a, b, stage in segs:
    share = max(int(sys.argv[3]), want * (b - a + 1) // total)
    # One point: the stage's middle change; more: its first, its last and between.
    for k in range(share):
        points.add((a + b) // 2 if share == 1 else a + (b - a) * k // (share - 1))
print(" ".join(str(p) for p in sorted(points)))
print(", ".join("%s %d-%d" % (s, a, b) for a, b, s in segs), file=sys.stderr)
EOF
}
trials=0
# run_trials NAME TEMPLATE REF_STATE OK_TREES... -- ARGS...: crash at each planned point.
run_trials() {
    local name=$1 tmpl=$2 ref=$3 n points cur ok t
    shift 3
    local trees=()
    plain_only "$name" && return
    while [ "$1" != -- ]; do trees+=("$1"); shift; done
    shift
    rm -rf "$T/root" && cp -a "$tmpl" "$T/root"
    crash_run 0 "$@"
    [ "$(cat "$T/crash.rc")" = 0 ] || fail "$name: the counting run failed: $(cat "$T/err")"
    points=$(plan "$T/trace" "$((TRIALS / 2))" 2>"$T/stages")
    echo "$name: $(grep -c . <<<"${points// /$'\n'}") crash points over: $(cat "$T/stages")"
    for n in $points; do
        rm -rf "$T/root" && cp -a "$tmpl" "$T/root"
        crash_run "$n" "$@"
        t=$(cat "$T/crash.rc")
        [ "$t" = 137 ] || [ "$t" = 0 ] || fail "$name@$n: exit $t, not killed: $(grep -E "ERROR|WARN" "$T/err" | tail -3)"
        cur=$(current_tree)
        ok=0
        for t in "${trees[@]}"; do [ "$cur" = "$t" ] && ok=1; done
        [ $ok = 1 ] || fail "$name@$n: the install dir holds neither a whole old nor a whole new install:
$cur"
        inst "$@"
        [ "$RC" = 0 ] || fail "$name@$n: the run after the crash failed: $(tail -3 "$T/err")"
        [ "$(state)" = "$ref" ] || fail "$name@$n: did not converge:
$(diff <(echo "$ref") <(state) || true)"
        trials=$((trials + 1))
    done
}

# References: a fresh install and an upgrade, never interrupted.
cp -a "$T/root" "$T/empty"
inst install "${args[@]}" --driver-version "$V_OLD"
[ "$RC" = 0 ] || fail "install: $(cat "$T/err")"
ref_old=$(state)
tree_old=$(current_tree)
cp -a "$T/root" "$T/old"
inst install "${args[@]}" --driver-version "$V_NEW"
[ "$RC" = 0 ] || fail "upgrade: $(cat "$T/err")"
ref_new=$(state)
tree_new=$(current_tree)

# The deferred path (--when-busy defer): a process holds the old driver, so the new version
# is staged, verified and recorded as pending while the old one keeps serving; a crash at any
# point leaves the old version current (never a half-switched node), and the run after it
# converges to the uninterrupted deferral. Then the holder is gone: the switch from the
# staged copy, crashed anywhere, leaves the old or the new version whole and converges to
# exactly the state of a plain upgrade.
cp -a "$T/old" "$T/busy"
mkdir -p "$T/busy/proc/4242/fd"
ln -s /dev/nvidiactl "$T/busy/proc/4242/fd/3"
echo cuda-app >"$T/busy/proc/4242/comm"
rm -rf "$T/root" && cp -a "$T/busy" "$T/root"
inst install "${args[@]}" --when-busy defer --driver-version "$V_NEW"
[ "$RC" = 0 ] || fail "deferral: $(cat "$T/err")"
[ -f "$T/root/$IDIR_REL/.pending.json" ] || fail "deferral: nothing pending"
assert_eq "$(current_tree)" "$tree_old" "the tree served while the new version waits"
ref_deferred=$(state)
cp -a "$T/root" "$T/deferred"
rm -rf "$T/deferred/proc/4242"
rm -rf "$T/root" && cp -a "$T/deferred" "$T/root"
inst install "${args[@]}" --when-busy defer --driver-version "$V_NEW"
[ "$RC" = 0 ] || fail "switch to the pending version: $(cat "$T/err")"
assert_eq "$(state)" "$ref_new" "the state after switching to the pending version (a plain upgrade's)"

# A pending version that fails (tests/integration/t_pending_failure.sh): the node boots
# (nothing loaded, /run gone) with the staged copy damaged (one module's signature gone:
# exit 5), or with the kernel refusing the pending version (exit 6, rolled back). The run
# withdraws the record and loads the current version instead. Killed at any change of
# the switch, the withdrawal and the fallback load, the install dir holds the old
# version whole (or, during the refused switch, the new one), and the runs
# after the kill converge: to a loaded, verified, ready driver at once (the fallback
# again, or the version staged again), and then to exactly a plain upgrade's state.
reboot() { # DIR: the kernel forgets its modules, /run goes, the disk stays
    rm -rf "$1/proc/modules" "$1/proc/driver" "$1/run" "$1/sys/module/"nvidia* \
        "$1/sys/module/drm" "$1/sys/module/drm_kms_helper" "$1/dev/"nvidia*
}
cp -a "$T/deferred" "$T/refused" && reboot "$T/refused"
cp -a "$T/refused" "$T/damaged"
staged=$(ls "$T/damaged/$IDIR_REL/.versions" | grep "^$V_NEW-")
cp "$FIX/drv-$V_NEW/kernel/nvidia-uvm.ko" "$T/damaged/$IDIR_REL/.versions/$staged/drivers/nvidia-uvm.ko"
serving() { # the driver loaded is the current version, verified and ready; nothing pending
    local v
    v=$(cat "$T/root/sys/module/nvidia/version" 2>/dev/null) || return 1
    [ "$(installed_version)" = "$v" ] &&
        grep -qx "NVIDIA_DRIVER_VERSION=$v" "$T/root/run/nvidia/validations/driver-ready" &&
        [ ! -e "$T/root/$IDIR_REL/.pending.json" ]
}
# pending_trials NAME TEMPLATE EXIT OK_TREES...: crash the failing run (FAKE_KERNEL_FAIL
# as set) at each planned change; the runs after it have a kernel that accepts the new
# version.
pending_trials() {
    local name=$1 tmpl=$2 want=$3 n points ref_fallback fail_env=${FAKE_KERNEL_FAIL:-} cur t ok
    plain_only "$name" && return
    shift 3
    rm -rf "$T/root" && cp -a "$tmpl" "$T/root"
    crash_run 0 install "${args[@]}" --when-busy defer --driver-version "$V_NEW"
    [ "$(cat "$T/crash.rc")" = "$want" ] || fail "$name: the counting run exited $(cat "$T/crash.rc"): $(tail -2 "$T/err")"
    serving || fail "$name: no verified driver after the fallback: $(tail -2 "$T/err")"
    assert_eq "$(current_tree)" "$tree_old" "$name: the tree served after the fallback"
    ref_fallback=$(state)
    FAKE_KERNEL_FAIL= inst install "${args[@]}" --when-busy defer --driver-version "$V_NEW"
    [ "$RC" = 0 ] && [ "$(state)" = "$ref_new" ] || fail "$name: the run after the fallback (exit $RC) did not converge:
$(diff <(echo "$ref_new") <(state) || true)"
    # Fewer than the others' (each trial takes up to three runs), still PER_STAGE per stage.
    points=$(plan "$T/trace" "$((TRIALS / 3))" 2>"$T/stages")
    echo "$name: $(grep -c . <<<"${points// /$'\n'}") crash points over: $(cat "$T/stages")"
    for n in $points; do
        rm -rf "$T/root" && cp -a "$tmpl" "$T/root"
        FAKE_KERNEL_FAIL=$fail_env crash_run "$n" install "${args[@]}" --when-busy defer --driver-version "$V_NEW"
        [ "$(cat "$T/crash.rc")" = 137 ] || fail "$name@$n: exit $(cat "$T/crash.rc"), not killed"
        cur=$(current_tree)
        ok=0
        for t in "$@"; do [ "$cur" = "$t" ] && ok=1; done
        [ $ok = 1 ] || fail "$name@$n: the install dir holds neither a whole old nor a whole new install:
$cur"
        FAKE_KERNEL_FAIL= inst install "${args[@]}" --when-busy defer --driver-version "$V_NEW"
        case $RC in
        0) [ "$(state)" = "$ref_new" ] || fail "$name@$n: staged again, but not a plain upgrade's state:
$(diff <(echo "$ref_new") <(state) || true)" ;;
        "$want") [ "$(state)" = "$ref_fallback" ] || fail "$name@$n: the fallback again, but not its state:
$(diff <(echo "$ref_fallback") <(state) || true)" ;;
        *) fail "$name@$n: the run after the kill exited $RC: $(tail -2 "$T/err")" ;;
        esac
        serving || fail "$name@$n: no verified driver after the run that followed the kill"
        [ "$RC" = 0 ] || FAKE_KERNEL_FAIL= inst install "${args[@]}" --when-busy defer --driver-version "$V_NEW"
        [ "$RC" = 0 ] && [ "$(state)" = "$ref_new" ] || fail "$name@$n: did not converge (exit $RC):
$(diff <(echo "$ref_new") <(state) || true)"
        trials=$((trials + 1))
    done
}

run_trials install "$T/empty" "$ref_old" none "$tree_old" -- install "${args[@]}" --driver-version "$V_OLD"
run_trials upgrade "$T/old" "$ref_new" "$tree_old" "$tree_new" -- install "${args[@]}" --driver-version "$V_NEW"
run_trials defer "$T/busy" "$ref_deferred" "$tree_old" -- install "${args[@]}" --when-busy defer --driver-version "$V_NEW"
run_trials pending-switch "$T/deferred" "$ref_new" "$tree_old" "$tree_new" -- install "${args[@]}" --when-busy defer --driver-version "$V_NEW"
pending_trials pending-damaged "$T/damaged" 5 "$tree_old"
FAKE_KERNEL_FAIL=nvidia@$V_NEW:EKEYREJECTED pending_trials pending-refused "$T/refused" 6 "$tree_old" "$tree_new"
echo "crash trials: $trials, every one consistent and converged"
[ "$trials" -ge "$MIN_TRIALS" ] || fail "only $trials trials"
