# --imex-channel0 (NVIDIA_IMEX_CHANNEL0): IMEX's default channel as NVIDIA's IMEX guide has
# the administrator make it ("Default Channel Creation"), for the device plugin's
# IMEX_CHANNEL_IDS=0: /dev/nvidia-caps-imex-channels/channel0, the major of /proc/devices'
# nvidia-caps-imex-channels (the fake kernel's nvidia.ko registers it from branch 550),
# minor 0, the driver's DeviceFileMode. 535 has no such chrdev: one warning, no failure.
# Off, nothing there is touched; a stale major is replaced; anything but a character
# device at channel0, or a link at the directory, is refused by name before anything
# changes (exit 2); channel0 that cannot be made after the load is a warning, the driver
# kept (exit 0); uninstall removes it.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2941
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
D=nvidia-caps-imex-channels
imex_major() { sed -n "s/^ *\([0-9]*\) $D\$/\1/p" "$T/root/proc/devices"; }

# --skip-modules leaves the kernel to others: the two together are refused before anything.
expect_rc 2 install --repo "file://$T/repo" $(kernel_args) --imex-channel0 --skip-modules
expect_err "imex-channel0.*--skip-modules leaves the kernel, and so IMEX's channel0, to others"

# 535: no chrdev, one warning line, the install succeeds and makes nothing.
NVIDIA_IMEX_CHANNEL0=yes expect_rc 0 install --repo "file://$T/repo" $(kernel_args)
assert_eq "$(grep -c "registers no $D in /proc/devices (IMEX came in branch 550): no channel0 made" "$T/err")" 1 "the 535 warning"
[ -z "$(imex_major)" ] || fail "535's nvidia.ko registered $D"
[ ! -e "$T/root/dev/$D" ] || fail "/dev/$D made on 535"

# 550 without the option: the kernel has the chrdev, nothing is made.
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_NEW"
major=$(imex_major)
[ -n "$major" ] || fail "550's nvidia.ko registered no $D: $(cat "$T/root/proc/devices")"
[ ! -e "$T/root/dev/$D" ] || fail "/dev/$D made without --imex-channel0"

# Asked: channel0 with the kernel's major, the driver's mode, its /dev/char link.
NVIDIA_IMEX_CHANNEL0=1 expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_NEW"
assert_eq "$(devnode $D/channel0)" "c $major:0 666" channel0
assert_eq "$(stat -c %a "$T/root/dev/$D")" 755 "/dev/$D's mode"
assert_eq "$(readlink "$T/root/dev/char/$major:0")" "../$D/channel0" "/dev/char/$major:0"
expect_err "device nodes in place (created=1 "
! grep -q "no channel0 made" "$T/err" || fail "a warning with the chrdev there"
# Again: kept.
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_NEW" --imex-channel0
expect_err "device nodes in place (created=0 replaced=0 fixed=0 kept="

# A stale major (a reload moved the dynamic one): replaced, and the old major's /dev/char
# link to channel0 (as the sync before the reload made it) dropped.
rm "$T/root/dev/$D/channel0"
mknod "$T/root/dev/$D/channel0" c 240 0
ln -s "../$D/channel0" "$T/root/dev/char/240:0"
# Off: never touched, stale or not.
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_NEW"
assert_eq "$(devnode $D/channel0)" "c 240:0 644" "channel0 without the option"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_NEW" --imex-channel0
assert_eq "$(devnode $D/channel0)" "c $major:0 666" "channel0 after a stale major"
expect_err "device nodes in place (created=0 replaced=1 "
[ ! -L "$T/root/dev/char/240:0" ] || fail "the stale major's /dev/char/240:0 left"
assert_eq "$(readlink "$T/root/dev/char/$major:0")" "../$D/channel0" "/dev/char/$major:0 after a stale major"

# A regular file there: refused by name before anything changes (exit 2), left as it is;
# the driver stays loaded.
rm "$T/root/dev/$D/channel0"
echo not-a-device >"$T/root/dev/$D/channel0"
before=$(loaded_modules)
expect_rc 2 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_NEW" --imex-channel0
expect_err "/dev/$D/channel0 is a regular file, not a character device"
expect_err "remove it: the installer makes channel0 there (--imex-channel0)"
assert_eq "$(cat "$T/root/dev/$D/channel0")" not-a-device "the regular file"
assert_eq "$(loaded_modules)" "$before" "the modules after the refusal"
! grep -q "module unloaded" "$T/err" || fail "the refusal unloaded the driver"
rm "$T/root/dev/$D/channel0"

# channel0 that cannot be made once the driver is in (mknod refusing: here a major glibc's
# makedev cannot pass, as a read-only /dev or a user namespace refuse it): one warning line,
# the install goes on (exit 0), the driver stays loaded and serving.
sed -i "s/^ *$major $D\$/4096 $D/" "$T/root/proc/devices"
before=$(loaded_modules)
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_NEW" --imex-channel0
assert_eq "$(grep -c "imex-channel0: channel0 not made (make /dev/$D/channel0 (4096:0): " "$T/err")" 1 "the channel0 warning"
expect_err "the driver stays loaded and serves without it"
assert_eq "$(loaded_modules)" "$before" "the modules after channel0 failed"
! grep -q "module unloaded" "$T/err" || fail "channel0's failure unloaded the driver"
sed -i "s/^4096 $D\$/$major $D/" "$T/root/proc/devices"
[ "$(imex_major)" = "$major" ] || fail "/proc/devices not restored: $(cat "$T/root/proc/devices")"

# The directory a link out of /dev (to the host's /etc): refused, never followed.
rmdir "$T/root/dev/$D"
ln -s /etc "$T/root/dev/$D"
expect_rc 2 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_NEW" --imex-channel0
expect_err "/dev/$D is a symbolic link, not a directory"
[ ! -e "$T/root/etc/channel0" ] && [ ! -e /etc/channel0 ] || fail "channel0 made through the link"
rm "$T/root/dev/$D"

# Uninstall with the option removes channel0, its link and the directory.
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-version "$V_NEW" --imex-channel0
assert_eq "$(devnode $D/channel0)" "c $major:0 666" "channel0 before uninstall"
ln -s "../$D/channel0" "$T/root/dev/char/241:0" # a stale link an older installer left
expect_rc 0 uninstall --imex-channel0 --kernel-release "$KERNEL"
[ ! -e "$T/root/dev/$D" ] || fail "uninstall left /dev/$D"
[ ! -L "$T/root/dev/char/$major:0" ] || fail "uninstall left /dev/char/$major:0"
[ ! -L "$T/root/dev/char/241:0" ] || fail "uninstall left the stale /dev/char/241:0"
