/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Verification against the driver: the installed libnvidia-ml.so.1, loaded
 * with dlopen, must initialise, report the installed version and see every
 * GPU on the PCI bus. What it reports (names, UUIDs, memory, compute
 * capability, CUDA version) feeds the CDI spec and the node labels.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "expose/partition.h"
#include "util/err.h"

#define NVML_MAX_GPUS 16

struct nvml_gpu {
	unsigned minor; /* /dev/nvidiaN */
	char name[96];
	char uuid[96];
	uint64_t memory_mib;
	int cc_major, cc_minor;
	/*
	 * Its NVLink fabric, as nvmlDeviceGetGpuFabricInfo (R525 and later) says on Hopper and
	 * later GPUs of NVSwitch systems: NVML_FABRIC_* below; fabric_status is NVML's return
	 * for the GPU's registration, meaningful once COMPLETED.
	 */
	int fabric_state;
	int fabric_status;
	/* MIG mode (nvmlDeviceGetMigMode): 0 off, 1 on; -1 where the GPU has no MIG. */
	int mig_mode, mig_pending;
};

#define NVML_MAX_MIGS (NVML_MAX_GPUS * 7) /* seven instances each at most */

/* nvmlGpuFabricState_t (nvml.h), and UNKNOWN: the library has no such call. */
enum {
	NVML_FABRIC_UNKNOWN = -1,
	NVML_FABRIC_NOT_SUPPORTED = 0,
	NVML_FABRIC_NOT_STARTED = 1,
	NVML_FABRIC_IN_PROGRESS = 2,
	NVML_FABRIC_COMPLETED = 3,
};

/* "not supported", "not started", "in progress", "completed", "unknown". */
const char *nvml_fabric_state_name(int state);

struct nvml_report {
	char driver_version[80];
	int cuda_version; /* 12020 for CUDA 12.2 */
	unsigned n_gpus;
	struct nvml_gpu gpus[NVML_MAX_GPUS];
	unsigned n_migs;
	struct part_mig migs[NVML_MAX_MIGS];
};

/*
 * Loads LIB (a path to libnvidia-ml.so.1) and asks it. Returns 0, or -1 with
 * EXIT_DRIVER_CHECK and what failed (load, init, a query).
 */
_must_check_ int nvml_query(const char *lib, struct nvml_report *ret, struct err *e);

/*
 * Checks a report against what was installed: VERSION, and PCI_GPUS GPUs.
 * Returns 0, or -1 with EXIT_DRIVER_CHECK saying what differs and what to do.
 */
_must_check_ int nvml_check(const struct nvml_report *r, const char *version, size_t pci_gpus,
			    struct err *e);
