/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A published version as other tools look for a driver in a driver root (docs/design.md,
 * "NVIDIA's tools on our install dir"). Besides our own layout (bin/ with the launcher, lib64/,
 * firmware/), a version holds, made from its own files:
 *
 *   usr/bin/NAME          a hard link to each program of bin/ (the real ELF file from
 *                         bin/.real/ where the launcher took its name): NVIDIA's
 *                         executable locator tries usr/bin before bin, and mounts the
 *                         file it finds alone; the DRA driver's start check wants a
 *                         regular file there (find -type f, no links followed)
 *   lib/firmware          a link to ../firmware: NVIDIA's discovery looks for GSP
 *                         firmware under DRIVER_ROOT/lib/firmware/nvidia/VERSION/
 *   vulkan/icd.d/         the package's Vulkan ICD files (the *.json files of share/vulkan/icd.d),
 *                         copied, or empty: GKE's device plugin mounts it at
 *                         /etc/vulkan/icd.d on every allocation, NVIDIA's discovery
 *                         reads it as GKE's
 */
#pragma once

#include "util/err.h"

/* The top-level entries locate_shape() makes, each linked from the install dir. */
#define LOCATE_SUBDIRS "usr", "lib", "vulkan"

/*
 * The package's loader files for graphics (Vulkan's ICD and layer, GLVND's EGL vendor, EGL's
 * external platforms, OptiX's data), each of which the CDI spec mounts alone where the
 * loaders read it (expose/cdi.c cdi_graphics_files, in this order; test_cdi holds the two
 * lists together). Each, when the package has it, must be a regular file, no link on its
 * path.
 */
#define LOCATE_LOADER_FILES                                                                        \
	"share/vulkan/icd.d/nvidia_icd.json", "share/vulkan/implicit_layer.d/nvidia_layers.json",  \
		"share/glvnd/egl_vendor.d/10_nvidia.json",                                         \
		"share/egl/egl_external_platform.d/15_nvidia_gbm.json",                            \
		"share/egl/egl_external_platform.d/10_nvidia_wayland.json",                        \
		"share/egl/egl_external_platform.d/09_nvidia_wayland2.json",                       \
		"share/egl/egl_external_platform.d/20_nvidia_xcb.json",                            \
		"share/egl/egl_external_platform.d/20_nvidia_xlib.json",                           \
		"share/nvidia/nvoptix.bin"
/* LOCATE_LOADER_FILES, NULL-terminated. */
extern const char *const locate_loader_files[];

/*
 * In the staged tree SFD, after wrap_programs(): makes the entries above. A package
 * whose share/vulkan/icd.d holds anything but regular *.json files of at most 1 MiB, or
 * with one of LOCATE_LOADER_FILES not a regular file or reached through a link, is
 * refused (EXIT_VERIFY). Returns 0 or -1.
 */
_must_check_ int locate_shape(int sfd, struct err *e);
