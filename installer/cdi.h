/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CDI spec (Container Device Interface, cdiVersion 0.6.0) for kind
 * nvidia.com/gpu: one device per GPU by index and by UUID, and "all"; the
 * shared device nodes; the driver's lib64/ and bin/ mounted read-only at the
 * container dir, as GKE's device plugin presents them.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"

#define CDI_KIND "nvidia.com/gpu"
#define CDI_FILE "nvidia.json"
#define CDI_MAX_GPUS 16

struct cdi_gpu {
	unsigned minor;
	char uuid[96];
};

struct cdi_input {
	const char *install_dir;   /* host path */
	const char *container_dir; /* where workloads see it */
	struct cdi_gpu gpus[CDI_MAX_GPUS];
	size_t n_gpus;
	const char *shared_nodes[8]; /* /dev paths every device needs: nvidiactl, nvidia-uvm, ... */
	size_t n_shared;
};

/* The spec as JSON; malloc'd, NULL on ENOMEM. */
char *cdi_render(const struct cdi_input *in);

/*
 * Writes CDI_DIR/nvidia.json under root_fd atomically, only when it changes.
 * Returns 1 when written, 0 when unchanged, -1 on error.
 */
int cdi_write(int root_fd, const char *cdi_dir, const struct cdi_input *in, struct err *e);

/* Removes the spec. Returns 0 or -1. */
int cdi_remove(int root_fd, const char *cdi_dir, struct err *e);
