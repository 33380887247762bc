# status reports what is installed (exit 3 when nothing is); uninstall removes user space
# and keeps the cache.
mkroot "$T/root"
new_repo "$T/repo" "$V_NEW:default"
expect_rc 3 status --json
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["installed"] is False, s' "$T/out"
expect_err "no driver is installed"
expect_rc 0 uninstall
expect_err "nothing installed"

expect_rc 0 install --repo "file://$T/repo" $(install_args)
expect_rc 0 status --kernel-release "$KERNEL"
expect_out "driver_version: $V_NEW (requested: default)"
expect_rc 0 status --kernel-release "$OTHER_KERNEL"
expect_out "differs from the running kernel"
expect_rc 0 uninstall
expect_err "driver removed"
assert_eq "$(ls -A "$(idir)")" "" "install dir after uninstall"
ls "$T/root/var/cache/nvidia-driver-installer/packages/"*.pkg >/dev/null || fail "cache not kept"
expect_rc 3 status

# An install dir from an older, non-atomic NVIDIA layout (real directories) is taken over;
# holding only the driver's files, nothing of it is kept (t_host_paths: what is kept).
mkdir -p "$(idir)/lib64" "$(idir)/bin"
echo old >"$(idir)/lib64/libnvidia-ml.so.1"
echo old >"$(idir)/lib64/libnvidia-old.so"
echo old >"$(idir)/bin/nvidia-smi"
expect_rc 0 install --repo "file://$T/repo" $(install_args)
[ -L "$(idir)/lib64" ] && [ ! -e "$(idir)/lib64/libnvidia-old.so" ] || fail "old layout not replaced"
[ ! -e "$(idir)/.taken-over" ] || fail "kept: $(find "$(idir)/.taken-over")"
expect_err "earlier install taken over (name=lib64)"
