/* SPDX-License-Identifier: GPL-2.0 */
/* Stand-in for gds-nvidia-fs's src/nvfs-vers.h: the module's version. */
#ifndef STANDIN_NVFS_VERS_H
#define STANDIN_NVFS_VERS_H

#define NVFS_DRIVER_MAJOR_VERSION 2
#define NVFS_DRIVER_MINOR_VERSION 27
#define NVFS_DRIVER_PATCH_VERSION 3

#endif
