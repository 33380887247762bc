# Options that are refused are refused before any change, never after the switch:
# --skip-verify on a host with a GPU, host paths too long for what the installer appends
# to them. The host root is as it was, byte for byte.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_NEW:default"
R="file://$T/repo"
host=$(snapshot "$T/root")

expect_rc 2 install --repo "$R" $(kernel_args) --skip-verify
expect_err "ERROR install: --skip-verify is for hosts without a GPU; this one has 1"
assert_eq "$(snapshot "$T/root")" "$host" "the host after --skip-verify"
NVIDIA_SKIP_VERIFY=1 expect_rc 2 install --repo "$R" $(kernel_args)
assert_eq "$(snapshot "$T/root")" "$host" "the host after NVIDIA_SKIP_VERIFY=1"

# 19 components of 200 bytes: each a valid name, the whole too long to install under.
long=$(python3 -c "print('/' + '/'.join(['d' * 200] * 19))")
for opt in --install-dir --cache-dir --cdi-dir --host-mount; do
    expect_rc 2 install --repo "$R" $(kernel_args) "$opt" "$long"
    expect_err "$opt (NVIDIA_[A-Z_]*) is 3819 bytes long; at most 1024"
    assert_eq "$(snapshot "$T/root")" "$host" "the host after a long $opt"
done
expect_rc 2 install --repo "$R" $(kernel_args) --metrics-file "$long.prom"
expect_err "is 3824 bytes long"
# A component longer than a file name can be.
expect_rc 2 install --repo "$R" $(kernel_args) --install-dir "/opt/$(printf 'n%.0s' $(seq 300))"
expect_err "a component longer than 255 bytes"
assert_eq "$(snapshot "$T/root")" "$host" "the host after the long paths"
# The same host takes a sound install.
expect_rc 0 install --repo "$R" $(kernel_args)
