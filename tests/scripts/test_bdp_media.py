# SPDX-License-Identifier: Apache-2.0
"""--capabilities (scripts/bdp/media.py, debian.stage_share): the video and graphics user
space packed from a driver source in the .run layout of stand-in libraries (compiled here,
each with its soname), the loaders' files under share/ with the ICD template's library
named, nothing of them without the capability, a missing required library refused; and the
tables restated against NVIDIA's own lists (cited), so that a change to either is seen."""
import json
import os
import shutil
import subprocess
import unittest

from bdp_test import Case

from bdp import common, debian, media, userspace

V = "535.261.03"
SONAMES = {"libnvcuvid": "libnvcuvid.so.1", "libnvidia-encode": "libnvidia-encode.so.1",
           "libGLX_nvidia": "libGLX_nvidia.so.0", "libEGL_nvidia": "libEGL_nvidia.so.0",
           "libGLESv2_nvidia": "libGLESv2_nvidia.so.2"}
ICD_TEMPLATE = ('{"file_format_version": "1.0.0", "ICD": {"library_path": "__NV_VK_ICD__", '
                '"api_version": "1.3.242"}}\n')


@unittest.skipUnless(shutil.which("cc") and shutil.which("readelf"), "needs cc and readelf")
class Collect(Case):
    def lib(self, src, stem, real=None):
        real = real or "%s.so.%s" % (stem, V)
        c = self.write("c/%s.c" % stem, "int %s_stand_in;\n" % stem.replace("-", "_"))
        cmd = ["cc", "-shared", "-o", os.path.join(src, real), c]
        if stem in SONAMES:
            cmd.insert(2, "-Wl,-soname," + SONAMES[stem])
        subprocess.run(cmd, check=True)

    def source(self, stems, files=("nvidia_icd.json.template", "10_nvidia.json",
                                   "nvidia_layers.json", "10_nvidia_wayland.json")):
        src = self.path("src")
        os.makedirs(src, exist_ok=True)
        for s in ["libcuda", "libnvidia-ml"] + list(stems):
            self.lib(src, s)
        for f in files:
            self.write("src/" + f, ICD_TEMPLATE if f.startswith("nvidia_icd")
                       else '{"file_format_version": "1.0.0"}\n')
        open(os.path.join(src, "nvidia-smi"), "w").close()
        return src

    def b(self):
        return self.record(arch=common.HOST_ARCH, debian=None, work=self.path("work"))

    def pack(self, src, caps):
        tree = self.path("tree-" + "-".join(caps))
        os.makedirs(tree)
        b = self.b()
        real = userspace.check_machine      # the stand-in nvidia-smi is no ELF
        userspace.check_machine = lambda *a: None
        self.addCleanup(setattr, userspace, "check_machine", real)
        libs, _, _ = userspace.collect_userspace(b, src, V, tree)
        extra, files = media.collect(b, src, V, tree, caps, userspace.take_library)
        return tree, libs + extra, files

    def test_graphics_and_video_packed(self):
        video = common.CAPABILITY_LIBRARIES["video"]
        graphics = common.CAPABILITY_LIBRARIES["graphics"]
        src = self.source(video + graphics)
        self.lib(src, "libnvidia-egl-wayland", "libnvidia-egl-wayland.so.1.1.11")
        tree, libs, files = self.pack(src, ["compute", "utility", "video", "graphics"])
        lib64 = os.listdir(os.path.join(tree, "lib64"))
        for stem in video + graphics:
            self.assertIn("%s.so.%s" % (stem, V), lib64)
        self.assertIn("libnvidia-egl-wayland.so.1.1.11", lib64)
        # The soname links the loaders name (the ICD's libGLX_nvidia.so.0).
        self.assertEqual(os.readlink(os.path.join(tree, "lib64/libGLX_nvidia.so.0")),
                         "libGLX_nvidia.so.%s" % V)
        self.assertIn("libnvcuvid.so.1", libs)
        self.assertEqual(files, ["share/vulkan/icd.d/nvidia_icd.json",
                                 "share/vulkan/implicit_layer.d/nvidia_layers.json",
                                 "share/glvnd/egl_vendor.d/10_nvidia.json",
                                 "share/egl/egl_external_platform.d/10_nvidia_wayland.json"])
        with open(os.path.join(tree, "share/vulkan/icd.d/nvidia_icd.json")) as f:
            self.assertEqual(json.load(f)["ICD"]["library_path"], "libGLX_nvidia.so.0")

    def test_default_packs_neither(self):
        src = self.source(common.CAPABILITY_LIBRARIES["video"] +
                          common.CAPABILITY_LIBRARIES["graphics"])
        tree, libs, files = self.pack(src, ["compute", "utility"])
        self.assertEqual(sorted(os.listdir(os.path.join(tree, "lib64"))),
                         sorted(["libcuda.so.%s" % V, "libnvidia-ml.so.%s" % V]))
        self.assertEqual(files, [])
        self.assertFalse(os.path.exists(os.path.join(tree, "share")))

    def test_video_only(self):
        src = self.source(["libnvcuvid", "libnvidia-encode", "libGLX_nvidia"])
        tree, libs, files = self.pack(src, ["compute", "utility", "video"])
        self.assertNotIn("libGLX_nvidia.so.%s" % V, os.listdir(os.path.join(tree, "lib64")))
        self.assertEqual(files, [])

    def test_required_missing(self):
        src = self.source(["libGLX_nvidia", "libnvidia-glcore", "libnvidia-eglcore"])
        msg = self.refused(self.pack, src, ["compute", "utility", "graphics"])
        self.assertEqual(msg, "graphics: %s has no libEGL_nvidia.so.%s: build without graphics, "
                         "or from a driver source that has it (--debian fetches Debian's "
                         "packages of it)" % (src, V))

    def test_icd_file_missing(self):
        src = self.source(common.CAPABILITY_REQUIRED["graphics"], files=("10_nvidia.json",))
        msg = self.refused(self.pack, src, ["compute", "utility", "graphics"])
        self.assertIn("has no nvidia_icd.json or nvidia_icd.json.template", msg)

    def test_not_an_icd(self):
        src = self.source(common.CAPABILITY_REQUIRED["graphics"],
                          files=("nvidia_icd.json", "10_nvidia.json"))
        self.write("src/nvidia_icd.json", '{"layer": {}}\n')
        self.assertEqual(self.refused(self.pack, src, ["compute", "utility", "graphics"]),
                         "nvidia_icd.json is not a Vulkan ICD file (no ICD.library_path): "
                         "not NVIDIA's")


class Parse(Case):
    def test_words(self):
        self.assertEqual(media.parse_capabilities("graphics"),
                         ["compute", "utility", "graphics"])
        self.assertEqual(media.parse_capabilities("video, compute"),
                         ["compute", "utility", "video"])
        self.assertEqual(media.parse_capabilities("all"), list(common.CAPABILITIES))

    def test_bad_word(self):
        with self.assertRaises(common.Usage) as cm:
            media.parse_capabilities("compute,display")
        self.assertEqual(str(cm.exception), "--capabilities: 'display' is not one of "
                         "compute, utility, video, graphics, all")


class Debian(Case):
    def test_share_staged_under_run_names(self):
        root = self.path("root")
        self.write("root/usr/share/vulkan/icd.d/nvidia_icd.json", ICD_TEMPLATE)
        self.write("root/usr/share/glvnd/egl_vendor.d/10_nvidia.json", "{}")
        self.write("root/usr/lib/x86_64-linux-gnu/nvidia/current/nvoptix.bin", "optix")
        os.makedirs(self.path("stage"))
        debian.stage_share(root, self.path("stage"), "test")
        self.assertEqual(sorted(os.listdir(self.path("stage"))),
                         ["10_nvidia.json", "nvidia_icd.json", "nvoptix.bin"])


class Tables(Case):
    """The lists restated from their sources; a table edited away from them goes red."""

    def test_libnvidia_container(self):
        # NVIDIA/libnvidia-container src/nvc_info.c at 00b4b47: video_libs (97-102),
        # graphics_libs (104-114, libnvidia-egl-wayland commented out there) and
        # graphics_libs_glvnd (116-126, the GLVND loaders themselves commented out).
        video_libs = ["libvdpau_nvidia", "libnvidia-encode", "libnvidia-opticalflow",
                      "libnvcuvid"]
        graphics_libs = ["libnvidia-eglcore", "libnvidia-glcore", "libnvidia-tls",
                         "libnvidia-glsi", "libnvidia-fbc", "libnvidia-ifr", "libnvidia-rtcore",
                         "libnvoptix"]
        graphics_libs_glvnd = ["libGLX_nvidia", "libEGL_nvidia", "libGLESv2_nvidia",
                               "libGLESv1_CM_nvidia", "libnvidia-glvkspirv", "libnvidia-cbl"]
        self.assertEqual(sorted(common.CAPABILITY_LIBRARIES["video"]), sorted(video_libs))
        # nvidia-container-toolkit internal/discover/graphics.go:178-182 adds the producer.
        self.assertEqual(sorted(common.CAPABILITY_LIBRARIES["graphics"]),
                         sorted(graphics_libs + graphics_libs_glvnd +
                                ["libnvidia-vulkan-producer"]))
        # graphics.go:170-174: the EGL platform libraries of their own versions.
        self.assertEqual(common.GRAPHICS_PLATFORM_LIBRARIES,
                         ["libnvidia-egl-gbm", "libnvidia-egl-wayland", "libnvidia-egl-wayland2",
                          "libnvidia-egl-xcb", "libnvidia-egl-xlib"])

    def test_toolkit_files(self):
        # nvidia-container-toolkit internal/discover/graphics.go at d34b304: the Vulkan
        # files (120-122; the RPM-only nvidia_icd.ARCH.json and icd.d/nvidia_layers.json
        # names left out: no driver source here has them), the EGL files (87-92) and
        # nvidia/nvoptix.bin (93).
        want = ["vulkan/icd.d/nvidia_icd.json", "vulkan/implicit_layer.d/nvidia_layers.json",
                "glvnd/egl_vendor.d/10_nvidia.json",
                "egl/egl_external_platform.d/15_nvidia_gbm.json",
                "egl/egl_external_platform.d/10_nvidia_wayland.json",
                "egl/egl_external_platform.d/09_nvidia_wayland2.json",
                "egl/egl_external_platform.d/20_nvidia_xcb.json",
                "egl/egl_external_platform.d/20_nvidia_xlib.json", "nvidia/nvoptix.bin"]
        self.assertEqual([rel[len("share/"):] for _, rel, _ in common.GRAPHICS_FILES], want)


if __name__ == "__main__":
    unittest.main()
