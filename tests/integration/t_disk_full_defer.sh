# A full disk while a deferred version is staged (--when-busy defer, the loaded driver
# busy): the install dir is a small tmpfs (in a private mount namespace) that holds the
# installed driver but not the next one beside it. The run fails cleanly, naming the
# cause; nothing is pending (record, labels, metric); the staging tree is removed; the old
# driver keeps serving exactly as it did. With room again, the version is deferred.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
cp -a "$FIX/sdrv-$V_NEW" "$T/drv"
head -c $((6 * 1024 * 1024)) /dev/urandom >"$T/drv/firmware/nvidia/$V_NEW/big.bin"
"$SRC/scripts/make-repo" pack "$T/drv" "$T/big.tar.zst"
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$V_NEW" \
    --kernel "$KERNEL" "$T/big.tar.zst" >/dev/null
R="file://$T/repo"
prom=/var/lib/metrics/installer.prom
features=$T/root/etc/kubernetes/node-feature-discovery/features.d

hold_mount_ns
mkdir -p "$(idir)"
$INST_WRAP mount -t tmpfs -o size=4m tmpfs "$(idir)"
expect_rc 0 install --repo "$R" $(kernel_args)
assert_eq "$(installed_version)" "$V_OLD" "installed on the small file system"
served() { # the install dir, the modules, and what the cluster reads
    $INST_WRAP sh -c "cd '$(idir)' && find . -printf '%p %y %s %l %m\n' | sort"
    loaded_modules
    cat "$T/root/sys/module/nvidia/version" "$T/root/run/nvidia/validations/driver-ready" \
        "$features/00-nvidia-driver" "$T/root/var/run/cdi/"*
}
unchanged() { # BEFORE WHAT: what the node serves is still BEFORE
    [ "$(served)" = "$1" ] || fail "$2: $(diff <(echo "$1") <(served) | sed -n 1,8p)"
}
mkdir -p "$T/root/proc/4242/fd"
ln -s /dev/nvidiactl "$T/root/proc/4242/fd/3"
echo cuda-app >"$T/root/proc/4242/comm"
before=$(served)

expect_rc 1 install --repo "$R" $(kernel_args) --when-busy defer --driver-version "$V_NEW" --metrics-file "$prom"
expect_err "No space left on device"
expect_err "fix: a file system is full: free space on the one holding the file named"
unchanged "$before" "what the node serves after ENOSPC while deferring (staging removed)"
! $INST_WRAP test -e "$(idir)/.pending.json" && [ ! -e "$features/00-nvidia-driver-pending" ] ||
    fail "pending after a deferral that failed"
grep -qx 'nvidia_driver_installer_upgrade_pending{version="",reason=""} 0' "$T/root$prom" ||
    fail "metric: $(grep upgrade_pending "$T/root$prom")"
expect_rc 0 status
! grep -q "^pending:" "$T/out" || fail "status shows a pending version: $(grep pending "$T/out")"

# Room again: the same command defers the version, from the cached package.
$INST_WRAP mount -o remount,size=32m "$(idir)"
expect_rc 0 install --repo "$R" $(kernel_args) --when-busy defer --driver-version "$V_NEW"
expect_err "the change waits for idle GPUs or the next boot (pending=$V_NEW"
assert_eq "$(cat "$T/root/sys/module/nvidia/version")" "$V_OLD" "the busy driver"

# The disk fills at every point of the deferral's last writes (the staged tree's last
# files, its manifest, the rename into .versions/, the record): room for the staged
# version less K KiB. Each run either defers whole or fails cleanly as above.
avail() { $INST_WRAP df -k --output=avail "$(idir)" | tail -1; }
with_version=$(avail)
expect_rc 0 install --repo "$R" $(kernel_args) --when-busy defer --driver-version "$V_OLD"
expect_err "the pending change is no longer asked for: withdrawn"
need=$(($(avail) - with_version))
[ "$need" -gt 0 ] || fail "the staged version takes no room: $need KiB"
for k in 0 4 8 12 16; do
    $INST_WRAP sh -c "head -c $((($(avail) - need + k) * 1024)) /dev/zero >'$(idir)/filler'"
    before=$(served)
    inst install --repo "$R" $(kernel_args) --when-busy defer --driver-version "$V_NEW"
    echo "short by $k KiB: exit $RC: $(grep -E "ERROR|waits" "$T/err" | cut -c1-160)"
    case $RC in
    0) $INST_WRAP test -e "$(idir)/.pending.json" || fail "short by $k KiB: exit 0 but nothing pending"
        expect_rc 0 install --repo "$R" $(kernel_args) --when-busy defer --driver-version "$V_OLD" ;;
    1) unchanged "$before" "short by $k KiB: what the node serves"
        ! $INST_WRAP test -e "$(idir)/.pending.json" && [ ! -e "$features/00-nvidia-driver-pending" ] ||
            fail "short by $k KiB: pending after a deferral that failed" ;;
    *) fail "short by $k KiB: exit $RC: $(tail -2 "$T/err")" ;;
    esac
    $INST_WRAP rm "$(idir)/filler"
done
kill "$NS_PID"
