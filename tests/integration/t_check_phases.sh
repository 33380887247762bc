# scripts/check-phases (make check's runner) stays as strict with phases in the background
# as without: every phase passing exits 0 with the table; a background phase that fails
# fails the run at the wait with its own status, its output printed whole under its name;
# a foreground phase that fails while a background one runs stops it, its whole process
# group, at once; the table marks what ran beside what; a bad argument exits 2.
CP=$SRC/scripts/check-phases
cd "$T"

# All pass: the background phase's output comes whole, after it ended, not mixed with the
# foreground's; the table names the phases it ran beside; CHECK_TIMES has the same rows.
CHECK_TIMES=$T/times "$CP" 'a=echo A1' '&bg=echo B1; sleep 0.5; echo B2' 'c=echo C1; sleep 1' \
    'd=echo D1' wait 'e=echo E1' >"$T/out" 2>&1 || fail "all passing: exit $?: $(cat "$T/out")"
grep -v '^check: ==' "$T/out" | grep -E '^(A1|B1|B2|C1|D1|E1)$' | tr '\n' ' ' >"$T/order"
assert_eq "$(cat "$T/order")" "A1 C1 D1 B1 B2 E1 " "the lines' order"
grep -q '^check: -- bg (background) ended after [0-9]* s, its output:$' "$T/out" || fail "no header: $(cat "$T/out")"
grep -q '^check: bg  *[0-9]*  (beside c, d)$' "$T/out" || fail "the table: $(cat "$T/out")"
grep -q '^check: all 5 phases passed$' "$T/out" || fail "the verdict: $(cat "$T/out")"
assert_eq "$(cut -f1,3,4 "$T/times" | tr '\t\n' ',;')" "a,ok,;bg,ok,c, d;c,ok,;d,ok,;e,ok,;total,ok,;" "CHECK_TIMES"

# A background phase that fails: the run stops at the wait with its status; what follows
# the wait does not run.
set +e
"$CP" 'a=true' '&bg=echo partial; exit 3' 'c=sleep 0.3' wait 'e=echo never-run' >"$T/out" 2>&1
rc=$?
set -e
assert_eq "$rc" 3 "a failing background phase's status"
grep -q '^partial$' "$T/out" || fail "its output is missing: $(cat "$T/out")"
grep -qx 'never-run' "$T/out" && fail "a phase after the failed wait ran"
grep -q '^check: bg  *[0-9]*  FAILED (exit 3)  (beside c)$' "$T/out" || fail "the table: $(cat "$T/out")"
grep -q '^check: FAILED in phase bg (exit 3)$' "$T/out" || fail "the verdict: $(cat "$T/out")"

# A foreground phase that fails while a background one runs: the run ends at once, the
# background phase and what it started are stopped.
marker=ndi-check-phases-$$-$RANDOM
t0=$(date +%s)
set +e
"$CP" "&bg=bash -c 'exec -a $marker sleep 60' & wait; echo finished" 'c=exit 4' 'd=echo never-run' >"$T/out" 2>&1
rc=$?
set -e
assert_eq "$rc" 4 "a failing foreground phase's status"
[ $(($(date +%s) - t0)) -lt 20 ] || fail "the run waited for the background phase"
grep -qxE 'never-run|finished' "$T/out" && fail "the run went on: $(cat "$T/out")"
grep -q '^check: bg  *-  stopped  (beside c)$' "$T/out" || fail "the table: $(cat "$T/out")"
wait_for "the background phase's process to be stopped" 5 bash -c "! pgrep -f '^$marker' >/dev/null"

# An argument that is neither a phase nor `wait`.
set +e
"$CP" 'a=true' 'no-equals-sign' >"$T/out" 2>&1
rc=$?
set -e
assert_eq "$rc" 2 "a bad argument's status"
grep -q "expected NAME=COMMAND, &NAME=COMMAND or wait, got 'no-equals-sign'" "$T/out" || fail "$(cat "$T/out")"
