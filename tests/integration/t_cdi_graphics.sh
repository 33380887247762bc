# --driver-capabilities graphics (docs/design.md, "Video and graphics"): a package with
# stand-in graphics libraries and NVIDIA's loader files under share/ (packages[].capabilities
# written by make-repo add from that content) is installed, and the CDI spec mounts each
# loader file, alone, at the path the loader reads, as nvidia-container-toolkit mounts them
# (internal/discover/graphics.go: Vulkan's at /etc, EGL's at /usr/share); the hostPath of
# each is the install dir's file. Without graphics asked, the spec mounts none of them.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
mkdir -p "$T/drv"
tar -C "$T/drv" --zstd -xf "$FIX/spkg-$V_OLD.tar.zst"
for l in libGLX_nvidia libEGL_nvidia libnvidia-glcore libnvidia-eglcore; do
    cp "$T/drv/lib64/libcuda.so.$V_OLD" "$T/drv/lib64/$l.so.$V_OLD"
done
mkdir -p "$T/drv/share/vulkan/icd.d" "$T/drv/share/vulkan/implicit_layer.d" \
    "$T/drv/share/glvnd/egl_vendor.d"
echo '{"file_format_version": "1.0.0", "ICD": {"library_path": "libGLX_nvidia.so.0"}}' \
    >"$T/drv/share/vulkan/icd.d/nvidia_icd.json"
echo '{"file_format_version": "1.0.0", "layer": {"name": "VK_LAYER_NV_optimus"}}' \
    >"$T/drv/share/vulkan/implicit_layer.d/nvidia_layers.json"
echo '{"file_format_version": "1.0.0", "ICD": {"library_path": "libEGL_nvidia.so.0"}}' \
    >"$T/drv/share/glvnd/egl_vendor.d/10_nvidia.json"
"$SRC/scripts/make-repo" pack "$T/drv" "$T/gfx.tar.zst"
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$V_OLD" \
    --kernel "$KERNEL" --tag default "$T/gfx.tar.zst" >/dev/null
inst=/home/kubernetes/bin/nvidia
spec=$T/root/var/run/cdi/nvidia-driver-installer.json
# MOUNTS: the spec's graphics mounts, "hostPath>containerPath" sorted, one line.
mounts() {
    python3 -c 'import json,sys
m = json.load(open(sys.argv[1]))["containerEdits"]["mounts"]
print(" ".join(sorted("%s>%s" % (x["hostPath"], x["containerPath"]) for x in m
                      if "/share/" in x["hostPath"])))' "$spec"
}
# The GPU's DRM nodes (its PCI function's drm/ in sysfs, /dev/dri's character devices), which
# the toolkit's graphics modifier adds to the GPU's device (internal/discover/graphics.go:399).
mkdir -p "$T/root/sys/devices/pci0000:00/0000:00:04.0/drm/card1" \
    "$T/root/sys/devices/pci0000:00/0000:00:04.0/drm/renderD128" "$T/root/dev/dri"
mknod "$T/root/dev/dri/card1" c 226 1
mknod "$T/root/dev/dri/renderD128" c 226 128
# DRM DEVICE: the spec's nodes of DEVICE, one line.
drm() {
    python3 -c 'import json,sys
d = [x for x in json.load(open(sys.argv[1]))["devices"] if x["name"] == sys.argv[2]][0]
print(" ".join(n["path"] for n in d["containerEdits"]["deviceNodes"]))' "$spec" "$1"
}
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-capabilities graphics
assert_eq "$(drm 0)" "/dev/nvidia0 /dev/dri/card1 /dev/dri/renderD128" "GPU 0's nodes with graphics"
assert_eq "$(drm all)" "/dev/nvidia0 /dev/dri/card1 /dev/dri/renderD128" "all's nodes with graphics"
want="$inst/share/glvnd/egl_vendor.d/10_nvidia.json>/usr/share/glvnd/egl_vendor.d/10_nvidia.json"
want+=" $inst/share/vulkan/icd.d/nvidia_icd.json>/etc/vulkan/icd.d/nvidia_icd.json"
want+=" $inst/share/vulkan/implicit_layer.d/nvidia_layers.json>/etc/vulkan/implicit_layer.d/nvidia_layers.json"
assert_eq "$(mounts)" "$want" "the graphics mounts"
for f in vulkan/icd.d/nvidia_icd.json vulkan/implicit_layer.d/nvidia_layers.json \
    glvnd/egl_vendor.d/10_nvidia.json; do
    cmp -s "$T/root$inst/share/$f" "$T/drv/share/$f" || fail "the spec's $f is not the package's"
done
# The capabilities are recorded with the version (.install.json), and the spec follows the
# record: a later run without the option (a boot, the agent's) keeps the mounts; doctor
# without it says the two differ.
rec() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("capabilities"))' \
    "$T/root$inst/.current/.install.json"; }
assert_eq "$(rec)" "compute,utility,graphics" "the recorded capabilities"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args)
assert_eq "$(mounts)" "$want" "the graphics mounts after a run without the option"
inst doctor $(kernel_args)
grep -q "installed capabilities.*driver $V_OLD is installed for compute,utility,graphics (the CDI spec follows that); --driver-capabilities asks compute,utility" \
    "$T/out" || fail "doctor: no capabilities mismatch: $(cat "$T/out")"
# At spec time, a loader file that is no regular file (a dangling link, a folder: runc would
# refuse every GPU container) is left out of the spec; the others stay.
v=$T/root$inst/.current/share
rm "$v/vulkan/implicit_layer.d/nvidia_layers.json" "$v/glvnd/egl_vendor.d/10_nvidia.json"
ln -s /nonexistent "$v/vulkan/implicit_layer.d/nvidia_layers.json"
mkdir "$v/glvnd/egl_vendor.d/10_nvidia.json"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args)
assert_eq "$(mounts)" "$inst/share/vulkan/icd.d/nvidia_icd.json>/etc/vulkan/icd.d/nvidia_icd.json" \
    "only the regular loader file mounted"
# A record without graphics (as before the field): no graphics mounts.
python3 - "$T/root$inst/.current/.install.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
del m["capabilities"]
json.dump(m, open(sys.argv[1], "w"))
PY
expect_rc 0 install --repo "file://$T/repo" $(kernel_args)
assert_eq "$(mounts)" "" "no graphics mounts for a version not installed for graphics"
assert_eq "$(drm 0)" "/dev/nvidia0" "GPU 0's nodes without graphics"
# The same version asked for graphics again: the record widens (its package serves it), and
# the spec mounts again.
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --driver-capabilities graphics
assert_eq "$(rec)" "compute,utility,graphics" "the record widened"
assert_eq "$(mounts)" "$inst/share/vulkan/icd.d/nvidia_icd.json>/etc/vulkan/icd.d/nvidia_icd.json" \
    "the graphics mounts after the record widened"
