# What a published version holds for the tools that look for a driver in a driver root
# (installer/stage/locate.h): usr/bin/NAME the real program (one inode with bin/.real/NAME;
# NVIDIA's locator tries usr/bin before bin and mounts the file alone), lib/firmware leading
# to firmware/ (NVIDIA's discovery's GSP path), vulkan/icd.d (GKE's plugin mounts it on
# every allocation): empty without Vulkan, the package's ICD files copied with it; a
# package whose share/vulkan/icd.d holds anything else is refused; uninstall takes the new
# links too.
# publish NAME REPO VERSION [make-repo add options]: $T/drv packed as $T/NAME.tar.zst and
# added to REPO as VERSION.
publish() {
    local name=$1 repo=$2 version=$3
    shift 3
    "$SRC/scripts/make-repo" pack "$T/drv" "$T/$name.tar.zst"
    "$SRC/scripts/make-repo" add --repo "$repo" --key "$FIX/keys/key.pem" --version "$version" \
        --kernel "$KERNEL" "$@" "$T/$name.tar.zst" >/dev/null
}

mkroot "$T/root"
new_repo "$T/repo" "$V_OLD:default"
expect_rc 0 install --repo "file://$T/repo" $(install_args)
d=$(idir)
assert_eq "$(stat -c %i "$d/usr/bin/nvidia-smi")" "$(stat -c %i "$d/bin/.real/nvidia-smi")" "usr/bin/nvidia-smi is the program"
[ -f "$d/usr/bin/nvidia-smi" ] && [ ! -L "$d/.current/usr/bin/nvidia-smi" ] || fail "usr/bin/nvidia-smi is no regular file"
[ ! -e "$d/usr/bin/.real" ] || fail "usr/bin has the launcher's directory"
assert_eq "$(readlink "$d/.current/lib/firmware")" ../firmware "lib/firmware"
[ -f "$d/lib/firmware/nvidia/$V_OLD/gsp_ga10x.bin" ] || fail "GSP firmware under lib/firmware"
[ -d "$d/vulkan/icd.d" ] && [ -z "$(ls -A "$d/vulkan/icd.d")" ] || fail "vulkan/icd.d: not an empty directory"
for l in usr lib vulkan; do assert_eq "$(readlink "$d/$l")" ".current/$l" "the install dir's $l"; done

# A package with Vulkan: its ICD file, copied (GKE mounts the directory at /etc/vulkan/icd.d,
# where a link into share/ would lead nowhere).
cp -a "$FIX/drv-$V_NEW" "$T/drv"
mkdir -p "$T/drv/share/vulkan/icd.d"
echo '{"file_format_version": "1.0.0", "ICD": {"library_path": "libGLX_nvidia.so.0", "api_version": "1.3.242"}}' \
    >"$T/drv/share/vulkan/icd.d/nvidia_icd.json"
publish vk "$T/repo" "$V_NEW"
expect_rc 0 install --repo "file://$T/repo" $(install_args) --driver-version "$V_NEW"
[ -f "$d/vulkan/icd.d/nvidia_icd.json" ] && [ ! -L "$d/.current/vulkan/icd.d/nvidia_icd.json" ] ||
    fail "the ICD file is not a copy: $(ls -l "$d/vulkan/icd.d/")"
cmp -s "$d/vulkan/icd.d/nvidia_icd.json" "$T/drv/share/vulkan/icd.d/nvidia_icd.json" || fail "the ICD file differs"

# --driver-capabilities (docs/design.md, "Video and graphics"): that package serves
# compute,utility only (its index entry says nothing more), so a graphics node pool is refused
# at selection, naming the build that would serve it; stand-in graphics libraries and the EGL
# vendor file make make-repo add write packages[].capabilities, and the install takes it.
expect_rc 3 install --repo "file://$T/repo" $(install_args) --driver-version "$V_NEW" \
    --driver-capabilities graphics
expect_err "select: driver $V_NEW's package for kernel $KERNEL serves compute,utility; --driver-capabilities asks compute,utility,graphics"
expect_err "build-driver-package --capabilities compute,utility,graphics"
# doctor says the same of the repository's package, with the fix.
inst doctor --repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" \
    --driver-version "$V_NEW" --driver-capabilities graphics
grep -q "driver capabilities.*serves compute,utility; --driver-capabilities asks compute,utility,graphics" \
    "$T/out" || fail "doctor: no driver capabilities failure: $(cat "$T/out")"
for l in libGLX_nvidia libEGL_nvidia libnvidia-glcore libnvidia-eglcore; do
    cp "$T/drv/lib64/libcuda.so.$V_NEW" "$T/drv/lib64/$l.so.$V_NEW"
done
mkdir -p "$T/drv/share/glvnd/egl_vendor.d"
echo '{"file_format_version": "1.0.0", "ICD": {"library_path": "libEGL_nvidia.so.0"}}' \
    >"$T/drv/share/glvnd/egl_vendor.d/10_nvidia.json"
publish gfx "$T/repo" "$V_NEW"
caps=$(python3 -c 'import json,sys; print([p.get("capabilities") for d in json.load(open(sys.argv[1]))["drivers"] if d["version"] == sys.argv[2] for p in d["packages"]])' "$T/repo/index.json" "$V_NEW")
assert_eq "$caps" "[['compute', 'utility', 'graphics']]" "packages[].capabilities from the content"
expect_rc 0 install --repo "file://$T/repo" $(install_args) --driver-version "$V_NEW" \
    --driver-capabilities graphics

# Anything else there: refused, naming it, the node left on its version.
rm -rf "$T/repo2"
new_repo "$T/repo2"
echo x >"$T/drv/share/vulkan/icd.d/README"
publish bad "$T/repo2" "$V_OLD" --tag default
expect_rc 5 install --repo "file://$T/repo2" $(install_args)
expect_err "package has 'share/vulkan/icd.d/README', not a Vulkan ICD file"
assert_eq "$(installed_version)" "$V_NEW" "still installed"

expect_rc 0 uninstall
for l in usr lib vulkan; do [ ! -e "$d/$l" ] && [ ! -L "$d/$l" ] || fail "uninstall left $l"; done
