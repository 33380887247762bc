# A run inside a container without --root works on the container's /, not the host's
# (docs/configuration.md, "Running in a container"): install and uninstall refuse (exit 2,
# one line naming the signal seen and the fix), the read-only commands warn once and go on,
# and --root (even /) or ROOT_MOUNT_DIR is the operator's word. The signal used here is the
# `container` variable podman sets, so the test means the same in a container or not.
for v in $(compgen -e | grep -E '^(NVIDIA_|ROOT_MOUNT_DIR$)' || true); do unset "$v"; done
mkroot "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
R=(--repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL")
# bare ARGS...: the installer without the harness's --root.
bare() {
    set +e
    "$@" >"$T/out" 2>"$T/err"
    RC=$?
    set -e
}
said() { grep -c "running in a container" "$T/err" || true; }

for c in install uninstall; do
    bare env container=podman "$BIN" "$c"
    assert_eq "$RC" 2 "$c in a container without --root"
    expect_err "^ERROR $c: running in a container (container=podman seen) without --root: "
    expect_err "; fix: mount the host's / and pass it as --root (ROOT_MOUNT_DIR); --root / if "
    assert_eq "$(wc -l <"$T/err")" 1 "$c: lines on stderr"
done
# The same under --log-format json: one object, with the fix and the exit code.
bare env container=podman "$BIN" --log-format json install "${R[@]}" --skip-modules
assert_eq "$RC" 2 "install --log-format json in a container"
python3 -c 'import json,sys; l=[json.loads(x) for x in open(sys.argv[1])]; assert len(l)==1 and l[0]["exit_code"]==2 and "container=podman" in l[0]["msg"] and "--root" in l[0]["fix"], l' "$T/err"

# Read-only commands: one warning, then their own work (whatever they find on this /).
for args in "status" "doctor ${R[*]}" "list-versions ${R[*]}" "config ${R[*]}"; do
    bare env container=podman "$BIN" $args
    assert_eq "$(said)" 1 "warnings of '$args'"
    grep -q "^WARN  ${args%% *}: running in a container without --root: .*(signal=container=podman fix=mount the host's / and pass it as --root (ROOT_MOUNT_DIR))" "$T/err" ||
        fail "$args: $(cat "$T/err")"
    [ "$RC" != 2 ] || [ "${args%% *}" = config ] || fail "$args refused: $(cat "$T/err")"
done

# The overrides: ROOT_MOUNT_DIR, --root before or after the command, and --root / itself.
bare env container=podman ROOT_MOUNT_DIR="$T/root" "$BIN" install "${R[@]}" --skip-modules --skip-verify
assert_eq "$RC" 0 "install with ROOT_MOUNT_DIR in a container: $(cat "$T/err")"
assert_eq "$(said)" 0 "warnings with ROOT_MOUNT_DIR"
bare env container=podman "$BIN" status --root "$T/root" --kernel-release "$KERNEL"
assert_eq "$RC" 0 "status --root after the command: $(cat "$T/err")"
assert_eq "$(said)" 0 "warnings with --root"
bare env container=podman "$BIN" --root "$T/root" uninstall --skip-modules --kernel-release "$KERNEL"
assert_eq "$RC" 0 "uninstall with --root in a container: $(cat "$T/err")"
# --root /: the plan only (this test must not change the machine it runs on).
bare env container=podman "$BIN" --root / install --dry-run --repo "file://$T/none" \
    --repo-key "$FIX/keys/pub.pem"
assert_eq "$(said)" 0 "install --root / in a container: $(cat "$T/err")"

# mirror and verify-module work on what they are given: nothing to say.
bare env container=podman "$BIN" verify-module --kernel-release "$KERNEL" "$FIX/drv-$V_NEW/kernel/nvidia.ko"
assert_eq "$(said)" 0 "verify-module in a container"
bare env container=podman "$BIN" mirror --repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" \
    --kernel "$KERNEL" --to "$T/mirror"
assert_eq "$RC" 0 "mirror in a container: $(cat "$T/err")"
assert_eq "$(said)" 0 "mirror in a container"
