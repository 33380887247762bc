/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The driver's device nodes under the host's /dev, made as nvidia-modprobe
 * makes them and kept idempotent:
 *
 *   nvidiactl 195:255, nvidiaN 195:N (N = "Device Minor" of each GPU in
 *   /proc/driver/nvidia/gpus/BDF/information), nvidia-modeset 195:254,
 *   nvidia-uvm M:0 and nvidia-uvm-tools M:1 (M = the "nvidia-uvm" major in
 *   /proc/devices), nvidia-caps/nvidia-cap1 and -cap2 (major "nvidia-caps"), and
 *   nvidia-caps/nvidia-capN of every MIG instance the driver has (its GPU instance's and
 *   compute instances' capabilities, capabilities/gpuN/mig/giM[/ciK]/access),
 *   on NVSwitch hosts nvidia-nvswitchctl M:255 and nvidia-nvswitchN M:N (M = the
 *   "nvidia-nvswitch" major; mode from /proc/driver/nvidia-nvswitch/permissions),
 *   and /dev/char/MAJ:MIN links, which container runtimes match device rules by;
 *   when asked (--imex-channel0), IMEX's default channel nvidia-caps-imex-channels/channel0
 *   M:0 (M = the "nvidia-caps-imex-channels" major, branch 550 on).
 *
 * Modes and owners follow /proc/driver/nvidia/params; ModifyDeviceFiles: 0
 * leaves nvidia.ko's nodes alone. GDRCopy's /dev/gdrdrv and GPUDirect Storage's
 * /dev/nvidia-fsN (when the caller's module set has gdrdrv, nvidia_fs) are made whatever
 * that parameter says (it is nvidia.ko's; gdrdrv makes no node itself), and theirs left
 * at numbers the kernel no longer gives them are removed.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "kernel/kernel.h" /* the face: what other folders call of this module */
#include "util/err.h"

struct nv_params {
	bool modify; /* ModifyDeviceFiles */
	uid_t uid;
	gid_t gid;
	mode_t mode;
};

/* Parses /proc/driver/nvidia/params; missing keys keep the driver's defaults (0666, root). */
void devnodes_parse_params(const char *buf, struct nv_params *ret);

/* The major of character device NAME in /proc/devices text, or -1. */
int devnodes_parse_major(const char *proc_devices, const char *name);

/* The "Device Minor" of a GPU information file, or -1. */
int devnodes_parse_minor(const char *information);

/* devnodes_sync's GPUDIRECT: the modules of ours whose nodes are made. */
#define DEVNODES_GDRDRV 1u    /* gdrdrv: /dev/gdrdrv */
#define DEVNODES_NVIDIA_FS 2u /* nvidia_fs: /dev/nvidia-fsN */

/*
 * Makes the nodes the loaded driver needs under ROOT/dev. WITH_MODESET adds
 * nvidia-modeset, GPUDIRECT (DEVNODES_GDRDRV, DEVNODES_NVIDIA_FS) those modules' nodes,
 * IMEX_CHANNEL0 DEVNODES_IMEX_CHANNEL0 (without the
 * driver's chrdev a warning, no failure; anything but a character device there, or a
 * directory that is not one, is refused). Returns 0 and what it did in *ret, or -1.
 */
_must_check_ int devnodes_sync(int root_fd, bool with_modeset, unsigned gpudirect,
			       bool imex_channel0, struct devnodes_report *ret, struct err *e);

/*
 * The GPU instances the driver has now, made by whatever tool: the giM entries of its
 * capabilities/gpuN/mig/ (what GKE's device plugin reads); 0 where there are none.
 */
unsigned devnodes_mig_instances(int root_fd);

/*
 * Before anything changes (--imex-channel0): whether channel0 can be made, that is
 * nothing but a directory at /dev/nvidia-caps-imex-channels and nothing but a character
 * device at its channel0. Returns 0, or -1 (EXIT_USAGE) naming what is in the way.
 */
_must_check_ int devnodes_imex_check(int root_fd, struct err *e);

/*
 * Removes the driver's nodes and their /dev/char links; with IMEX_CHANNEL0 also
 * nvidia-caps-imex-channels/channel0 (a character device only) and the directory when
 * empty. Returns 0 or -1.
 */
_must_check_ int devnodes_remove(int root_fd, bool imex_channel0, struct err *e);
