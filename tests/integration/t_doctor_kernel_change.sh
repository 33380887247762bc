# doctor after a kernel change: the driver installed for one kernel, the node booted into
# another. The kernel check fails and says that no installed package fits this kernel, as
# status --json says the kernel does not match; its fix follows what the repository has
# for the new kernel (asked with --repo) or says how to ask; "loaded" no longer says that
# install loads the installed modules. Following the fix (install) makes doctor healthy.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
echo "include /etc/ld.so.conf.d/*.conf" >"$T/root/etc/ld.so.conf"
new_signed_repo "$T/repo" "$V_OLD:default"
R="file://$T/repo"
key=(--repo-key "$FIX/keys/pub.pem")
expect_rc 0 install --repo "$R" $(kernel_args)

# The node reboots into another kernel: its modules are gone, the install dir stays.
KERNEL=$OTHER_KERNEL mkkernel "$T/root"
rm -rf "$T/root/proc/modules" "$T/root/proc/driver" "$T/root/run" "$T/root/sys/module/"nvidia* \
    "$T/root/sys/module/drm" "$T/root/sys/module/drm_kms_helper" "$T/root/dev/"nvidia*
new=(--kernel-release "$OTHER_KERNEL")
line() { # line VERDICT CHECK: the check's line and its fix line, or the test fails
    grep -A1 -E "^\[$1 *\] $2 " "$T/out" || fail "no [$1] $2 line: $(cat "$T/out")"
}
fits="the installed driver $V_OLD is for kernel $KERNEL: no installed package fits this kernel"

expect_rc 8 status --json "${new[@]}"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["kernel_matches"] is False, d' "$T/out"

# Without --repo: the check fails and says how to ask the repository.
expect_rc 9 doctor "${new[@]}"
kline=$(line fail kernel)
case $kline in *"$OTHER_KERNEL (x86_64)"*"$fits"*) ;; *) fail "kernel check: $kline" ;; esac
case $kline in *"fix: run install with the node's repository (--repo)"*"doctor --repo"*"or boot kernel $KERNEL again"*) ;;
*) fail "kernel fix without --repo: $kline" ;; esac
lline=$(line fail loaded)
case $lline in *"it loads the installed modules"*) fail "loaded points at install: $lline" ;; esac
case $lline in *"fix: its modules are for kernel $KERNEL, not $OTHER_KERNEL: see the kernel check"*) ;;
*) fail "loaded fix: $lline" ;; esac

# With --repo, and no package for the new kernel: add one (the repository check agrees).
expect_rc 9 doctor --repo "$R" "${key[@]}" "${new[@]}"
kline=$(line fail kernel)
case $kline in *"$fits"*"fix: the repository has nothing to install on kernel $OTHER_KERNEL (see the repository check): add a package for it"*"or boot kernel $KERNEL again"*) ;;
*) fail "kernel fix, no package: $kline" ;; esac
line fail repository >/dev/null

# A repository that does not answer: install is the fix once it does.
expect_rc 9 doctor --repo "file://$T/nowhere" "${key[@]}" "${new[@]}"
kline=$(line fail kernel)
case $kline in *"$fits"*"fix: run install once the repository answers (see the repository check)"*) ;;
*) fail "kernel fix, no answer: $kline" ;; esac

# The package for the new kernel published: install is the fix, and doctor says which driver.
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$V_NEW" \
    --kernel "$OTHER_KERNEL" --tag default "$FIX/opkg.tar.zst" >/dev/null
expect_rc 9 doctor --repo "$R" "${key[@]}" "${new[@]}"
kline=$(line fail kernel)
case $kline in *"$fits"*"fix: run install: it installs driver $V_NEW, which the repository has for kernel $OTHER_KERNEL"*) ;;
*) fail "kernel fix, a package: $kline" ;; esac
line ok repository >/dev/null

# Following it: install for the new kernel, then doctor's kernel check holds.
expect_rc 0 install --repo "$R" "${key[@]}" "${new[@]}" --fetch-timeout 20 \
    --module-cert "$FIX/keys/modkey.crt"
expect_rc 0 doctor --repo "$R" "${key[@]}" "${new[@]}"
line ok kernel >/dev/null
line ok loaded >/dev/null
