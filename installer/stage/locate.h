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
 * In the staged tree SFD, after wrap_programs(): makes the entries above. A package
 * whose share/vulkan/icd.d holds anything but regular *.json files of at most 1 MiB is
 * refused (EXIT_VERIFY). Returns 0 or -1.
 */
_must_check_ int locate_shape(int sfd, struct err *e);
