# build-driver-package says how far it is while it compiles: a line per step on stderr with
# the time since the start, and while make runs, every --progress-every seconds, the build's
# latest line; --quiet says none of it. NVIDIA's sources are not compiled: `make` is a
# stand-in on PATH that prints compiler lines, waits for the test to have seen the
# heartbeat, then leaves the stand-in driver's modules where Kbuild would.
BDP=$SRC/scripts/build-driver-package
mkdir -p "$T/src/kernel" "$T/headers" "$T/bin"
run_source "$FIX/drv-$V_NEW"
echo "# the stand-in make on PATH builds these" >"$T/src/kernel/Makefile"
echo "# headers of the test kernel" >"$T/headers/Makefile"
cat >"$T/bin/make" <<EOF
#!/bin/bash
# make -C DIR ... modules, as NVIDIA's Kbuild would run it.
[ "\$1" = -C ] || { echo "stand-in make: expected -C DIR, got \$*" >&2; exit 2; }
echo "make: Entering directory '\$2'"
echo "  CC [M]  \$2/nvidia/nv.o"
for _ in \$(seq 1200); do [ -e "$T/go" ] && break; sleep 0.05; done
[ -e "$T/go" ] || { echo "stand-in make: nobody said go" >&2; exit 3; }
[ ! -e "$T/fail" ] || { echo "nvidia/nv.c:12: error: stand-in failure"; exit 2; }
cp "$FIX/drv-$V_NEW/kernel/"*.ko "\$2/"
echo "  LD [M]  \$2/nvidia.ko"
EOF
chmod +x "$T/bin/make"
bdp() {
    PATH="$T/bin:$PATH" "$BDP" --kernel "$KERNEL" --headers "$T/headers" --source "$T/src" \
        --sign-key "$FIX/keys/modkey.pem" --sign-cert "$FIX/keys/modkey.crt" --repo "$T/repo" \
        --repo-key "$FIX/keys/key.pem" --installer "$BIN" "$@"
}

# While make runs: a heartbeat with the build's last line, as often as asked.
bdp --work "$T/work" --progress-every 0.1 >"$T/out" 2>"$T/err" &
pid=$!
heartbeat() {
    grep -qE "^build-driver-package: \[0:[0-9]{2}\] compiling the proprietary modules: 0:[0-9]{2} so far, last: CC \[M\]  .*/nvidia/nv\.o$" "$T/err"
}
wait_for "the heartbeat while make runs" 60 heartbeat
touch "$T/go"
set +e
wait $pid
rc=$?
set -e
assert_eq "$rc" 0 "build-driver-package: $(cat "$T/err")"
# A line per step, each with the time since the start (STEP is an extended regex).
has_step() {
    grep -qE "^build-driver-package: \[0:[0-9]{2}\] $1\$" "$T/err" || fail "no progress line /$1/: $(cat "$T/err")"
}
has_step "driver $T/src for kernel $KERNEL, proprietary modules"
has_step "compiling the proprietary modules of $V_NEW for $KERNEL \(-j[0-9]+\)"
has_step "compiled the proprietary modules in 0:[0-9]{2}: nvidia, nvidia-uvm, nvidia-modeset, nvidia-drm, nvidia-peermem"
has_step "5 modules of $V_NEW: nvidia, nvidia-drm, nvidia-modeset, nvidia-peermem, nvidia-uvm"
has_step "stripping and signing nvidia\.ko \(1 of 5\)"
has_step "stripping and signing nvidia-uvm\.ko \(5 of 5\)"
has_step "checking the signed modules as a node will \(verify-module\)"
has_step "collecting the user space of $V_NEW"
has_step "packing nvidia-$V_NEW-proprietary-$KERNEL\.tar\.zst"
has_step "adding it to $T/repo and signing the index"
has_step "done"
# Only progress goes to stderr; the results stay on stdout.
! grep -v '^build-driver-package: \[[0-9]*:[0-9][0-9]\] ' "$T/err" || fail "stderr has more than progress"
grep -q "^build-driver-package: added packages/$KERNEL/x86_64/nvidia-$V_NEW-proprietary.tar.zst" "$T/out" ||
    fail "stdout: $(cat "$T/out")"
! grep -q '\] ' "$T/out" || fail "progress on stdout: $(cat "$T/out")"

# --quiet: nothing on stderr at all.
bdp --work "$T/work-quiet" --progress-every 0.1 --quiet >"$T/out" 2>"$T/err"
[ ! -s "$T/err" ] || fail "--quiet printed: $(cat "$T/err")"
grep -q "^build-driver-package: added" "$T/out" || fail "--quiet lost the result: $(cat "$T/out")"

# A failing build: the error names the log and shows its end, after the progress lines.
touch "$T/fail"
set +e
bdp --work "$T/work-fail" >"$T/out" 2>"$T/err"
rc=$?
set -e
assert_eq "$rc" 1 "a failing build"
grep -q "^build-driver-package: make -C .* failed (exit 2) - full log: $T/work-fail/build/.*/build.log$" "$T/err" ||
    fail "failure: $(cat "$T/err")"
grep -qx "nvidia/nv.c:12: error: stand-in failure" "$T/err" || fail "the log's end: $(cat "$T/err")"
grep -q "the proprietary modules of $V_NEW do not build for kernel $KERNEL" "$T/err" || fail "hint: $(cat "$T/err")"
bdp --work "$T/work-fail" --progress-every 0 >/dev/null 2>"$T/err" && fail "--progress-every 0 accepted"
grep -q "^build-driver-package: --progress-every 0.0: give a number of seconds above 0$" "$T/err" ||
    fail "--progress-every 0: $(cat "$T/err")"
