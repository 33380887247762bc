# plain build: a crash sweep; the carry runs under ASan in t_lib64_carry, and the recovery from kills in t_crash
# A crash while other installers' files are carried to the new version (t_lib64_carry) leaves
# a whole install: the old version current with the files, or the new one current with them
# (they are carried and synced before the .current rename). The next run converges to what
# an uninterrupted upgrade leaves. The installer is killed (SIGKILL, tests/tools/crashpoint.c)
# at each file-system change from the unpacked package to the switch.
mkroot "$T/root"
new_repo "$T/repo" "$V_OLD:default" "$V_NEW"
args=(--repo "file://$T/repo" $(install_args))
inst install "${args[@]}"
[ "$RC" = 0 ] || fail "install: $(cat "$T/err")"
lib=$(idir)/lib64
mkdir -p "$T/gib/lib64/profiles"
echo "nccl net plugin" >"$T/gib/lib64/libnccl-net.so"
ln -s libnccl-net.so "$T/gib/lib64/libnccl-net.so.1"
echo "export NCCL_NET=gIB" >"$T/gib/lib64/profiles/env.sh"
cp -r "$T/gib/lib64/." "$lib"
ln -s /etc/passwd "$lib/outside"
cp -a "$T/root" "$T/old"

state() { snapshot "$(idir)"; }
current_tree() { snapshot "$(idir)/.current/"; }
crash_run() { # N ARGS...: the installer, killed at its Nth change; its exit status in crash.rc
    local n=$1
    shift
    set +e
    { env LD_PRELOAD="$CRASHPOINT" CRASH_AT="$n" CRASH_TRACE="$T/trace" \
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
        "$BIN" --root "$T/root" "$@" >"$T/out" 2>"$T/err"
        echo $? >"$T/crash.rc"; } 2>/dev/null
    set -e
}

tree_old=$(current_tree)
echo "$tree_old" | grepq "^./libnccl-net.so " && fail "the snapshot is not of lib64's parent"
echo "$tree_old" | grepq "^./lib64/libnccl-net.so " || fail "no plugin in the old tree"
# The reference: the upgrade, never interrupted, counted.
crash_run 0 install "${args[@]}" --driver-version "$V_NEW"
[ "$(cat "$T/crash.rc")" = 0 ] || fail "the counting run failed: $(cat "$T/err")"
ref=$(state)
tree_new=$(current_tree)
for f in lib64/libnccl-net.so lib64/libnccl-net.so.1 lib64/profiles/env.sh lib64/outside; do
    echo "$tree_new" | grepq "^./$f " || fail "the uninterrupted upgrade did not carry $f"
done
# The window: after the package is unpacked, up to the log line of the carry (just before
# the .current rename), and a few changes past it (the rename itself).
read -r lo hi < <(python3 - "$T/trace" <<'PY'
import re, sys
lo = hi = None
for line in open(sys.argv[1]):
    m = re.match(r"^(\d+) (?:INFO|WARN) +(\w+): (.*)", line)
    if not m:
        continue
    n, msg = int(m.group(1)), m.group(3)
    if msg.startswith("package unpacked"):
        lo = n
    if msg.startswith("files of other installers carried"):
        hi = n
assert lo is not None and hi is not None and hi > lo, (lo, hi)
print(lo + 1, hi + 3)
PY
)
echo "crash points $lo-$hi"
trials=0
for n in $(seq "$lo" "$hi"); do
    rm -rf "$T/root" && cp -a "$T/old" "$T/root"
    crash_run "$n" install "${args[@]}" --driver-version "$V_NEW"
    rc=$(cat "$T/crash.rc")
    [ "$rc" = 137 ] || fail "@$n: exit $rc, not killed: $(grep -E "ERROR|WARN" "$T/err" | tail -3)"
    cur=$(current_tree)
    [ "$cur" = "$tree_old" ] || [ "$cur" = "$tree_new" ] ||
        fail "@$n: the current version is neither the old nor the new one with the others' files:
$(diff <(echo "$tree_new") <(echo "$cur") || true)"
    inst install "${args[@]}" --driver-version "$V_NEW"
    [ "$RC" = 0 ] || fail "@$n: the run after the crash failed: $(tail -3 "$T/err")"
    [ "$(state)" = "$ref" ] || fail "@$n: did not converge:
$(diff <(echo "$ref") <(state) || true)"
    trials=$((trials + 1))
done
echo "crash trials: $trials, every one consistent and converged"
[ "$trials" -ge 10 ] || fail "only $trials trials"
