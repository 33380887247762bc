# SPDX-License-Identifier: Apache-2.0
"""--capabilities: the video and graphics user space (common.CAPABILITY_LIBRARIES, after
libnvidia-container's lists) and graphics' files for the Vulkan, EGL and OptiX loaders
(common.GRAPHICS_FILES, after nvidia-container-toolkit's), taken from the driver's source
in the .run layout into the package's lib64/ and share/ (docs/design.md, "Video and
graphics")."""
import glob
import json
import os
import re

from bdp.common import (CAPABILITIES, CAPABILITY_LIBRARIES, CAPABILITY_REQUIRED,
                        DEFAULT_CAPABILITIES, GRAPHICS_FILES, GRAPHICS_PLATFORM_LIBRARIES,
                        ICD_LIBRARY, ICD_PLACEHOLDER, die, inside, say, unpack_confined, usage)


def parse_capabilities(text):
    """--capabilities LIST: comma-separated words of CAPABILITIES, or all. Returns them in
    CAPABILITIES' order, compute and utility always among them (the package always has
    them); bad usage (exit 2) names the words."""
    words = [w.strip() for w in (text or "").split(",") if w.strip()]
    if not words:
        usage("--capabilities: give a comma list of %s, or all" % ", ".join(CAPABILITIES))
    if "all" in words:
        return list(CAPABILITIES)
    for w in words:
        if w not in CAPABILITIES:
            usage("--capabilities: '%s' is not one of %s, all" % (w, ", ".join(CAPABILITIES)))
    return [c for c in CAPABILITIES if c in words or c in DEFAULT_CAPABILITIES]


def icd_text(path, name):
    """The ICD file at PATH (NAME in the source) with the library named: the .run's template
    has ICD_PLACEHOLDER there. Refused unless it is an ICD file whose library_path is then
    set."""
    with open(path) as f:
        text = f.read().replace(ICD_PLACEHOLDER, ICD_LIBRARY)
    try:
        lib = json.loads(text)["ICD"]["library_path"]
    except (ValueError, KeyError, TypeError):
        lib = None
    if not isinstance(lib, str) or not lib:
        die("%s is not a Vulkan ICD file (no ICD.library_path): not NVIDIA's" % name)
    return text


def take_files(src, tree, what):
    """GRAPHICS_FILES found in SRC into TREE's share/. Returns their package paths."""
    taken = []
    for names, rel, required in GRAPHICS_FILES:
        name = next((n for n in names if os.path.isfile(os.path.join(src, n))), None)
        if not name:
            if required:
                die("graphics: %s has no %s (the driver's %s): build without graphics, or "
                    "from a driver that ships it" % (src, " or ".join(names), rel))
            continue
        dest = os.path.join(tree, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if rel.endswith("/nvidia_icd.json"):
            text = icd_text(inside(src, name, what), name)
            with open(dest, "w") as f:
                f.write(text)
        else:
            unpack_confined.copy_out(src, os.path.join(src, name), dest, what)
        taken.append(rel)
    return taken


def collect(b, src, version, tree, caps, take_library):
    """The libraries and files of CAPS beyond compute and utility, from SRC (the .run
    layout) into TREE (lib64/ made by collect_userspace). TAKE_LIBRARY is userspace's.
    Returns (sonames, share files)."""
    lib64 = os.path.join(tree, "lib64")
    libs = []
    for cap in caps:
        for stem in CAPABILITY_LIBRARIES.get(cap, []):
            real = "%s.so.%s" % (stem, version)
            if not os.path.isfile(os.path.join(src, real)):
                if stem in CAPABILITY_REQUIRED[cap]:
                    die("%s: %s has no %s: build without %s, or from a driver source that "
                        "has it%s" % (cap, src, real, cap, " (--debian fetches Debian's "
                                                           "packages of it)"
                                      if not b.debian else ""))
                continue
            if not os.path.lexists(os.path.join(lib64, real)):
                libs.append(take_library(b, src, real, stem, lib64))
    files = []
    if "graphics" in caps:
        for stem in GRAPHICS_PLATFORM_LIBRARIES:
            for p in sorted(glob.glob(os.path.join(src, stem + ".so.*"))):
                real = os.path.basename(p)
                if re.fullmatch(re.escape(stem) + r"\.so\.\d+(\.\d+)+", real) and \
                        os.path.isfile(p) and not os.path.islink(p):
                    libs.append(take_library(b, src, real, stem, lib64))
        files = take_files(src, tree, "the driver's source " + src)
    if len(caps) > len(DEFAULT_CAPABILITIES):
        say("  %s: %d libraries, %s" % (",".join(c for c in caps if c not in
                                                  DEFAULT_CAPABILITIES), len(libs),
                                        ", ".join(files) or "no files"))
    return libs, files
