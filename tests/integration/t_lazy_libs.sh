# libcurl, libarchive, libkmod and libmount are loaded when first needed, not at exec
# (installer/util/dlib.h): a cold install maps those it uses, a re-run that finds the
# driver live and its index fresh maps none of them, and a library the image lacks is a
# one-line error naming it, with nothing changed on the node.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/srv/repo" "$V_NEW:default"
"$SRC/scripts/make-repo" sign --repo "$T/srv/repo" --key "$FIX/keys/key.pem" --max-age 300
start_httpd "$T/srv"

needed=$(readelf -d "$BIN" | grep NEEDED || true)
for lib in libcurl libarchive libkmod libmount; do
    if grep -q "$lib" <<<"$needed"; then fail "the binary links $lib:"$'\n'"$needed"; fi
done

# mapped LIB: whether the run in $T/err (LD_DEBUG=files) loaded LIB.
mapped() { grep -q "file=$1 " "$T/err"; }
INST_WRAP="env LD_DEBUG=files"
expect_rc 0 install --repo "$HTTP/repo" $(kernel_args)
for lib in libcurl.so.4 libarchive.so.13 libkmod.so.2; do
    mapped "$lib" || fail "a cold install did not load $lib"
done
expect_rc 0 install --repo "$HTTP/repo" $(kernel_args)
expect_err "already installed"
for lib in libcurl.so.4 libarchive.so.13 libkmod.so.2 libmount.so.1; do
    if mapped "$lib"; then fail "a warm re-run loaded $lib"; fi
done
expect_rc 0 status
if mapped libcurl.so.4; then fail "status loaded libcurl"; fi
INST_WRAP=

# The image without libarchive: exit 1, the library and its package named, the driver
# that was there still the one installed.
# hider SONAME: a wrapper that runs its command with SONAME replaced by /dev/null.
hider() {
    local lib
    lib=$(ldconfig -p | awk -v s="$1" '$1 == s && /x86-64/ && !found {print $NF; found = 1}')
    [ -n "$lib" ] || fail "$1 not in ld.so.cache"
    cat >"$T/hide-$1" <<HIDE
#!/bin/sh
exec unshare -m --propagation private sh -c 'mount --bind /dev/null "$lib" && exec "\$0" "\$@"' "\$@"
HIDE
    chmod +x "$T/hide-$1"
    echo "$T/hide-$1"
}
new_signed_repo "$T/srv/repo" "$V_OLD"
before=$(snapshot "$(idir)")
INST_WRAP=$(hider libarchive.so.13)
expect_rc 1 install --repo "$HTTP/repo" $(kernel_args) --driver-version "$V_OLD"
INST_WRAP=
expect_err "ERROR .*cannot load libarchive.so.13: .*fix: install the libarchive13 package"
assert_eq "$(grep -c ERROR "$T/err")" 1 "error lines"
assert_eq "$(snapshot "$(idir)")" "$before" "install dir after the failure"
assert_eq "$(installed_version)" "$V_NEW" "installed version after the failure"

# Without libkmod, checking a module is the image's fault (exit 1), not the module's (5).
INST_WRAP=$(hider libkmod.so.2)
expect_rc 1 verify-module --kernel-release "$KERNEL" --module-cert "$FIX/keys/modkey.crt" \
    "$(idir)"/drivers/*.ko
INST_WRAP=
expect_err "cannot load libkmod.so.2: .*libkmod2"
