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
	uint64_t instance;     /* ib_core's instance at the last look (0: none live) */
	bool refused;	       /* the kernel refused the last reload: not tried again until */
	uint64_t refused_instance, refused_file; /* ... the stack or the file changes */
};

void agent_rdma_init(struct agent_rdma *r);

/* What a look hands agent_rdma_look: the node as the look read it. */
struct agent_rdma_look {
	const struct agent_rdma_opts *o;
	int root_fd;
	const char *install_dir;
	const char *release;	 /* the running kernel's */
	const char *version;	 /* the installed version, or NULL */
	const char *install_id;	 /* its directory under .versions/ */
	const char *module_type; /* its manifest's flavour, or NULL (unstated) */
	/* Why no reload may happen at this look (an installer run holds its lock, the agent's
	 * own upgrade child runs), or NULL. */
	const char *busy;
};

/*
 * The agent's debounce and back-off, at a look that reads ib_core's instance INSTANCE and
 * nvidia-peermem's file FILE: why the reload must hold this time, or NULL. It holds until
 * the same instance was seen live on two consecutive looks (openibd's stop and start in
 * between are not seen as a settled stack), and after a kernel refusal until the stack's
 * instance or the file changes.
 */
const char *agent_rdma_hold(struct agent_rdma *r, uint64_t instance, uint64_t file);

/* One look: nvidia-peermem loaded again where due (kernel_rdma_reload), said in one log line. */
void agent_rdma_look(struct agent_rdma *r, const struct agent_rdma_look *l);

/* The metrics (Prometheus text), malloc'd; NULL when out of memory. "" when --rdma off. */
char *agent_rdma_render(const struct agent_rdma *r, enum kernel_rdma mode);
