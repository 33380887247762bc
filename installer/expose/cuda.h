/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Readiness at the level a CUDA job sees it: the installed libcuda.so.1, loaded with
 * dlopen in a child process (a vendor library that starts threads and cannot be
 * unloaded, or that hangs, must not take the installer with it), initialises, counts
 * every GPU and creates a context on each. NVML answering is not enough: on an NVSwitch
 * system (HGX H100, H200, B200) NVML and nvidia-smi look healthy while cuInit returns
 * 802, "system not yet initialized", until Fabric Manager has trained the NVLink fabric.
 *
 * CUDA is asked only what it can answer (NVIDIA's MIG user guide, "CUDA Device
 * Enumeration"): it enumerates no GPU in MIG mode, and one process sees at most one MIG
 * device; with MIG mode on and no instance, cuInit fails with CUDA_ERROR_NO_DEVICE. So the
 * GPUs NVML shows outside MIG mode are asked in one process, and each MIG device in a
 * process of its own, named by CUDA_VISIBLE_DEVICES=MIG-<uuid>, a few processes at a time.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "expose/nvml.h"
#include "util/err.h"

/* CUDA_ERROR_SYSTEM_NOT_READY (cuda.h): the fabric is not trained, or Fabric Manager is down. */
#define CUDA_SYSTEM_NOT_READY 802

#define CUDA_MAX_GPUS 16

/* How long one process may take: cuInit and a context on each of 8 GPUs take seconds. */
#define CUDA_CHECK_TIMEOUT_S 60

/* Processes asking CUDA at once: each holds a context, hundreds of MiB of host memory. */
#define CUDA_PROBES_AT_ONCE 4

/* CUDA_VISIBLE_DEVICES naming every GPU of a node by its UUID ("GPU-" and 36 characters). */
#define CUDA_VISIBLE_MAX (CUDA_MAX_GPUS * 48)

struct cuda_report {
	/* What was asked. */
	char visible[CUDA_VISIBLE_MAX]; /* CUDA_VISIBLE_DEVICES; "" unset: all CUDA enumerates */
	char what[160]; /* those devices in words: "MIG device MIG-... (GPU 0...)" */
	int expect;	/* how many devices CUDA must see there */
	/* What CUDA answered. */
	int result;		     /* the CUresult of the call that failed, 0 when all passed */
	char call[32];		     /* that call: "cuInit", "cuCtxCreate", ... */
	char error[96];		     /* its name and text, as libcuda gives them ("" if none) */
	int failed_device;	     /* the device whose call failed, or -1 */
	int driver_version;	     /* cuDriverGetVersion: 12020 for CUDA 12.2 */
	int n_devices;		     /* cuDeviceGetCount */
	char bdf[CUDA_MAX_GPUS][16]; /* each device's PCI address, lower case */
};

/*
 * Loads LIB (a path to libcuda.so.1) in a child process and asks it about the devices
 * VISIBLE names (CUDA_VISIBLE_DEVICES; NULL or "": every device CUDA enumerates), waiting
 * at most TIMEOUT_S seconds. Returns 0 with the report filled (REPORT->result says whether
 * CUDA answered; REPORT->visible is VISIBLE, what and expect are left empty), or -1 with
 * EXIT_DRIVER_CHECK when the child could not run, did not answer in time or died (a signal
 * in the vendor library).
 */
_must_check_ int cuda_probe(const char *lib, const char *visible, unsigned timeout_s,
			    struct cuda_report *report, struct err *e);

/*
 * Judges a report: CUDA must see R->expect devices, and each must take a context. FABRIC
 * (the host's NVSwitches as host_fabric names them, or NULL) names the cause of 802.
 * Returns 0, or -1 with EXIT_DRIVER_CHECK, the cause and the fix.
 */
_must_check_ int cuda_check(const struct cuda_report *r, const char *fabric, struct err *e);

/* What CUDA is asked on a node, from NVML's answer. */
struct cuda_plan {
	unsigned whole; /* GPUs outside MIG mode, asked in one process */
	unsigned migs;	/* MIG devices, one process each */
	unsigned idle;	/* GPUs in MIG mode without a MIG device: nothing to ask there */
	unsigned n;	/* processes: one for the whole GPUs (if any), one per MIG device */
	/* The whole GPUs' CUDA_VISIBLE_DEVICES: "" where no GPU is in MIG mode (unset, every
	 * device CUDA enumerates), else their GPU-<uuid> list. */
	char whole_visible[CUDA_VISIBLE_MAX];
};

/* The plan for the node NV describes, into RET. */
void cuda_plan_node(const struct nvml_report *nv, struct cuda_plan *ret);

/*
 * Ask K (below P->n) of the plan P for NV, into RET's visible, what and expect (the rest
 * zero): the whole GPUs first, then each MIG device alone by its MIG-<uuid>, in NVML's order.
 */
void cuda_plan_ask(const struct nvml_report *nv, const struct cuda_plan *p, unsigned k,
		   struct cuda_report *ret);

/*
 * Asks CUDA about the node NV describes, as cuda_plan_node plans it, CUDA_PROBES_AT_ONCE
 * processes at a time, each within TIMEOUT_S, and stops at the first answer that fails.
 * Fills RET with the plan and *RET_LAST with that answer (a result other than 0, or
 * another count than expected), else with the last one (all zero where there was nothing
 * to ask), for cuda_check. Returns 0, or -1 as cuda_probe does, naming the devices asked.
 */
_must_check_ int cuda_probe_node(const char *lib, const struct nvml_report *nv, unsigned timeout_s,
				 struct cuda_plan *ret, struct cuda_report *ret_last,
				 struct err *e);
