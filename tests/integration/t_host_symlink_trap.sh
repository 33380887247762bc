# Host paths are resolved inside --root: an absolute symlink on the host (/home -> /var/home,
# as on some distributions) lands in the host's /var/home, never in the container's.
mkroot "$T/root"
mkdir -p "$T/root/var/home"
ln -s /var/home "$T/root/home"
# os-release as an absolute link, as on many hosts.
mkdir -p "$T/root/usr/lib"
mv "$T/root/etc/os-release" "$T/root/usr/lib/os-release"
ln -s /usr/lib/os-release "$T/root/etc/os-release"
new_repo "$T/repo" "$V_NEW:default"
expect_rc 0 install --repo "file://$T/repo" $(install_args)
[ -x "$T/root/var/home/kubernetes/bin/nvidia/bin/nvidia-smi" ] || fail "not installed under the host's /var/home"
[ ! -e /var/home/kubernetes ] || fail "escaped to the container's /var/home"
# A hostile link in the install dir's parents pointing at / stays inside the root too.
rm -rf "$T/root/var/home/kubernetes"
mkdir -p "$T/root/var/home/kubernetes"
ln -s / "$T/root/var/home/kubernetes/bin"
expect_rc 0 install --repo "file://$T/repo" $(install_args)
[ -x "$T/root/nvidia/bin/nvidia-smi" ] || fail "link to / not confined to the root"
[ ! -e /nvidia ] || fail "escaped to the container's /"

# Links planted inside the install dir before the installer runs: its entries (lib64,
# .current, a staging name) pointing at the host's /etc or at /. They are replaced, never
# followed: nothing is written outside the install dir, here or in the container.
rm -rf "$T/root/var/home/kubernetes"
mkdir -p "$T/root/var/home/kubernetes/bin/nvidia" "$T/root/etc/victim"
d="$T/root/var/home/kubernetes/bin/nvidia"
ln -s /etc/victim "$d/lib64"
ln -s / "$d/.current"
ln -s /etc "$d/bin"
ln -s ../../../../etc "$d/firmware"
before_etc=$(snapshot "$T/root/etc")
expect_rc 0 install --repo "file://$T/repo" $(install_args)
assert_eq "$(snapshot "$T/root/etc")" "$before_etc" "the host's /etc after planted links"
[ -x "$d/bin/nvidia-smi" ] && [ -f "$d/lib64/libcuda.so.1" ] || fail "not installed through the planted names"
[ "$(readlink "$d/.current")" != / ] || fail ".current still points at /"
[ ! -e /etc/victim ] || fail "escaped to the container's /etc"
