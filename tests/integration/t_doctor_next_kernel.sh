# doctor on a self-managed host: the kernel it boots next (the boot loader's default entry,
# else the newest installed kernel in the distribution's version order) against the
# repository, and a newer installed kernel than the default entry's without a package. Debian-style GRUB (grub.cfg's default, grubenv's saved_entry and next_entry),
# RHEL-style BLS entries with grubenv's saved_entry, systemd-boot, and no boot loader file.
FAKE_KERNEL=1
mkroot "$T/root" debian 12 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
R=(--repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL")
next() { # next VERDICT TEXT: the next-boot line, or the test fails
    expect_rc "${RC_WANT:-9}" doctor "${R[@]}"
    grep -A1 -E "^\[$1 *\] next boot " "$T/out" | grepq -F -- "$2" ||
        fail "no [$1] next boot line with '$2': $(grep -A1 "next boot" "$T/out")"
}
# newest TEXT: after next, the newest-kernel warning (an installed kernel newer than the
# default entry's, without a package) says TEXT; newest none: there is no such line.
newest() {
    if [ "$1" = none ]; then
        if grep -q "newest kernel" "$T/out"; then fail "a newest-kernel line: $(cat "$T/out")"; fi
        return 0
    fi
    grep -A1 -E "^\[warn\] newest kernel " "$T/out" | grepq -F -- "$1" ||
        fail "no newest-kernel line with '$1': $(grep -A1 "newest kernel" "$T/out")"
}
# No kernel image installed (a container's view, COS): no line at all.
expect_rc 9 doctor "${R[@]}"
grep -q "next boot" "$T/out" && fail "a next-boot line without an installed kernel: $(cat "$T/out")"

# Three kernels with images, no boot loader file: the newest in dpkg's order (58 after 9,
# which a string order would take).
mkdir -p "$T/root/boot" "$T/root/lib/modules/6.1.0-9-amd64" "$T/root/lib/modules/$OTHER_KERNEL"
for k in "$KERNEL" 6.1.0-9-amd64 "$OTHER_KERNEL"; do : >"$T/root/boot/vmlinuz-$k"; done
mkdir -p "$T/root/lib/modules/6.2.0-1-amd64" # modules left behind, no image: not installed
next warn "the host boots kernel $OTHER_KERNEL next (the newest of 3 installed kernel(s), in dpkg's order (no boot loader default read: no grub.cfg, no loader.conf)), and the default driver $V_OLD has no package for kernel $OTHER_KERNEL"
next warn "fix: build a package for kernel $OTHER_KERNEL before the host reboots (a supply pass, or build-driver-package --kernel $OTHER_KERNEL"
next warn "or pin the boot entry to kernel $KERNEL"
expect_rc 9 doctor "${R[@]}" --json
python3 - "$T/out" "$OTHER_KERNEL" <<'PY'
import json, sys
c = [c for c in json.load(open(sys.argv[1]))["checks"] if c["check"] == "next boot"]
assert len(c) == 1 and c[0]["status"] == "warn" and sys.argv[2] in c[0]["detail"] and c[0]["fix"], c
PY

# Debian's GRUB: grub-mkconfig's menu, the newest kernel first; GRUB_DEFAULT=0.
uuid=0b6b8b33-5bbb-4e0f-9b8e-1ad7c5a2e1f4
entry() { # entry INDENT KERNEL TITLE ID
    printf "%smenuentry '%s' --class debian --class gnu-linux --class os \$menuentry_id_option '%s' {\n" "$1" "$3" "$4"
    printf "%s\tload_video\n%s\tinsmod gzio\n%s\techo\t'Loading Linux %s ...'\n" "$1" "$1" "$1" "$2"
    printf "%s\tlinux\t/boot/vmlinuz-%s root=UUID=%s ro  quiet\n" "$1" "$2" "$uuid"
    printf "%s\tinitrd\t/boot/initrd.img-%s\n%s}\n" "$2" "$1"
}
grubcfg() { # grubcfg DEFAULT
    mkdir -p "$T/root/boot/grub"
    {
        printf '%s\n' "if [ -s \$prefix/grubenv ]; then" "  set have_grubenv=true" "  load_env" "fi"
        printf '%s\n' "if [ \"\${next_entry}\" ] ; then" "   set default=\"\${next_entry}\"" \
            "   set next_entry=" "   save_env next_entry" "   set boot_once=true" "else" \
            "   set default=\"$1\"" "fi" "function load_video {" "  insmod all_video" "}"
        entry "" "$OTHER_KERNEL" "Debian GNU/Linux" "gnulinux-simple-$uuid"
        printf "submenu 'Advanced options for Debian GNU/Linux' \$menuentry_id_option 'gnulinux-advanced-%s' {\n" "$uuid"
        for k in "$OTHER_KERNEL" "$KERNEL" 6.1.0-9-amd64; do
            entry "	" "$k" "Debian GNU/Linux, with Linux $k" "gnulinux-$k-advanced-$uuid"
        done
        printf '}\n'
    } >"$T/root/boot/grub/grub.cfg"
}
grubenv() { # grubenv NAME=VALUE...: GRUB's 1024-byte environment block
    python3 - "$T/root/boot/grub/grubenv" "$@" <<'PY'
import sys
body = "# GRUB Environment Block\n" + "".join(a + "\n" for a in sys.argv[2:])
open(sys.argv[1], "w").write(body + "#" * (1024 - len(body)))
PY
}
grubcfg 0
grubenv
next warn "the host boots kernel $OTHER_KERNEL next (GRUB's default in /boot/grub/grub.cfg: '0', entry 'Debian GNU/Linux')"
newest none # the default entry boots the newest kernel: the next boot line says it all
# GRUB_DEFAULT=saved, grub-set-default to the running kernel's entry: booted again.
grubcfg '${saved_entry}'
grubenv "saved_entry=gnulinux-advanced-$uuid>gnulinux-$KERNEL-advanced-$uuid"
next ok "kernel $KERNEL again: GRUB's saved_entry in /boot/grub/grubenv: 'gnulinux-advanced-$uuid>gnulinux-$KERNEL-advanced-$uuid', entry 'Debian GNU/Linux, with Linux $KERNEL'"
# ... while a newer kernel, installed, has no package: a kernel update or grub-mkconfig can
# make it the default.
newest "kernel $OTHER_KERNEL is installed and newer than the default entry's kernel $KERNEL, and the default driver $V_OLD has no package for kernel $OTHER_KERNEL"
newest "fix: build a package for kernel $OTHER_KERNEL before the host boots it (a supply pass, or build-driver-package --kernel $OTHER_KERNEL"
expect_rc 9 doctor "${R[@]}" --json
python3 - "$T/out" "$OTHER_KERNEL" <<'PY'
import json, sys
c = [c for c in json.load(open(sys.argv[1]))["checks"] if c["check"] == "newest kernel"]
assert len(c) == 1 and c[0]["status"] == "warn" and sys.argv[2] in c[0]["detail"] and c[0]["fix"], c
PY
# By title, as grub-set-default also takes it.
grubenv "saved_entry=Advanced options for Debian GNU/Linux>Debian GNU/Linux, with Linux 6.1.0-9-amd64"
next warn "the host boots kernel 6.1.0-9-amd64 next (GRUB's saved_entry"
# grub-reboot: next_entry, for one boot, before saved_entry.
grubenv "saved_entry=gnulinux-advanced-$uuid>gnulinux-$KERNEL-advanced-$uuid" "next_entry=1>0"
next warn "the host boots kernel $OTHER_KERNEL next (GRUB's next_entry (one boot) in /boot/grub/grubenv: '1>0', entry 'Debian GNU/Linux, with Linux $OTHER_KERNEL')"
# An entry that is not there: said, and the newest installed kernel taken.
grubenv "saved_entry=gnulinux-6.0.0-1-amd64-advanced-$uuid"
next warn "the newest of 3 installed kernel(s), in dpkg's order (GRUB's saved_entry in /boot/grub/grubenv names 'gnulinux-6.0.0-1-amd64-advanced-$uuid', which is no kernel entry)"
# The repository gains a package for the next kernel: ok, the driver named.
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$V_OLD" \
    --kernel "$OTHER_KERNEL" "$FIX/opkg.tar.zst" >/dev/null
grubenv
next ok "kernel $OTHER_KERNEL (GRUB's default in /boot/grub/grub.cfg: '0', entry 'Debian GNU/Linux'): the repository has driver $V_OLD for it"
# The newest kernel served, the default entry back on the running one: no newest-kernel line.
grubcfg '${saved_entry}'
grubenv "saved_entry=gnulinux-advanced-$uuid>gnulinux-$KERNEL-advanced-$uuid"
next ok "kernel $KERNEL again"
newest none
# Without --repo: not known, and the fix says to ask.
rm -rf "$T/root/boot/grub"
expect_rc 9 doctor --kernel-release "$KERNEL"
grep -A1 "next boot" "$T/out" | grepq "not known (no --repo given)" || fail "no --repo: $(grep -A1 "next boot" "$T/out")"

# RHEL 9: kernels under /lib/modules/R/vmlinuz, BLS entries, GRUB's saved_entry (grubby).
rm -rf "$T/root/boot" "$T/root/lib/modules/6.1.0-9-amd64" "$T/root/lib/modules/$OTHER_KERNEL" \
    "$T/root/lib/modules/6.2.0-1-amd64"
sed -i 's/^ID=.*/ID="rhel"\nID_LIKE="fedora"/' "$T/root/etc/os-release"
mid=4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c
K1=5.14.0-427.13.1.el9_4.x86_64 K2=5.14.0-503.11.1.el9_5.x86_64 K3=5.14.0-70.13.1.el9_0.x86_64
mkdir -p "$T/root/boot/loader/entries" "$T/root/boot/grub2"
for k in "$K1" "$K2" "$K3"; do
    mkdir -p "$T/root/lib/modules/$k" && : >"$T/root/lib/modules/$k/vmlinuz"
    printf 'title Red Hat Enterprise Linux (%s) 9.5 (Plow)\nversion %s\nlinux /vmlinuz-%s\ninitrd /initramfs-%s.img $tuned_initrd\noptions root=/dev/mapper/rhel-root ro\ngrub_users $grub_users\ngrub_arg --unrestricted\ngrub_class rhel\n' \
        "$k" "$k" "$k" "$k" >"$T/root/boot/loader/entries/$mid-$k.conf"
done
printf '%s\n' 'set default="${saved_entry}"' 'insmod blscfg' 'blscfg' >"$T/root/boot/grub2/grub.cfg"
R=(--repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --kernel-release "$K1")
printf '# GRUB Environment Block\nsaved_entry=%s-%s\nboot_success=0\n' "$mid" "$K1" >"$T/root/boot/grub2/grubenv"
next ok "kernel $K1 again: GRUB's saved_entry in /boot/grub2/grubenv: '$mid-$K1', entry 'Red Hat Enterprise Linux ($K1) 9.5 (Plow)'"
# grubby --set-default of the new kernel: its package is missing.
printf '# GRUB Environment Block\nsaved_entry=%s-%s\n' "$mid" "$K2" >"$T/root/boot/grub2/grubenv"
next warn "the host boots kernel $K2 next (GRUB's saved_entry in /boot/grub2/grubenv: '$mid-$K2'"
# No saved_entry: GRUB's first BLS entry, the newest in rpm's order (503 after 427 after 70).
: >"$T/root/boot/grub2/grubenv"
next warn "the host boots kernel $K2 next (GRUB's default in /boot/grub2/grub.cfg: '0', entry 'Red Hat Enterprise Linux ($K2) 9.5 (Plow)')"
# No boot loader file: the newest by rpm's order, not by the string's.
rm -rf "$T/root/boot/grub2" "$T/root/boot/loader"
next warn "the host boots kernel $K2 next (the newest of 3 installed kernel(s), in rpm's order"

# systemd-boot on the ESP: loader.conf's default, a glob over the entries.
mkdir -p "$T/root/boot/efi/loader/entries"
for k in "$K1" "$K2"; do
    printf 'title Linux %s\nversion %s\nlinux /%s/vmlinuz\n' "$k" "$k" "$k" >"$T/root/boot/efi/loader/entries/$mid-$k.conf"
done
printf 'timeout 3\ndefault %s-5.14.0-427*\n' "$mid" >"$T/root/boot/efi/loader/loader.conf"
next ok "kernel $K1 again: systemd-boot's default in /boot/efi/loader/loader.conf: entry '$mid-$K1'"
