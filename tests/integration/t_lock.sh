# serial: a time window: the second installer must reach the lock while the first stalls for 2 s
# Two installers on one host serialise on the lock: the second says it waits, then finds
# the driver installed and downloads nothing.
mkroot "$T/root"
new_repo "$T/srv/repo" "$V_NEW:default"
start_httpd "$T/srv"
pkg=$(cd "$T/srv" && ls repo/packages/*/*/*.tar.zst)
printf '[{"path": "/%s", "action": "stall", "seconds": 2, "times": 1}]\n' "$pkg" >"$HTTP_FAULTS"
"$BIN" --root "$T/root" install --repo "$HTTP/repo" $(install_args) 2>"$T/first.err" &
first=$!
# The second starts once the first holds the lock (flock(2), as session.c takes it).
lockf="$T/root/run/nvidia-driver-installer.lock"
lock_held() { [ -e "$lockf" ] && ! flock -n "$lockf" true; }
wait_for "the first installer to hold the lock" 30 lock_held
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
wait "$first" || fail "first installer failed: $(cat "$T/first.err")"
expect_err "another installer is running; waiting for it"
expect_err "already installed"
assert_eq "$(served_requests .tar.zst)" 1 "package requests for two installers"

# Eight at once, asking for two versions: they take turns on the lock; every one succeeds,
# and the host ends with one whole install (the last to run) and no staging or temp files.
new_repo "$T/srv/repo" "$V_OLD" "$V_NEW:default"
echo '[]' >"$HTTP_FAULTS"
pids=()
for i in 1 2 3 4 5 6 7 8; do
    v=$V_OLD
    [ $((i % 2)) = 0 ] && v=$V_NEW
    "$BIN" --root "$T/root" install --repo "$HTTP/repo" $(install_args) --driver-version "$v" \
        >/dev/null 2>"$T/race.$i.err" &
    pids+=($!)
done
for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || fail "racer $((i + 1)) failed: $(cat "$T/race.$((i + 1)).err")"
done
final=$(installed_version)
case $final in "$V_OLD" | "$V_NEW") ;; *) fail "after the race: '$final'" ;; esac
left=$(cd "$(idir)" && find . -name '.staging*' -o -name '*.tmp-*')
[ -z "$left" ] || fail "left behind: $left"
"$(idir)/bin/nvidia-smi" | grepq "$final" || fail "the install is not whole"
waited=$(grep -l "waiting for it" "$T"/race.*.err | wc -l)
echo "8 racers: $waited waited for the lock; $final installed"
