# Files other installers put in the install dir's lib64/ survive a version switch: GKE's
# NCCL/gIB installers `cp -r` their libraries into INSTALL_DIR/lib64 (a hostPath that leads
# into the current version's directory). At each switch, what the old version's package
# did not put there is carried into the new version; the old version's own files are not,
# a link is carried as a link and never followed (not even one leading out of the install
# dir), and a file of the new package keeps its name.
mkroot "$T/root"
new_repo "$T/repo" "$V_OLD:default" "$V_NEW"
R="file://$T/repo"
expect_rc 0 install --repo "$R" $(install_args)
lib=$(idir)/lib64
cur() { echo "$(idir)/$(readlink "$(idir)/.current")"; }

# What gke's nccl-rdma-installer.yaml does (cp -r /var/lib/gib/lib64/. INTO/lib64): files,
# a link among them, a subdirectory.
mkdir -p "$T/gib/lib64/profiles"
echo "nccl net plugin" >"$T/gib/lib64/libnccl-net.so"
ln -s libnccl-net.so "$T/gib/lib64/libnccl-net.so.1"
echo "export NCCL_NET=gIB" >"$T/gib/lib64/profiles/env.sh"
cp -r "$T/gib/lib64/." "$lib"
# Links out of the install dir, to a directory and to a file: carried as links, never read.
mkdir -p "$T/outside/dir"
echo secret >"$T/outside/dir/secret"
ln -s "$T/outside/dir" "$lib/outside-dir"
ln -s "$T/outside/dir/secret" "$lib/outside-file"
outside=$(snapshot "$T/outside")
# A foreign file named like one of the next version's own files.
echo impostor >"$lib/libcuda.so.$V_NEW"
# Links that are not in the package but are the old version's by where they resolve: the
# soname link the host's ldconfig makes beside a library, and a link to that link. They
# stay behind. A relative link that climbs out of lib64/ is carried, as a link.
ln -s "libcuda.so.$V_OLD" "$lib/libcuda-compat.so.1"
ln -s libcuda-compat.so.1 "$lib/libcuda-compat.so"
ln -s ../libnccl-net.so "$lib/profiles/plugin"
ln -s ../../../../../etc "$lib/up-and-out"

# foreign_ok: the foreign entries are in the current version, as they were put there.
foreign_ok() {
    local v
    v=$(cur)/lib64
    [ -f "$v/libnccl-net.so" ] && [ ! -L "$v/libnccl-net.so" ] || fail "$1: libnccl-net.so not carried"
    assert_eq "$(cat "$lib/libnccl-net.so")" "nccl net plugin" "$1: libnccl-net.so"
    assert_eq "$(readlink "$v/libnccl-net.so.1")" libnccl-net.so "$1: the plugin's link"
    assert_eq "$(cat "$lib/profiles/env.sh")" "export NCCL_NET=gIB" "$1: profiles/env.sh"
    assert_eq "$(readlink "$v/outside-dir")" "$T/outside/dir" "$1: the link to a directory outside"
    assert_eq "$(readlink "$v/outside-file")" "$T/outside/dir/secret" "$1: the link to a file outside"
    assert_eq "$(find "$v" -name secret | wc -l)" 0 "$1: files read through a link outside"
    assert_eq "$(snapshot "$T/outside")" "$outside" "$1: the directory outside"
    assert_eq "$(readlink "$v/profiles/plugin")" ../libnccl-net.so "$1: a link inside lib64/ to the plugin"
    assert_eq "$(readlink "$v/up-and-out")" ../../../../../etc "$1: a link climbing out of lib64/"
    [ ! -L "$v/libcuda-compat.so.1" ] || fail "$1: a link to the old version's libcuda was carried"
    [ ! -L "$v/libcuda-compat.so" ] || fail "$1: a link to that link was carried"
}
# own_only VERSION: nothing of the other version's package is in the current lib64/.
own_only() {
    local v other=$V_OLD
    v=$(cur)/lib64
    [ "$1" = "$V_OLD" ] && other=$V_NEW
    assert_eq "$(cd "$v" && find . -name "*.so.$other" | grep -v "^./libcuda.so.$V_NEW\$" | sort)" "" \
        "$1: files of $other's package in $1's lib64"
    [ -e "$v/libcuda.so.$1" ] || fail "$1: its own libcuda is missing"
}

expect_rc 0 install --repo "$R" $(install_args) --driver-version "$V_NEW"
assert_eq "$(installed_version)" "$V_NEW" "after the upgrade"
foreign_ok upgrade
own_only "$V_NEW"
# The new package's libcuda.so.$V_NEW is kept, with a warning; the impostor is not carried.
head -c 4 "$lib/libcuda.so.$V_NEW" | grepq ELF || fail "the new package's libcuda was replaced"
expect_err "has the name of one of the new version's: the new version's is kept (path=libcuda.so.$V_NEW"
expect_err "files of other installers carried to the new version (carried=7 kept_new=1 not_carried=0"
assert_eq "$(ls "$(idir)/.versions" | wc -l)" 1 "versions kept after the upgrade"

# Back down (runbook 3's rollback): carried again, and $V_NEW's own files stay behind.
expect_rc 0 install --repo "$R" $(install_args) --driver-version "$V_OLD"
assert_eq "$(installed_version)" "$V_OLD" "after the rollback"
foreign_ok rollback
own_only "$V_OLD"
[ ! -e "$lib/libcuda.so.$V_NEW" ] || fail "the new version's libcuda leaked into the rollback"

# A version installed before versions recorded their files: NVIDIA's names stand for the
# list, so its libraries stay behind and the rest goes on.
rm "$(cur)/.lib64-files"
expect_rc 0 install --repo "$R" $(install_args) --driver-version "$V_NEW"
foreign_ok "upgrade from an unlisted version"
own_only "$V_NEW"
expect_err "own_list=none: NVIDIA's file names"
[ -f "$(cur)/.lib64-files" ] || fail "the new version records no list"

# The same package again for another kernel (one package serving two kernels, after a node
# image upgrade): the version's tree is replaced in place, and the others' files go along.
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$V_NEW" \
    --kernel "$OTHER_KERNEL" "$FIX/pkg-$V_NEW.tar.zst" >/dev/null
before=$(readlink "$(idir)/.current")
expect_rc 0 install --repo "$R" $(install_args) --driver-version "$V_NEW" --kernel-release "$OTHER_KERNEL"
assert_eq "$(readlink "$(idir)/.current")" "$before" "the same version, replaced in place"
assert_eq "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["kernel_release"])' "$(cur)/.install.json")" \
    "$OTHER_KERNEL" "the version's manifest after the repair"
foreign_ok "the same version for another kernel"
own_only "$V_NEW"
# The automatic rollback after a failed load (fake kernel): the switch to the new version
# carried the plugin there, the rollback carries it back, and the new version goes.
FAKE_KERNEL=1
rm -rf "$T/root" "$T/repo"
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
expect_rc 0 install --repo "$R" $(kernel_args)
cp -r "$T/gib/lib64/." "$lib"
FAKE_KERNEL_FAIL=nvidia:EPERM expect_rc 6 install --repo "$R" $(kernel_args) --driver-version "$V_NEW"
assert_eq "$(installed_version)" "$V_OLD" "after the failed load"
assert_eq "$(cat "$lib/libnccl-net.so")" "nccl net plugin" "the plugin after the automatic rollback"
assert_eq "$(readlink "$lib/libnccl-net.so.1")" libnccl-net.so "the plugin's link after the automatic rollback"
assert_eq "$(ls "$(idir)/.versions" | wc -l)" 1 "versions kept after the automatic rollback"
