# plain build: valgrind and ASan do not mix; valgrind checks the plain build
# A whole install (fake kernel: modules, nodes, user space, CDI), then status, an upgrade
# and uninstall, each under valgrind's memcheck: no invalid access, no use of
# uninitialised memory, no definite or indirect leak.
#
command -v valgrind >/dev/null || fail "valgrind is needed (scripts/deps.sh installs it)"
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
vg() { # ARGS...: the installer under memcheck with the fake kernel; output in $T/vg.N
    local n=$1
    shift
    set +e
    env LD_PRELOAD="$FAKEKERNEL" FAKE_KERNEL_ROOT="$T/root" \
        valgrind --quiet --error-exitcode=99 --leak-check=full \
        --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
        --track-origins=yes --log-file="$T/vg.$n" \
        "$BIN" --root "$T/root" "$@" >"$T/out" 2>"$T/err"
    RC=$?
    set -e
    # Valgrind 3.19 does not know openat2 (437) nor pidfd_open (434) and answers ENOSYS,
    # with a warning: the installer then walks paths itself, and waits for ldconfig in
    # slices (interrupt_waitpid), which is what this test checks under memcheck.
    grep -v -e 'unhandled amd64-linux syscall: 43[47]' -e 'write your own handler' \
        -e 'README_MISSING_SYSCALL_OR_IOCTL' -e 'Nevertheless we consider this a bug' \
        -e 'valgrind.org/support/bug_reports' "$T/vg.$n" >"$T/vg.$n.rest" || true
    if [ -s "$T/vg.$n.rest" ]; then
        cat "$T/vg.$n.rest" >&2
        fail "valgrind reports for: $*"
    fi
    [ "$RC" = 0 ] || fail "exit $RC under valgrind: $* ($(tail -2 "$T/err"))"
}
vg 1 install --repo "file://$T/repo" $(kernel_args)
vg 2 status --json
vg 3 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_NEW"
vg 4 list-versions --repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"
vg 5 verify-module --kernel-release "$KERNEL" --module-cert "$FIX/keys/modkey.crt" "$(idir)"/drivers/*.ko
vg 6 uninstall --kernel-release "$KERNEL"
echo "memcheck: 6 commands, no errors, no leaks"
