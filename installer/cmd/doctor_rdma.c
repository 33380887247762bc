// SPDX-License-Identifier: Apache-2.0
/*
 * doctor's GPUDirect RDMA check (--rdma, docs/design.md "GPUDirect RDMA"): which path
 * serves RDMA on this node, nvidia-peermem loaded over the RDMA stack or the kernel's
 * dma-buf (the open modules on Linux 5.12 or later), and why neither when neither. The
 * decision is the kernel stage's (kernel_rdma_decide), on what the node shows now: the
 * loaded driver's flavour, ib_core, MOFED's peer-memory API.
 */
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"
#include "cmd/cmd.h"
#include "cmd/config.h"
#include "cmd/doctor_checks.h"
#include "cmd/session.h"
#include "kernel/kernel.h"

void doctor_check_rdma(struct doctor *d, int root_fd, const struct config *c,
		       const struct nodestate *s)
{
	enum kernel_rdma mode = session_rdma(c);
	struct kernel_rdma_probe p;
	struct kernel_rdma_decision r;
	struct err e;

	if (mode == KERNEL_RDMA_OFF)
		return;
	err_clear(&e);
	if (kernel_rdma_plan(
		    &(struct kernel_rdma_plan_request){
			    .mode = mode,
			    .root_fd = root_fd,
			    .release = s->host.kernel,
			    .module_type = s->manifest.module_type ? s->manifest.module_type
								   : s->loaded_type,
			    .drivers_fd = -1},
		    &p, &r, &e) < 0) {
		doctor_add(d, V_FAIL, "rdma", e.hint[0] ? e.hint : NULL, "%s", e.msg);
		return;
	}
	if (r.code) {
		doctor_add(d, V_FAIL, "rdma", r.fix, "%s", r.why);
		return;
	}
	switch (r.path) {
	case RDMA_PATH_PEERMEM:
		if (p.peermem_live)
			doctor_add(d, V_OK, "rdma", NULL, "peermem: nvidia_peermem is loaded; %s",
				   r.why);
		else if (!p.stack_live)
			doctor_add(
				d, V_WARN, "rdma",
				"load the node's RDMA stack (DOCA-OFED's openibd, or the NIC's driver); the agent loads nvidia-peermem after it",
				"peermem: the RDMA stack is not loaded (ib_core is not live), so nvidia_peermem is not either");
		else
			doctor_add(
				d, V_FAIL, "rdma",
				"re-run install with --rdma peermem, or run the node agent with it: it loads nvidia-peermem after the RDMA stack",
				"peermem: ib_core is loaded but nvidia_peermem is not");
		break;
	case RDMA_PATH_DMABUF:
		doctor_add(d, V_OK, "rdma", NULL, "%s", r.why);
		break;
	case RDMA_PATH_NONE:
		doctor_add(
			d, p.stack_live ? V_WARN : V_OK, "rdma",
			"use NVIDIA's open kernel modules on Linux 5.12 or later (dma-buf), or DOCA-OFED's RDMA stack (nvidia-peermem)",
			"%s", r.why);
		break;
	}
}
