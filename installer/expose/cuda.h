/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Readiness at the level a CUDA job sees it: the installed libcuda.so.1, loaded with
 * dlopen in a child process (a vendor library that starts threads and cannot be
 * unloaded, or that hangs, must not take the installer with it), initialises, counts
 * every GPU and creates a context on each. NVML answering is not enough: on an NVSwitch
 * system (HGX H100, H200, B200) NVML and nvidia-smi look healthy while cuInit returns
 * 802, "system not yet initialized", until Fabric Manager has trained the NVLink fabric.
 */
#pragma once

#include <stddef.h>

#include "util/err.h"

/* CUDA_ERROR_SYSTEM_NOT_READY (cuda.h): the fabric is not trained, or Fabric Manager is down. */
#define CUDA_SYSTEM_NOT_READY 802

#define CUDA_MAX_GPUS 16

/* How long the check may take: cuInit and a context on each of 8 GPUs take seconds. */
#define CUDA_CHECK_TIMEOUT_S 60

struct cuda_report {
	int result;		     /* the CUresult of the call that failed, 0 when all passed */
	char call[32];		     /* that call: "cuInit", "cuCtxCreate", ... */
	char error[96];		     /* its name and text, as libcuda gives them ("" if none) */
	int failed_device;	     /* the device whose call failed, or -1 */
	int driver_version;	     /* cuDriverGetVersion: 12020 for CUDA 12.2 */
	int n_devices;		     /* cuDeviceGetCount */
	char bdf[CUDA_MAX_GPUS][16]; /* each device's PCI address, lower case */
};

/*
 * Loads LIB (a path to libcuda.so.1) in a child process and asks it, waiting at most
 * TIMEOUT_S seconds. Returns 0 with the report filled (REPORT->result says whether CUDA
 * answered), or -1 with EXIT_DRIVER_CHECK when the child could not run, did not answer in
 * time or died (a signal in the vendor library).
 */
_must_check_ int cuda_probe(const char *lib, unsigned timeout_s, struct cuda_report *report,
			    struct err *e);

/*
 * Judges a report: every one of PCI_GPUS GPUs must be seen and take a context. FABRIC (the
 * host's NVSwitches as host_fabric names them, or NULL) names the cause of 802. Returns 0,
 * or -1 with EXIT_DRIVER_CHECK, the cause and the fix.
 */
_must_check_ int cuda_check(const struct cuda_report *r, size_t pci_gpus, const char *fabric,
			    struct err *e);
