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

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "expose/mig.h"
#include "util/err.h"

enum part_kind {
	PART_KEEP,     /* no layout asked for: MIG left as it is */
	PART_DISABLED, /* MIG off, instances destroyed: "all-disabled" */
	PART_ENABLED,  /* MIG on, instances as they are: "all-enabled" */
	PART_PROFILE,  /* MIG on, the GPU filled with one profile: "all-1g.10gb" */
};

/* One GPU's layout. */
struct part_one {
	enum part_kind kind;
	char profile[MIG_SIZE_MAX]; /* PART_PROFILE: go-nvlib's name, "1g.10gb" */
};

#define PART_LAYOUT_GPUS 16	 /* GPUs a layout can name (nvml.h's NVML_MAX_GPUS) */
#define PART_LAYOUT_NAME_MAX 512 /* the longest name part_layout_name gives */

/* A layout for the node: one for every GPU, and those of the GPUs named by index. */
struct part_layout {
	enum part_kind kind;	    /* the GPUs not named */
	char profile[MIG_SIZE_MAX]; /* PART_PROFILE: go-nvlib's name, "1g.10gb" */
	struct part_one gpu[PART_LAYOUT_GPUS];
	bool named[PART_LAYOUT_GPUS];
	const char *source; /* where it was asked for: "--mig-layout", gpu_config.json */
};

/*
 * --mig-layout: "all-disabled", "all-enabled", "all-PROFILE" (mig-parted's names), "none"
 * (keep) for every GPU; a comma-separated list of such layouts for GPUs by NVML index,
 * "N=LAYOUT", with at most one for the GPUs not named ("all-disabled,0=all-1g.10gb"); or
 * "gke": GKE's gpu_config.json under ROOT_FD (no file, or one without a GPUPartitionSize:
 * keep). Returns 0, or -1 (EXIT_USAGE) naming what is wrong.
 */
_must_check_ int part_layout_parse(const char *spec, int root_fd, struct part_layout *ret,
				   struct err *e);

/* The layout of GKE's request REQ (already read): its partition size on every GPU, or keep. */
void part_layout_of_gke(const struct mig_request *req, struct part_layout *ret);

/* "all-disabled", "all-1g.10gb", "0=all-1g.10gb,1=all-disabled", "none". */
void part_layout_name(const struct part_layout *l, char *buf, size_t size);

/* The layout of GPU INDEX: its own where L names it, else that of the GPUs not named. */
struct part_one part_layout_for(const struct part_layout *l, unsigned index);

/* Whether L leaves every GPU as it is. */
bool part_layout_keeps(const struct part_layout *l);

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

/* A MIG device: one compute instance of a GPU instance, what a container is given. */
struct part_mig {
	unsigned gpu;	 /* its GPU's NVML index */
	unsigned index;	 /* among its GPU's MIG devices (nvmlDeviceGetMigDeviceHandleByIndex) */
	unsigned gi, ci; /* its GPU instance's and compute instance's ids */
	char uuid[96];	 /* "MIG-..." */
	char profile[MIG_SIZE_MAX]; /* go-nvlib's name: "1g.10gb", "1g.10gb+me", "1c.2g.20gb" */
	uint64_t memory_mib;
	unsigned sms, gi_slices, ci_slices;
	unsigned copy, decoders, encoders, jpegs, ofas; /* engines, shared within the instance */
};

/* What nvml_query learns of one GPU's MIG: its mode and its MIG devices, appended. */
struct part_gpu {
	uint64_t total_bytes; /* in: the GPU's memory as NVML reported it (names by it) */
	int mode, pending;    /* nvmlDeviceGetMigMode; -1 where the GPU has no MIG */
	struct part_mig *migs;
	unsigned n, max;
};

/* A profile among MIG devices: its first device, and how many have it. */
struct part_profile_count {
	const struct part_mig *first;
	unsigned count;
};

/*
 * The distinct profiles of the N devices MIGS, in the order they first appear, into RET (at
 * most MAX). Returns how many.
 */
size_t partition_profiles(const struct part_mig *migs, unsigned n, struct part_profile_count *ret,
			  size_t max);

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
