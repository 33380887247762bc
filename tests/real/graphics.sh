#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make check-real, video and graphics (docs/design.md, "Video and graphics"): NVIDIA's real
# 535.261.03 video and graphics user space from Debian's non-free packages, packed by
# build-driver-package --capabilities video,graphics (the proprietary modules reused from
# run.sh's build in the same work directory: only Debian's extra packages are fetched and
# the package repacked), then:
#   every library of the capabilities that Debian ships is in lib64/ with its soname link,
#   the loaders' files under share/, build-info.json and the index say the capabilities;
#   the installer installs it for --driver-capabilities video,graphics (vulkan/icd.d in the
#   install dir, where GKE's device plugin mounts it) and refuses the compute-only
#   repository's package for it (exit 3);
#   Debian's Vulkan loader (libvulkan1, vulkaninfo from vulkan-tools) with VK_LOADER_DEBUG
#   finds the installed ICD file where loaders look (XDG_CONFIG_DIRS's vulkan/icd.d, the
#   install dir's bound there) and loads NVIDIA's libGLX_nvidia.so.0 from the install dir's
#   lib64 through an ld cache (LD_DEBUG shows the cache and the file), no VK_* or
#   LD_LIBRARY_PATH set; with no GPU here the ICD then creates no instance, which the
#   loader says ("Could not get 'vkCreateInstance'"). The spec's graphics mounts are proven with
#   stand-ins (t_cdi_graphics): the CDI spec needs a loaded driver, which this host has not.
#
#   tests/real/graphics.sh BINARY WORKDIR KERNEL -- BUILD_DRIVER_PACKAGE_COMMON_ARGS...
set -euo pipefail
BIN=$1 W=$2 R=$3
shift 4
SRC=$(cd "$(dirname "$0")/../.." && pwd)
V=535.261.03
pass=0
failed=0
ok() { echo "real: ok   $1"; pass=$((pass + 1)); }
bad() { echo "real: FAIL $1: $2"; failed=$((failed + 1)); }
check() {
    local name=$1
    shift
    if "$@"; then ok "$name"; else bad "$name" "$*"; fi
}

t0=$(date +%s)
rm -rf "$W/repo-graphics"
if ! "$SRC/scripts/build-driver-package" --kernel "$R" --debian "$V" --flavour proprietary \
    --capabilities video,graphics --repo "$W/repo-graphics" --tag default "$@" \
    >"$W/graphics-build.log" 2>&1; then
    bad graphics-build "build-driver-package --capabilities video,graphics (log $W/graphics-build.log)"
    echo "real: graphics: $pass passed, $failed failed"
    exit 1
fi
ok graphics-build
pkg=$W/repo-graphics/$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["drivers"][0]["packages"][0]["path"])' "$W/repo-graphics/index.json")
echo "real: video,graphics package $(($(stat -c %s "$pkg") >> 20)) MiB, built in $(($(date +%s) - t0)) s"
u=$W/unpacked-graphics
rm -rf "$u"
mkdir -p "$u"
tar -C "$u" --zstd -xf "$pkg"

# What Debian ships of libnvidia-container's video_libs and graphics_libs(_glvnd)
# (scripts/bdp/common.py, CAPABILITY_LIBRARIES, cited there): none of 535's Debian packages
# holds libnvidia-ifr or libnvidia-cbl.
for l in libnvcuvid.so.1 libnvidia-encode.so.1 libnvidia-opticalflow.so.1 libvdpau_nvidia.so.1 \
    libGLX_nvidia.so.0 libEGL_nvidia.so.0 libGLESv2_nvidia.so.2 libGLESv1_CM_nvidia.so.1 \
    libnvidia-glcore.so.$V libnvidia-eglcore.so.$V libnvidia-tls.so.$V libnvidia-glsi.so.$V \
    libnvidia-glvkspirv.so.$V libnvidia-rtcore.so.$V libnvidia-fbc.so.1 libnvoptix.so.1 \
    libnvidia-vulkan-producer.so.$V; do
    check "graphics-lib-$l" [ -e "$u/lib64/$l" ]
done
for f in vulkan/icd.d/nvidia_icd.json vulkan/implicit_layer.d/nvidia_layers.json \
    glvnd/egl_vendor.d/10_nvidia.json nvidia/nvoptix.bin; do
    check "graphics-share-$f" [ -s "$u/share/$f" ]
done
check graphics-build-info grep -q '"graphics"' "$u/share/nvidia/build-info.json"
check graphics-index [ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["drivers"][0]["packages"][0].get("capabilities"))' "$W/repo-graphics/index.json")" = "['compute', 'utility', 'video', 'graphics']" ]

# The installer: the video,graphics package for a node pool asking them, the compute-only
# repository's refused for it.
fr=$(mktemp -d /tmp/ndi-real-graphics.XXXXXX)
mkdir -p "$fr/etc"
printf 'ID=debian\n' >"$fr/etc/os-release"
"$BIN" --root "$fr" install --repo "file://$W/repo-graphics" --repo-key "$W/keys/repo-pub.pem" \
    --skip-modules --kernel-release "$R" --driver-capabilities video,graphics >"$fr/install.out" 2>&1 &&
    ok graphics-install || bad graphics-install "$(tail -3 "$fr/install.out")"
check graphics-install-icd [ -s "$fr/home/kubernetes/bin/nvidia/vulkan/icd.d/nvidia_icd.json" ]
# Debian's Vulkan loader finds our ICD where loaders look, as a container given the GPU sees
# it: XDG_CONFIG_DIRS's vulkan/icd.d is the install dir's vulkan/icd.d, bind-mounted as GKE's
# device plugin mounts it at /etc/vulkan/icd.d; NVIDIA's libraries come from an ld cache that
# holds the install dir's lib64/ (what the CDI hook builds in a container: ldconfig -C over
# it, bound over /etc/ld.so.cache), in a mount namespace of its own. No VK_DRIVER_FILES,
# VK_ICD_FILENAMES or LD_LIBRARY_PATH: the ICD's bare soname libGLX_nvidia.so.0 is resolved
# through the cache.
inst=$fr/home/kubernetes/bin/nvidia
mkdir -p "$fr/xdg/vulkan/icd.d"
printf 'include /etc/ld.so.conf\n%s\n' "$inst/lib64" >"$fr/ld.so.conf"
# shellcheck disable=SC2016 # expanded by the inner shell
env -u LD_LIBRARY_PATH -u VK_DRIVER_FILES -u VK_ICD_FILENAMES -u VK_ADD_DRIVER_FILES \
    VK_LOADER_DEBUG=all LD_DEBUG=libs XDG_CONFIG_DIRS="$fr/xdg" \
    unshare -m sh -c 'mount --bind "$1/vulkan/icd.d" "$2/xdg/vulkan/icd.d" &&
        ldconfig -X -C "$2/ld.so.cache" -f "$2/ld.so.conf" &&
        mount --bind "$2/ld.so.cache" /etc/ld.so.cache &&
        exec timeout 60 vulkaninfo --summary' sh "$inst" "$fr" >"$W/vulkaninfo.out" 2>&1 && vk=0 || vk=$?
check vulkan-icd-found grep -q "Found ICD manifest file $fr/xdg/vulkan/icd.d/nvidia_icd.json" "$W/vulkaninfo.out"
check vulkan-icd-library grep -q "Searching for ICD drivers named libGLX_nvidia.so.0" "$W/vulkaninfo.out"
check vulkan-glx-from-cache grep -q "search cache=/etc/ld.so.cache" "$W/vulkaninfo.out"
check vulkan-glx-loaded grep -q "calling init: $inst/lib64/libGLX_nvidia.so.0" "$W/vulkaninfo.out"
check vulkan-no-gpu grep -q "Could not get 'vkCreateInstance' via 'vk_icdGetInstanceProcAddr' for ICD libGLX_nvidia.so.0" "$W/vulkaninfo.out"
echo "real: vulkaninfo exit $vk: $(grep -m1 "calling init: .*libGLX_nvidia" "$W/vulkaninfo.out" | sed 's/^ *[0-9]*: *//')"
# A node of its own: the first one's copy of the index would serve it.
mkdir -p "$fr/other/etc"
cp "$fr/etc/os-release" "$fr/other/etc/"
"$BIN" --root "$fr/other" install --repo "file://$W/repo" --repo-key "$W/keys/repo-pub.pem" \
    --skip-modules --kernel-release "$R" --kernel-module-type proprietary \
    --driver-capabilities graphics >"$fr/refused.out" 2>&1 && rc=0 || rc=$?
if [ "$rc" = 3 ] && grep -q "build-driver-package --capabilities" "$fr/refused.out"; then
    ok graphics-refused
else
    bad graphics-refused "exit $rc: $(tail -2 "$fr/refused.out")"
fi
rm -rf "$fr"
echo "real: graphics: $pass passed, $failed failed in $(($(date +%s) - t0)) s"
[ "$failed" = 0 ]
