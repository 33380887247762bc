/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node agent's part of GPUDirect RDMA (--rdma): at each look, nvidia-peermem loaded
 * again once the RDMA stack is back after a reload (kernel_rdma_reload), with its log line
 * and metrics. NVIDIA's driver container does this with a sidecar that waits and
 * modprobes (docs/design.md, "GPUDirect RDMA").
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "agent/agent.h"

struct agent_rdma {
	uint64_t reloads;      /* nvidia-peermem loaded again by the agent */
	uint64_t failures;     /* reloads refused (by our checks or by the kernel) */
	int path;	       /* enum kernel_rdma_path of the last look, -1 before one */
	char waiting[256];     /* why the last look loaded nothing although peermem is due */
	char last_error[2048]; /* the last refusal, logged once until it changes */
};

void agent_rdma_init(struct agent_rdma *r);

/* What a look hands agent_rdma_look: the node as the look read it. */
struct agent_rdma_look {
	const struct agent_rdma_opts *o;
	int root_fd;
	const char *install_dir;
	const char *release;	/* the running kernel's */
	const char *version;	/* the installed version, or NULL */
	const char *install_id; /* its directory under .versions/ */
};

/* One look: nvidia-peermem loaded again where due (kernel_rdma_reload), said in one log line. */
void agent_rdma_look(struct agent_rdma *r, const struct agent_rdma_look *l);

/* The metrics (Prometheus text), malloc'd; NULL when out of memory. "" when --rdma off. */
char *agent_rdma_render(const struct agent_rdma *r, enum kernel_rdma mode);
