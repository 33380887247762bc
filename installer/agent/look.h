/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node agent's state between looks (struct agent, agent/agent.h's handle), for the
 * files of agent/ that make it (agent/watch.c: its start, its end, the events the loop
 * hands it) and that look with it (agent/look.c: each look at the node, what it judged,
 * published and rendered).
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/agent.h"
#include "agent/draplugin.h"
#include "agent/health.h"
#include "agent/nodecond.h"
#include "agent/rdma.h"
#include "agent/supervisor.h"
#include "agent/upgrader.h"
#include "agent/xid.h"

#define AGENT_MAX_HOLDS (AGENT_MAX_FDS - 2)

/* What NVML showed of MIG at the last look that it answered: the agent's MIG series. */
#define MIG_PROFILE_SERIES 16
struct mig_view {
	unsigned n_gpus;
	int mode[NVML_MAX_GPUS], pending[NVML_MAX_GPUS]; /* -1: the GPU has no MIG */
	struct {
		char profile[MIG_SIZE_MAX];
		unsigned count;
	} profiles[MIG_PROFILE_SERIES];
	size_t n_profiles;
};

struct agent {
	const struct agent_opts *o;
	const struct agent_calls *calls;
	struct kmsg_reader kmsg; /* fd -1 when the kernel log cannot be read */
	struct health h;
	uint64_t start_ns;
	uint64_t cuda_ok_ns;	    /* the last CUDA check that passed, 0 for none since a change */
	char fatal_xid[96];	    /* the fatal Xid in effect since the driver loaded, or "" */
	char version[64];	    /* the installed version at the last look, or "" */
	struct supervisor sv;	    /* the driver's daemons (agent/supervisor.h) */
	int ctl_fd;		    /* the control socket (agent/control.h), or -1 */
	int holds[AGENT_MAX_HOLDS]; /* installers holding the daemons stopped */
	size_t n_holds;
	struct upgrader up;   /* driver upgrades (agent/upgrader.h) */
	struct nodecond nc;   /* the condition and taints on the Node (agent/nodecond.h) */
	struct draplugin dp;  /* NVIDIA's DRA kubelet plugin (agent/draplugin.h) */
	bool look_soon;	      /* an upgrade moved on: the next look without the interval */
	uint64_t hup_ns;      /* when a stale spec's producer was last asked to rewrite it */
	char stale[PATH_MAX]; /* the other producer's spec found stale at the last look, or "" */
	struct mig_view mig;
	struct agent_rdma rdma; /* nvidia-peermem after the RDMA stack (agent/rdma.h) */
};

/* The kernel log, read as far as it goes now: Xids counted, a driver load noted. */
void look_read_kmsg(struct agent *a);
/* agent_reap, as supervisor_init's REAP: A is the agent. */
void look_reap(void *a);
