# Names longer than the installer can hold are refused with exit 2 naming the limit, never cut
# silently (a cut kernel release or path would name another one).
mkroot "$T/root"
new_repo "$T/repo" "$V_OLD:default"
repeat() { printf "%${2}s" "" | tr ' ' "$1"; }

# A kernel release: at most 64 bytes, as uname's. 64 is used whole (no package for it: exit 3
# naming it), 65 is refused.
ok_release=6.1.0-$(repeat x 58)
expect_rc 3 install --repo "file://$T/repo" $(install_args) --kernel-release "$ok_release" --dry-run
expect_err "has no package for kernel $ok_release ("
long_release=6.1.0-$(repeat x 59)
expect_rc 2 install --repo "file://$T/repo" $(install_args) --kernel-release "$long_release" --dry-run
expect_err "is 65 bytes long; a kernel release has at most 64 (uname -r)"
NVIDIA_KERNEL_RELEASE="$long_release" expect_rc 2 status
expect_err "NVIDIA_KERNEL_RELEASE"
expect_err "at most 64"

# Host paths: at most 1024 bytes (room for what the installer appends within PATH_MAX).
long_dir=/home/kubernetes/$(for i in 1 2 3 4 5; do printf '%s/' "$(repeat d 250)"; done)x
expect_rc 2 install --repo "file://$T/repo" $(install_args) --install-dir "$long_dir" --dry-run
expect_err "--install-dir (NVIDIA_INSTALL_DIR_HOST) is 1273 bytes long; at most 1024"
expect_rc 2 install --repo "file://$T/repo" $(install_args) --cache-dir "$long_dir" --dry-run
expect_err "--cache-dir (NVIDIA_CACHE_DIR) is 1273 bytes long; at most 1024"

# A repository URL has no fixed limit: a long one is used whole (the error names its end).
long_url="file://$T/$(for i in 1 2 3 4 5; do printf '%s/' "$(repeat r 250)"; done)end-of-url"
expect_rc 4 install --repo "$long_url" $(install_args) --dry-run
expect_err "end-of-url/index.json"
