# scripts/kernel-postinst-hook on a fake self-managed host: installed as Debian's
# /etc/kernel/postinst.d hook (run by run-parts as the kernel package's postinst runs it)
# and as a kernel-install plugin (RHEL, Fedora), it asks the repository whether it serves
# the new kernel and says so on stderr and to syslog (a stand-in logger), exiting 0 either
# way so that the kernel's installation goes on.
mkroot "$T/root" debian 12
new_signed_repo "$T/repo" "$V_OLD:default"
HOOK=$SRC/scripts/kernel-postinst-hook
mkdir -p "$T/bin" "$T/root/etc/default" "$T/root/etc/kernel/postinst.d"
printf '#!/bin/sh\necho "$*" >>"%s"\n' "$T/syslog" >"$T/bin/logger"
chmod +x "$T/bin/logger"
conf() { # conf REPO INSTALLER: the operator's settings
    printf 'NVIDIA_DRIVER_REPO=%s\nNVIDIA_DRIVER_REPO_KEY=%s\nNVIDIA_DRIVER_INSTALLER="%s"\n' \
        "$1" "$FIX/keys/pub.pem" "$2" >"$T/root/etc/default/nvidia-driver-coverage"
}
hook() { # hook ARGS...: the hook as the package manager runs it; RC, $T/out, $T/err
    : >"$T/syslog"
    set +e
    env PATH="$T/bin:$PATH" NVIDIA_HOOK_ROOT="$T/root" "$@" >"$T/out" 2>"$T/err"
    RC=$?
    set -e
    assert_eq "$RC" 0 "the hook's exit status (a kernel install must not fail over it): $*"
    [ -s "$T/out" ] && fail "the hook wrote to stdout: $(cat "$T/out")"
    return 0
}
logged() { grep -qF -- "$1" "$T/syslog" || fail "syslog lacks '$1': $(cat "$T/syslog")"; }
conf "file://$T/repo" "$BIN"
cp "$HOOK" "$T/root/etc/kernel/postinst.d/zz-nvidia-driver-coverage"

# Debian's kernel postinst: run-parts with VERSION and the image's path.
hook run-parts --report --exit-on-error --arg="$OTHER_KERNEL" --arg="/boot/vmlinuz-$OTHER_KERNEL" \
    "$T/root/etc/kernel/postinst.d"
expect_err "nvidia-driver-installer: KERNEL $OTHER_KERNEL HAS NO NVIDIA DRIVER PACKAGE: after a reboot into it this host has no GPU driver"
expect_err "has no package for kernel $OTHER_KERNEL (x86_64, os debian build 12)"
expect_err "scripts/build-driver-package --kernel $OTHER_KERNEL), or keep booting $(uname -r)"
logged "-t nvidia-driver-installer -p user.err -- KERNEL $OTHER_KERNEL HAS NO NVIDIA DRIVER PACKAGE"
hook "$HOOK" "$KERNEL" "/boot/vmlinuz-$KERNEL"
expect_err "nvidia-driver-installer: kernel $KERNEL is served by the driver repository: "
expect_err "$V_OLD"
logged "-p user.notice -- kernel $KERNEL is served"
# kernel-install's plugin: add VERSION ENTRY-DIR IMAGE; remove is not a question.
hook "$HOOK" add "$OTHER_KERNEL" "/boot/efi/abc/$OTHER_KERNEL" "/lib/modules/$OTHER_KERNEL/vmlinuz"
expect_err "KERNEL $OTHER_KERNEL HAS NO NVIDIA DRIVER PACKAGE"
hook "$HOOK" remove "$OTHER_KERNEL" "/boot/efi/abc/$OTHER_KERNEL"
[ -s "$T/err" ] && fail "remove asked something: $(cat "$T/err")"
# A repository that cannot be asked, an installer that is not there, no version: said, exit 0.
conf "file://$T/nowhere" "$BIN"
hook "$HOOK" "$OTHER_KERNEL"
expect_err "kernel $OTHER_KERNEL: the driver repository could not be asked (exit "
expect_err "check NVIDIA_DRIVER_REPO and NVIDIA_DRIVER_REPO_KEY in $T/root/etc/default/nvidia-driver-coverage"
logged "-p user.warning -- kernel $OTHER_KERNEL: the driver repository could not be asked"
conf "file://$T/repo" "$T/no-such-installer"
hook "$HOOK" "$OTHER_KERNEL"
expect_err "the installer ('$T/no-such-installer') could not be run: set NVIDIA_DRIVER_INSTALLER"
hook "$HOOK"
expect_err "no kernel version given"
