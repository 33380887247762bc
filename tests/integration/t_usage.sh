# Bad usage: one line plus "Try ... --help", exit 2. --help: stdout, exit 0.
mkroot "$T/root"
expect_rc 0 --help
expect_out "Commands:"
expect_rc 0 install --help
expect_out "--driver-version V"
expect_rc 2 install --bogus
expect_err "unrecognized or incomplete option '--bogus'"
expect_err "Try 'nvidia-driver-installer install --help'"
expect_rc 2 frobnicate
expect_err "unknown command 'frobnicate'"
expect_rc 2
expect_err "missing COMMAND"
expect_rc 2 install --driver-version 'v550'
expect_err "is not 'default', 'latest'"
expect_rc 2 install --repo ftp://example/repo
expect_err "not an https://, http://, file://, oci:// or oci-layout: URL"
expect_rc 2 install --repo oci://registry.example/Drivers/repo
expect_err "the repository name 'Drivers/repo' has an upper-case letter"
expect_rc 2 install --repo oci://user:pw@registry.example/drivers
expect_err "user information in the registry host"
expect_rc 2 install --install-dir relative/path --repo file:///x
expect_rc 2 install --install-dir /home/../etc --repo file:///x
expect_rc 2 install --fetch-timeout 0 --repo file:///x
expect_rc 2 --log-format yaml install
expect_rc 2 install --skip-modules --kernel-release "$KERNEL"
expect_err "no repository configured"
expect_rc 2 install --skip-modules --kernel-release "$KERNEL" --repo "file://$T" --repo-key /nonexistent.pem
expect_err "repository key '/nonexistent.pem'"
# A FIFO as --repo-key: refused at once (the old reader waited for a writer forever:
# hence the timeout).
mkfifo "$T/fifo.pem"
set +e
timeout 60 "$BIN" --root "$T/root" install --skip-modules --kernel-release "$KERNEL" --repo "file://$T" \
    --repo-key "$T/fifo.pem" >"$T/out" 2>"$T/err"
RC=$?
set -e
[ "$RC" = 2 ] || { cat "$T/err"; fail "a FIFO as --repo-key: exit $RC, expected 2"; }
expect_err "repository key '$T/fifo.pem' is not a regular file (a FIFO, a device or a directory); fix: pass the PEM file"
echo "not a key" >"$T/bad.pem"
expect_rc 2 install --skip-modules --kernel-release "$KERNEL" --repo "file://$T" --repo-key "$T/bad.pem"
expect_err "not a PEM public key or certificate"
# A root without os-release is a configuration error.
mkdir -p "$T/empty"
set +e
"$BIN" --root "$T/empty" install --repo "file://$T" $(install_args) 2>"$T/err"
rc=$?
set -e
assert_eq "$rc" 2 "empty root"
expect_err "mount the host's root file system at --root"
# Without --skip-modules on a host without GPUs: exit 3 naming the cause.
new_repo "$T/repo" "$V_NEW:default"
expect_rc 3 install --repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"
expect_err "no NVIDIA GPU"
