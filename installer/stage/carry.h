/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What other installers add to the driver's lib64/, carried from one version to the
 * next (docs/design.md, "Files of other installers"). GKE's NCCL, gIB and Fast Socket
 * installers copy their libraries into INSTALL_DIR/lib64, which leads into the current
 * version's directory: without this they would vanish with it at the next switch.
 *
 * Each version records the names its package put under lib64/ (CARRY_OWN_LIST in the
 * version directory). At a switch, every entry of the old version's lib64/ that the
 * list does not name is carried into the new version's lib64/ before the new one
 * becomes current: a regular file as a hard link (a copy where the file system refuses
 * the link), a symlink as a symlink with the same target text. Entries are judged as
 * they are (lstat), never through a link, and no link is followed: a link whose chain
 * (link texts read inside lib64/) ends at a file of the old version's own stays behind;
 * any other, one that leads out of the install dir included, is carried as a link, its
 * target untouched and unread.
 */
#pragma once

#include <stdbool.h>

#include "util/err.h"

#define CARRY_OWN_LIST ".lib64-files"

/*
 * A name of NVIDIA's driver: its libraries (libnvidia-*, libcuda*, libnv*), programs
 * (nvidia-*), modules (*.ko), GSP firmware (gsp_*.bin) and vendor files. The rule for
 * a version recorded before CARRY_OWN_LIST existed, and for taking over an earlier
 * install.
 */
bool carry_is_driver_file(const char *name);

/*
 * Writes CARRY_OWN_LIST into the version directory VERSION_FD: every file and link under
 * its lib64/ (relative paths, sorted; directories are not listed). Returns 0 or -1.
 */
_must_check_ int carry_record(int version_fd, struct err *e);

/*
 * Carries the entries of FROM's lib64/ that are not FROM's own into TO's lib64/, and
 * makes them durable. An entry of TO's own package of the same name is kept (with a
 * warning); one carried there before is replaced. Best effort: what cannot be carried
 * is named in a warning and the switch goes on. Returns how many entries were carried.
 */
unsigned carry_foreign(int from_version_fd, int to_version_fd);
