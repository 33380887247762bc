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

#include "expose/expose.h" /* the face: what other folders call of this module */
#include "util/err.h"

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
