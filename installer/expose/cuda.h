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

#include "expose/expose.h" /* the face: what other folders call of this module */
#include "util/err.h"

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

/* The plan for the node NV describes, into RET. */
void cuda_plan_node(const struct nvml_report *nv, struct cuda_plan *ret);

/*
 * Ask K (below P->n) of the plan P for NV, into RET's visible, what and expect (the rest
 * zero): the whole GPUs first, then each MIG device alone by its MIG-<uuid>, in NVML's order.
 */
void cuda_plan_ask(const struct nvml_report *nv, const struct cuda_plan *p, unsigned k,
		   struct cuda_report *ret);
