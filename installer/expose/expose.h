/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The last stage: making the installed driver usable and visible. In order:
 * the exec bind mount (and --host-mount targets), the host's ld cache, the
 * NVML verification against the loaded driver, the GPU layout (MIG), the CUDA
 * check of what is then there, the CDI spec, the node
 * labels, and last the readiness marker, so that whatever waits for it finds
 * everything else in place. Uninstall withdraws them in the reverse order:
 * the marker, labels and CDI spec before the kernel side, the ld
 * configuration and the mounts after it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "host/host.h"
#include "util/err.h"

/*
 * The face of expose/, the only header of it that other folders include: the stage
 * above and its parts, for the commands that read what it made (status, doctor).
 */
#include "expose/cdi.h"
#include "expose/cuda.h"
#include "expose/ldcache.h"
#include "expose/mig.h"
#include "expose/mounts.h"
#include "expose/nodeinfo.h"
#include "expose/nvml.h"
#include "expose/partition.h"
#include "expose/timing.h"

#define EXPOSE_RUN_DIR "/run/nvidia-driver-installer" /* this process's own, for staging */
/* NVIDIA's Fabric Manager, in the installed bin/: the node agent runs it on NVSwitch hosts. */
#define EXPOSE_FABRICMANAGER "nv-fabricmanager"
/* NVIDIA's NVLink Subnet Manager, which NVLink 5 fabrics need before Fabric Manager. */
#define EXPOSE_NVLSM "nvlsm"

/* What the expose stage reads of the configuration: host paths, and the CDI choices. */
/* What a run of expose_run left waiting, for the caller to record. */
struct expose_result {
	bool layout_deferred;		   /* the GPU layout asked for waits for idle GPUs */
	char layout[PART_LAYOUT_NAME_MAX]; /* its name ("all-1g.10gb") */
	char why[1024];			   /* who holds the GPUs */
};

struct expose_opts {
	const char *root;	   /* the host's / as this process sees it (--root) */
	const char *install_dir;   /* host path */
	const char *container_dir; /* where containers see the install dir */
	char *const *host_mounts;  /* more host paths to bind the install dir onto */
	size_t n_host_mounts;
	const char *cdi_dir;	/* host path of the CDI spec directory */
	const char *cdi_kind;	/* the kind our spec declares */
	bool cdi_replace;	/* set aside another producer's spec of that kind */
	const char *mig_layout; /* --mig-layout (partition.h); NULL: none */
	/*
	 * --when-busy defer: a layout change refused for busy GPUs leaves the layout as it is
	 * and says so in *RESULT (not NULL then), the run going on; else it fails (exit 7).
	 */
	bool defer_busy;
	struct expose_result *result;
	/* Called before GPUs are judged busy (the node agent's daemons stop), or NULL. */
	int (*before_busy_check)(void *arg, struct err *e);
	void *before_busy_arg;
	bool skip_verify; /* no NVML check (hosts without a GPU) */
};

/*
 * Exposes VERSION, installed in the directory open as INSTALL_FD. Without a
 * loaded driver of that version (--skip-modules), stops after the ld cache.
 * Returns 1 when the driver was made ready (the marker written), 0 when it
 * stopped after the ld cache, or after the CDI spec on an NVSwitch system whose CUDA waits
 * for Fabric Manager (the node agent's to start; the labels and marker are then its), or
 * -1 (EXIT_DRIVER_CHECK when NVML or CUDA disagrees; no marker then).
 */
_must_check_ int expose_run(const struct expose_opts *o, int root_fd, int install_fd,
			    const struct host *h, const char *version, struct err *e);

/*
 * After a failed install: when no nvidia module is loaded on RELEASE (a manual rmmod, a
 * run killed during a reload, a load that failed), nothing may keep saying that a driver
 * is here: the readiness marker, the driver's labels and the CDI spec are withdrawn, as
 * after a failed NVML check (the pending-upgrade labels stay with their record). Nothing
 * changes while a driver is loaded, or when the kernel's state cannot be read. Returns 1
 * when withdrawn, else 0; a file that cannot be removed is a warning.
 */
int expose_withdraw_unloaded(const struct expose_opts *o, int root_fd, const char *release);

/* uninstall, first: the readiness marker, the labels, the CDI spec. Returns 0 or -1. */
_must_check_ int expose_withdraw_notices(const struct expose_opts *o, int root_fd, struct err *e);

/* uninstall, after the kernel side: the ld configuration and the mounts. Returns 0 or -1. */
_must_check_ int expose_withdraw_host(const struct expose_opts *o, int root_fd, struct err *e);
