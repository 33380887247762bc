# A package's default module parameters (kernel/module-params.conf, build-driver-package
# --module-param): the load gives them, --module-arg replaces one by its MODULE.KEY and
# leaves the rest, a re-run with the same request changes nothing, and the record compares
# the defaults as asked for. A package whose file says what a package may not (a command,
# a malformed value) is refused before the kernel sees anything, exit 5, the live driver
# kept. A default for a module --modules leaves out is ignored, one line each, and costs
# the node nothing.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
param() { awk -F': ' -v k="$1" '$1 == k {print $2}' "$T/root/proc/driver/nvidia/params"; }
# pkg_with VERSION TEXT: the signed stand-in of VERSION with TEXT as its module-params.conf.
pkg_with() {
    rm -rf "$T/drv-$1"
    cp -a "$FIX/sdrv-$1" "$T/drv-$1"
    printf '%b' "$2" >"$T/drv-$1/kernel/module-params.conf"
    "$SRC/scripts/make-repo" pack "$T/drv-$1" "$T/pkg-$1.tar.zst"
    "$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$1" \
        --kernel "$KERNEL" "$T/pkg-$1.tar.zst" >/dev/null
}
pkg_with "$V_OLD" "# what the platform needs\noptions nvidia NVreg_DeviceFileMode=432 NVreg_DeviceFileGID=44\n"
R="file://$T/repo"

expect_rc 0 install --repo "$R" $(kernel_args) --driver-version "$V_OLD"
expect_err "module parameters with the package's defaults (defaults=2 overridden=0 args=nvidia.NVreg_DeviceFileMode=432 nvidia.NVreg_DeviceFileGID=44)"
assert_eq "$(param DeviceFileMode) $(param DeviceFileGID)" "432 44" "the package's defaults given"
[ -f "$(idir)/drivers/module-params.conf" ] || fail "module-params.conf not installed with the modules"

# The same request again: the defaults are what the live driver runs with, nothing reloads.
expect_rc 0 install --repo "$R" $(kernel_args) --driver-version "$V_OLD"
expect_err "driver already loaded"
! grep -q "module unloaded" "$T/err" || fail "a re-run reloaded the driver"

# --module-arg replaces one default, by its MODULE.KEY; the other stays.
expect_rc 0 install --repo "$R" $(kernel_args) --driver-version "$V_OLD" --module-arg nvidia.NVreg_DeviceFileMode=420
expect_err "the live driver runs with other module parameters (changes=nvidia.NVreg_DeviceFileMode: 432 -> 420)"
expect_err "module parameters with the package's defaults (defaults=2 overridden=1 args=nvidia.NVreg_DeviceFileGID=44 nvidia.NVreg_DeviceFileMode=420)"
assert_eq "$(param DeviceFileMode) $(param DeviceFileGID)" "420 44" "one default replaced, the other kept"
expect_rc 0 install --repo "$R" $(kernel_args) --driver-version "$V_OLD" --module-arg nvidia.NVreg_DeviceFileMode=420
expect_err "driver already loaded"

# What a package may not say: refused by name, nothing changed.
before=$(loaded_modules)
for bad in "install nvidia /bin/sh -c reboot\n:line 1: 'install': a package may give only 'options MODULE KEY=VALUE...'" \
    "options nvidia NVreg_DeviceFileMode=\"4 2\"\n:line 1: 'nvidia NVreg_DeviceFileMode=\"4' is not a module parameter --module-arg could give"; do
    rm -rf "$T/repo" && mkdir -p "$T/repo"
    pkg_with "$V_OLD" "options nvidia NVreg_DeviceFileMode=432 NVreg_DeviceFileGID=44\n"
    pkg_with "$V_NEW" "${bad%%:*}"
    expect_rc 5 install --repo "$R" $(kernel_args) --driver-version "$V_NEW"
    expect_err "module-params.conf ${bad#*:}"
    assert_eq "$(loaded_modules)" "$before" "modules after a refused module-params.conf"
    assert_eq "$(cat "$T/root/sys/module/nvidia/version")" "$V_OLD" "the live driver after the refusal"
    assert_eq "$(param DeviceFileMode) $(param DeviceFileGID)" "420 44" "parameters after the refusal"
done

# Defaults for a module the request does not load (--modules, a documented subset) are
# ignored and said so, one line each; the rest are given. A re-run changes nothing.
rm -rf "$T/repo" && mkdir -p "$T/repo"
pkg_with "$V_NEW" "options nvidia NVreg_DeviceFileMode=432\noptions nvidia_drm modeset=1 fbdev=1\n"
expect_rc 0 install --repo "$R" $(kernel_args) --driver-version "$V_NEW" --modules nvidia,nvidia-uvm
expect_err "the package's default parameter is for a module not loaded: ignored (module=nvidia_drm param=modeset=1)"
expect_err "the package's default parameter is for a module not loaded: ignored (module=nvidia_drm param=fbdev=1)"
expect_err "module parameters with the package's defaults (defaults=1 overridden=0 args=nvidia.NVreg_DeviceFileMode=432)"
case " $(loaded_modules)" in
*" nvidia_drm "* | *" nvidia_modeset "*) fail "a module left out is loaded: $(loaded_modules)" ;;
*" nvidia nvidia_uvm "*) ;;
*) fail "the subset is not loaded: $(loaded_modules)" ;;
esac
assert_eq "$(cat "$T/root/sys/module/nvidia/version")" "$V_NEW" "the new driver live"
assert_eq "$(param DeviceFileMode)" "432" "the loaded module's default given"
expect_rc 0 install --repo "$R" $(kernel_args) --driver-version "$V_NEW" --modules nvidia,nvidia-uvm
expect_err "driver already loaded"
# What the operator asks for a module not loaded stays an error (t_kernel_refusals).
expect_rc 2 install --repo "$R" $(kernel_args) --driver-version "$V_NEW" --modules nvidia,nvidia-uvm --module-arg nvidia_drm.modeset=1
expect_err "'nvidia_drm.modeset=1' names 'nvidia_drm', which is not in the set being loaded"
