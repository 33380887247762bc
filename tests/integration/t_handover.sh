# install ... -- CMD: CMD runs after a successful install, with the driver's lib64 and bin
# first, as this process (exec: same pid, so it gets the signals); never after a failure.
mkroot "$T/root"
new_repo "$T/repo" "$V_NEW:default"
cat >"$T/plugin.sh" <<'SH'
#!/bin/sh
echo "pid $$"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
echo "smi: $(nvidia-smi)"
trap 'echo "got TERM"; exit 42' TERM
echo ready >"$1"
while :; do sleep 0.1; done
SH
chmod +x "$T/plugin.sh"
"$BIN" --root "$T/root" install --repo "file://$T/repo" $(install_args) -- "$T/plugin.sh" "$T/ready" \
    >"$T/out" 2>"$T/err" &
pid=$!
# The command writes $T/ready once it runs; an installer that exits first fails at once.
started() {
    [ -e "$T/ready" ] && return 0
    kill -0 "$pid" 2>/dev/null || fail "the command did not start: $(cat "$T/err")"
    return 1
}
wait_for "the command to start" 30 started
kill -TERM "$pid"
set +e
wait "$pid"
rc=$?
set -e
assert_eq "$rc" 42 "the command's exit status"
expect_out "pid $pid"
expect_out "got TERM"
expect_out "LD_LIBRARY_PATH=$T/root/home/kubernetes/bin/nvidia/lib64"
expect_out "smi: NVIDIA-SMI stand-in  Driver Version: $V_NEW"
expect_err "handing over"

# A failed install does not start the command, and its exit code says why.
expect_rc 3 install --repo "file://$T/repo" $(install_args) --driver-version 999 -- touch "$T/ran"
[ ! -e "$T/ran" ] || fail "the command ran after a failed install"
expect_rc 127 install --repo "file://$T/repo" $(install_args) -- "$T/no-such-command"
expect_err "hand-over: cannot run"
