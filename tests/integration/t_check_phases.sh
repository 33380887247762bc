# scripts/check-phases (make check's runner) stays as strict with phases in the background
# as without: every phase passing exits 0 with the table; background phases run one after
# the other at nice 19, their output printed whole under their names at the wait; one that
# fails fails the run at the wait with its own status and the ones after it do not run; a
# foreground phase that fails while a background one runs stops it, its whole process
# group, at once; the table marks what ran beside what; a bad argument exits 2.
CP=$SRC/scripts/check-phases
# The make check that runs this test may have set it: its own table is not ours to write.
unset CHECK_TIMES
cd "$T"

# Which phases ran beside which must not hang on the scheduler: a background phase at
# nice 19 on a loaded machine may begin seconds late, a short one end before the foreground
# phase begins. So the phases wait for each other's events (./await COMMAND: until it
# succeeds, 60 s at most, else exit 1): a background phase that waits for c's marker file
# ends after c began; c, waiting for a background phase's marker or process, ends after
# that phase began.
cat >await <<'EOF'
#!/bin/bash
for _ in $(seq 600); do "$@" >/dev/null 2>&1 && exit 0; sleep 0.1; done
exit 1
EOF
chmod +x await

# All pass: the background phases' output comes whole, at the wait, in their order, not
# mixed with the foreground's; they run at nice 19; the table names the foreground phases
# each ran beside; CHECK_TIMES has the same rows. bg2 ran beside c alone: it began after c
# did (after bg, which waits for c's marker) and c ends only once bg3 runs, which is after
# the queue wrote bg2's end; so d begins after bg2 ended. bg3 itself may end after d began.
CHECK_TIMES=$T/times "$CP" 'a=echo A1' '&bg=echo B1; ./await test -e c.on || exit 1; echo B2' \
    '&bg2=echo "Q1 nice $(ps -o ni= -p $$ | tr -d " ")"; touch bg2.on' '&bg3=touch bg3.on' \
    "c=echo C1; touch c.on; ./await test -e bg2.on || { echo 'bg2 not beside c'; exit 1; }
       ./await test -e bg3.on || { echo 'bg3 did not begin'; exit 1; }" \
    'd=echo D1' wait 'e=echo E1' >"$T/out" 2>&1 || fail "all passing: exit $?: $(cat "$T/out")"
grep -v '^check: ==' "$T/out" | grep -E '^(A1|B1|B2|Q1.*|C1|D1|E1)$' | tr '\n' ' ' >"$T/order"
assert_eq "$(cat "$T/order")" "A1 C1 D1 B1 B2 Q1 nice 19 E1 " "the lines' order"
grep -q '^check: -- bg (background) ended after [0-9]* s, its output:$' "$T/out" || fail "no header: $(cat "$T/out")"
grep -q '^check: bg  *[0-9]*  (beside c)$' "$T/out" || fail "the table: $(cat "$T/out")"
grep -q '^check: bg2  *[0-9]*  (beside c)$' "$T/out" || fail "the table: $(cat "$T/out")"
grep -qE '^check: bg3  *[0-9]*  \(beside c(, d)?\)$' "$T/out" || fail "the table: $(cat "$T/out")"
grep -q '^check: all 7 phases passed$' "$T/out" || fail "the verdict: $(cat "$T/out")"
times=$(cut -f1,3,4 "$T/times" | tr '\t\n' ',;')
[[ $times =~ ^a,ok,\;bg,ok,c\;bg2,ok,c\;bg3,ok,c(,\ d)?\;c,ok,\;d,ok,\;e,ok,\;total,ok,\;$ ]] ||
    fail "CHECK_TIMES: $times"

# A background phase that fails: the run stops at the wait with its status; the background
# phase after it and what follows the wait do not run.
rm -f c.on
set +e
"$CP" 'a=true' '&bg=echo partial; touch bg.on; ./await test -e c.on; exit 3' \
    '&bg2=echo never-run' 'c=touch c.on; ./await test -e bg.on' wait 'e=echo never-run' \
    >"$T/out" 2>&1
rc=$?
set -e
assert_eq "$rc" 3 "a failing background phase's status"
grep -q '^partial$' "$T/out" || fail "its output is missing: $(cat "$T/out")"
grep -qx 'never-run' "$T/out" && fail "a phase after the failed one ran"
grep -q '^check: bg  *[0-9]*  FAILED (exit 3)  (beside c)$' "$T/out" || fail "the table: $(cat "$T/out")"
grep -q '^check: bg2  *-  not run$' "$T/out" || fail "the table: $(cat "$T/out")"
grep -q '^check: FAILED in phase bg (exit 3)$' "$T/out" || fail "the verdict: $(cat "$T/out")"

# A foreground phase that fails while a background one runs: the run ends at once, the
# background phase and what it started are stopped. c fails once the background phase's
# process runs, noting when; that process would last 300 s.
marker=ndi-check-phases-$$-$RANDOM
set +e
"$CP" "&bg=bash -c 'exec -a $marker sleep 300' & wait; echo finished" \
    "c=./await pgrep -f '^$marker' || exit 5; date +%s >c.end; exit 4" 'd=echo never-run' \
    >"$T/out" 2>&1
rc=$?
set -e
assert_eq "$rc" 4 "a failing foreground phase's status"
[ $(($(date +%s) - $(cat c.end))) -lt 120 ] || fail "the run waited for the background phase"
grep -qxE 'never-run|finished' "$T/out" && fail "the run went on: $(cat "$T/out")"
grep -q '^check: bg  *[0-9]*  stopped  (beside c)$' "$T/out" || fail "the table: $(cat "$T/out")"
wait_for "the background phase's process to be stopped" 60 bash -c "! pgrep -f '^$marker' >/dev/null"

# A background phase after a foreground one of the same stretch: refused.
set +e
"$CP" 'a=true' '&bg=true' 'c=true' '&late=true' >"$T/out" 2>&1
rc=$?
set -e
assert_eq "$rc" 2 "a late background phase's status"
grep -q "background phase late given after a foreground one" "$T/out" || fail "$(cat "$T/out")"

# An argument that is neither a phase nor `wait`.
set +e
"$CP" 'a=true' 'no-equals-sign' >"$T/out" 2>&1
rc=$?
set -e
assert_eq "$rc" 2 "a bad argument's status"
grep -q "expected NAME=COMMAND, &NAME=COMMAND or wait, got 'no-equals-sign'" "$T/out" || fail "$(cat "$T/out")"
