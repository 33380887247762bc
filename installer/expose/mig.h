/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU partitioning (MIG): what a node pool asks for, and what each GPU model can give.
 *
 * GKE writes a pool's request to /etc/nvidia/gpu_config.json (its device plugin and its
 * partitioner read it: container-engine-accelerators, pkg/gpu/nvidia/manager.go
 * GPUConfig, partition_gpu/partition_gpu.go). The sizes each GPU model offers, with the
 * GPU-instance profile id (as `nvidia-smi mig -lgip` shows it) and the number of instances
 * a GPU holds, are NVIDIA's MIG user guide's, as GKE's partitioner has them (mig.c), by
 * PCI id: what `doctor` explains a request with. Layouts are made through NVML
 * (expose/partition.h), which names the profiles of the GPU on the node itself.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define MIG_GKE_CONFIG "/etc/nvidia/gpu_config.json"
/*
 * MPS's pipe directory on the host: where GKE's device plugin mounts it from into the
 * containers of an MPS pool, at the same path, the MPS default (container-engine-
 * accelerators, pkg/gpu/nvidia/manager.go, nvidiaMpsDir); and its log directory, MPS's
 * default (NVIDIA's MPS documentation, CUDA_MPS_LOG_DIRECTORY).
 */
#define MIG_MPS_PIPE_DIR "/tmp/nvidia-mps"
#define MIG_MPS_LOG_DIR "/var/log/nvidia-mps"
#define MIG_SIZE_MAX 32

/* GPUSharingConfig.GPUSharingStrategy (gpusharing.go): none, "time-sharing", "mps". */
enum mig_sharing { MIG_SHARING_NONE, MIG_SHARING_TIME, MIG_SHARING_MPS };

struct mig_request {
	char partition_size[MIG_SIZE_MAX]; /* GPUPartitionSize: "1g.10gb", "" for whole GPUs */
	enum mig_sharing sharing;
	unsigned max_shared_clients; /* per GPU or partition; 0 without sharing */
};

/* One partition size of a GPU model. */
struct mig_size {
	const char *name;    /* "1g.10gb" */
	unsigned profile_id; /* the GPU-instance profile id (nvidia-smi mig -lgip) */
	unsigned count;	     /* instances of it one GPU holds */
};

struct mig_model {
	const char *name;     /* "H100 80GB" */
	const char *gke_type; /* the accelerator type GKE names it by: "nvidia-h100-80gb" */
	uint16_t devices[4];  /* its PCI device ids (vendor 0x10de), 0 after the last */
	const struct mig_size *sizes;
	size_t n_sizes;
};

/* The model of the GPU with this PCI id, or NULL where no MIG sizes are known. */
const struct mig_model *mig_model_of(uint16_t vendor, uint16_t device);

/* "none", "time-sharing", "mps" */
const char *mig_sharing_name(enum mig_sharing s);

/*
 * Parses gpu_config.json as GKE's device plugin reads it (Go's encoding/json into its
 * GPUConfig): keys matched exactly or under Go's case folding, the last of two for one
 * field, null changing nothing, others ignored; GPUPartitionSize, GPUSharingConfig
 * {GPUSharingStrategy, MaxSharedClientsPerGPU}, and the deprecated
 * MaxTimeSharedClientsPerGPU (above 0: time sharing with that many clients), validated as
 * GKE validates them. Returns 0, or -1 (E: what is wrong) for a file GKE's plugin would
 * not take either.
 */
_must_check_ int mig_parse_gke_config(const char *json, size_t len, struct mig_request *ret,
				      struct err *e);

/*
 * Opens MPS's directory DIR (MIG_MPS_PIPE_DIR, MIG_MPS_LOG_DIR) under ROOT_FD, made if
 * need be, only where it is what it says: a link on the way that leads elsewhere (to /etc)
 * is refused (EXIT_USAGE), so that nothing of MPS's lands there; and one that is not ours
 * alone (another user's, made first in the sticky /tmp, or one others may write) is refused
 * (EXIT_USAGE, util/fs.h fs_own_dir_in_root), so that no one can replace the root
 * daemon's sockets in it. Returns an fd or -1.
 */
_must_check_ int mig_mps_dir(int root_fd, const char *dir, struct err *e);

/* Reads and parses MIG_GKE_CONFIG under ROOT_FD. Returns 0, 1 when there is none, or -1. */
_must_check_ int mig_read_gke_config(int root_fd, struct mig_request *ret, struct err *e);

/*
 * What REQ's partition size is on the GPU VENDOR:DEVICE: its size (NULL: no partitions
 * asked for). Returns 0, or -1 (EXIT_USAGE) for a GPU with no known MIG sizes or a size
 * its model does not have, E naming the sizes it has.
 */
_must_check_ int mig_size_for_gpu(const struct mig_request *req, uint16_t vendor, uint16_t device,
				  const struct mig_size **ret, struct err *e);
