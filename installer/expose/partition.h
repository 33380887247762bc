/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU partitioning through NVML (libnvidia-ml.so.1 by dlopen, nvml.h's MIG calls): a layout
 * for every GPU of the node (MIG off, MIG on as it is, or a GPU of equal instances of one
 * profile, each instance one compute instance of the whole size: what GKE's partitioner
 * and mig-parted's all-<profile> configurations make), applied so that a layout already
 * there changes nothing, refused while a process holds the GPUs, and reported when a GPU
 * needs a reset to enter or leave MIG mode. What the instances are, as NVML says (MIG
 * devices with their UUIDs and profile names), feeds the CDI spec and the labels.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "expose/expose.h" /* the face: what other folders call of this module */
#include "util/err.h"

struct part_result {
	unsigned changed;	/* GPUs whose mode or instances this run changed */
	unsigned unchanged;	/* GPUs already as asked */
	unsigned reset_pending; /* GPUs whose mode waits for a reset */
	char pending[256];	/* those GPUs, "0 (NVIDIA A100-SXM4-40GB), ..." */
};

/*
 * Applies L to every GPU that LIB's NVML sees. Refuses (EXIT_IN_USE, the holders named)
 * when a change is due and a process other than OURS has /dev/nvidia* open under ROOT_FD;
 * EXIT_USAGE for a profile a GPU lacks (its profiles listed) or MIG asked of a GPU without
 * it; EXIT_DRIVER_CHECK when NVML fails. Instances this run made on a GPU are destroyed
 * again when a later one fails there. Returns 0 with RES filled, or -1.
 */
struct part_apply {
	const char *lib; /* libnvidia-ml.so.1 */
	int root_fd;
	const pid_t *ours;
	size_t n_ours;
	/* Called once a change is due, before the GPUs are judged busy; or NULL. */
	int (*before_busy_check)(void *arg, struct err *e);
	void *before_busy_arg;
};
_must_check_ int partition_apply(const struct part_apply *a, const struct part_layout *l,
				 struct part_result *res, struct err *e);

/* What nvml_query learns of one GPU's MIG: its mode and its MIG devices, appended. */
struct part_gpu {
	uint64_t total_bytes; /* in: the GPU's memory as NVML reported it (names by it) */
	int mode, pending;    /* nvmlDeviceGetMigMode; -1 where the GPU has no MIG */
	struct part_mig *migs;
	unsigned n, max;
};

/*
 * nvml.c's hooks: the MIG calls of an NVML handle from dlopen (NULL where the library has
 * none, or on ENOMEM; free() it), and what GPU INDEX (handle DEV) has.
 */
struct part_api;
struct part_api *partition_bind(void *nvml_handle);
void partition_query_gpu(const struct part_api *p, void *dev, unsigned index, struct part_gpu *ret);

/*
 * go-nvlib's profile name (pkg/nvlib/device/mig_profile.go): "Gg.MEMgb" ("Cc.Gg.MEMgb" when
 * the compute instance has fewer slices than its GPU instance), MEM the instance's memory
 * as eighths of the GPU's (rounded up), times the GPU's GiB (rounded up), rounded; then
 * the suffix ("+me").
 */
struct part_shape {
	unsigned ci_slices, gi_slices;
	uint64_t mem_mib;     /* the instance's */
	uint64_t total_bytes; /* the GPU's */
	const char *suffix;
};
void partition_profile_name(const struct part_shape *s, char *buf, size_t size);
