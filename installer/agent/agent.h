/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node agent's parts, below the command that runs them (cmd/agent.c): the kernel
 * log's Xids, the health judgement and its metrics, the HTTP endpoint, a driver upgrade's
 * states and the fleet's upgrade slots, and the node's state as a look reads it, which
 * status and doctor report too. The face of agent/, the only header of it that cmd/
 * includes.
 */
#pragma once

#include "agent/control.h"
#include "agent/daemons.h"
#include "agent/health.h"
#include "agent/httpd.h"
#include "agent/slots.h"
#include "agent/upgrade.h"
#include "agent/upgrader.h"
#include "agent/xid.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "expose/expose.h"
#include "host/host.h"
#include "kernel/kernel.h"
#include "stage/stage.h"
#include "util/err.h"

/* ---- the node, as the agent looks at it and status and doctor report it ------------- */

#define NODESTATE_MAX_NODES 32

/* What a look at the node reads of the configuration: host paths, and the CDI kind. */
struct nodestate_opts {
	const char *kernel_release; /* --kernel-release, or NULL: the running kernel's */
	const char *install_dir;    /* host path */
	const char *cdi_dir;	    /* host path of the CDI spec directory */
	const char *cdi_kind;	    /* the kind our spec declares */
};

struct gpu_binding {
	char bdf[32];
	char driver[32]; /* the PCI driver bound to it, or "" */
};

struct nodestate {
	struct host host;
	bool host_ok;
	struct gpu_binding bindings[16];

	bool installed;
	struct manifest manifest;
	char install_id[256];
	char signer[256];   /* of the installed nvidia.ko, or "" */
	bool signed_module; /* the installed nvidia.ko carries a signature */

	char loaded_version[64]; /* of the live nvidia module, or "" */
	char loaded_type[16];	 /* its flavour, "open" or "proprietary" (its taint), or "" */
	struct ktrust trust;

	bool has_mount;
	struct mount_info mount;
	uint64_t free_mib; /* on the install dir's file system */

	char nodes[NODESTATE_MAX_NODES][48]; /* /dev/nvidia* present */
	size_t n_nodes;
	bool nodes_ok; /* nvidiactl and one node per GPU, as character devices */

	bool firmware_ok; /* the installed version's GSP firmware is reachable by the kernel */
	char firmware_how[128];
	bool ld_ok; /* the host's ld cache lists libcuda.so.1 in the install dir */
	bool cdi_present, labels_present, ready_present;
	char cdi_other[4200]; /* another producer's spec of our CDI kind, or "" */

	bool nvml_ok;
	struct nvml_report nvml;
	char nvml_error[512];
};

/*
 * Gathers the state under ROOT_FD as O says (agent/nodestate.c). Returns 0, or -1 when the
 * root cannot be read at all.
 */
_must_check_ int nodestate_collect(const struct nodestate_opts *o, int root_fd, struct nodestate *s,
				   struct err *e);
void nodestate_done(struct nodestate *s);
