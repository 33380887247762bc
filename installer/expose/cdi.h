/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CDI spec (Container Device Interface) for our kind (nvidia.com/gpu unless
 * told otherwise): one device per GPU by index and by UUID, and "all"; the
 * shared device nodes; the driver's lib64/ and bin/ mounted read-only at the
 * container dir, as GKE's device plugin presents them; and a createContainer
 * hook, shipped in the install dir, that adds lib64/ to the container's ld
 * cache (docs/design.md, "Libraries in containers"). No environment: a
 * workload's own LD_LIBRARY_PATH is left as it is.
 *
 * cdiVersion is the lowest the content needs, by the CDI library's rule, so
 * that a runtime vendoring an older library (podman 4.3, containerd 1.7)
 * accepts it.
 */
#pragma once

#include <limits.h>

#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"

#define CDI_KIND "nvidia.com/gpu"
#define CDI_FILE "nvidia-driver-installer.json"
/* What versions before this one wrote: removed when its content proves it ours. */
#define CDI_LEGACY_FILE "nvidia.json"
/* Another producer's spec, set aside by --cdi-replace, gets this suffix. */
#define CDI_SET_ASIDE ".replaced-by-nvidia-driver-installer"
#define CDI_MAX_GPUS 16

struct cdi_gpu {
	unsigned index; /* NVML's: the device's name */
	unsigned minor;
	char uuid[96];
};

/* A MIG device: named "GPU:INDEX" and by its UUID, as NVIDIA's CDI generator names them. */
struct cdi_mig {
	unsigned gpu;	     /* its GPU's index (the spec's GPU device name) */
	unsigned index;	     /* its index among the GPU's MIG devices */
	unsigned gpu_minor;  /* /dev/nvidiaN of its GPU */
	long gi_cap, ci_cap; /* /dev/nvidia-caps/nvidia-capN of its instances */
	char uuid[96];	     /* "MIG-..." */
};
#define CDI_MAX_MIGS (CDI_MAX_GPUS * 7)

struct cdi_input {
	const char *kind;
	const char *install_dir;   /* host path */
	const char *container_dir; /* where workloads see it */
	const char *hook_path;	   /* host path of the ld-cache hook; NULL: none */
	struct cdi_gpu gpus[CDI_MAX_GPUS];
	size_t n_gpus;
	struct cdi_mig migs[CDI_MAX_MIGS];
	size_t n_migs;
	const char *shared_nodes[8]; /* /dev paths every device needs: nvidiactl, nvidia-uvm, ... */
	const char *mps_pipe_dir;    /* MPS's pipe directory (host path), mounted alike; NULL */
	size_t n_shared;
};

/* Whether KIND is a CDI kind ("vendor/class", the CDI library's character rules). */
bool cdi_kind_is_valid(const char *kind);

/*
 * The lowest cdiVersion whose rules admit the spec JSON (an object), as the CDI
 * library's MinimumRequiredVersion computes it: "0.3.0" ... "1.1.0".
 */
const char *cdi_min_version_of(const char *json);

/* The spec as JSON; malloc'd, NULL on ENOMEM. */
char *cdi_render(const struct cdi_input *in);

/*
 * The CDI directories runtimes read (the CDI library's defaults, lowest
 * priority first), and the kind a spec file declares: JSON's or YAML's top-level
 * "kind". Returns 0 with ret (size bytes) filled, or -1 when TEXT declares none.
 */
#define CDI_STATIC_DIR "/etc/cdi"
#define CDI_DYNAMIC_DIR "/var/run/cdi"
int cdi_spec_kind(const char *text, size_t len, bool yaml, char *ret, size_t size);

/* The most a spec file may hold to be read: what is bigger is nobody's spec. */
#define CDI_SPEC_MAX (1 << 20)

/*
 * Another producer's spec of KIND on the node: the first *.json or *.yaml in
 * /etc/cdi, /var/run/cdi and CDI_DIR (under root_fd; each directory once, however
 * it is named) that declares KIND and is not ours. Files are read as the CDI library
 * reads them, a link followed (inside the root), but only regular files of at most
 * CDI_SPEC_MAX bytes; ours are told by what they resolve to (device and inode), not by
 * name: CDI_DIR/CDI_FILE, or a legacy CDI_DIR/nvidia.json that mounts from
 * INSTALL_DIR, under any name that leads to them. Writes its host path to ret.
 * Returns 1 found, 0 none.
 */
int cdi_find_other(int root_fd, const char *cdi_dir, const char *install_dir, const char *kind,
		   char *ret, size_t size);

/* What cdi_find_stale found: the spec's host path, and the first path it names that is gone. */
struct cdi_stale {
	char spec[PATH_MAX];
	char missing[PATH_MAX];
};

/*
 * Another producer's spec (read as cdi_find_other reads them, of any kind) that names a
 * path under INSTALL_DIR that no longer resolves: NVIDIA's tools resolve our links and
 * write .versions/ID/... paths, which a switch removes with the version (docs/design.md,
 * "Specs of others after a switch"). Fills RET. Returns 1 found, 0 none.
 */
int cdi_find_stale(int root_fd, const char *cdi_dir, const char *install_dir,
		   struct cdi_stale *ret);

/*
 * Moves another producer's spec at host path PATH aside (PATH + CDI_SET_ASIDE), and
 * records it (path and inode) in INSTALL_DIR for cdi_restore_set_aside. 0 or -1.
 */
_must_check_ int cdi_set_aside(int root_fd, const char *install_dir, const char *path,
			       struct err *e);

/*
 * Puts back what INSTALL_DIR's record says cdi_set_aside moved, where the file set
 * aside is still the one moved and its name is free, and drops the record. A spec of
 * ours found set aside (by a version that took it for another's) is removed; the
 * first other one set aside that stays goes to RET_LEFT ("" when none). 0 or -1.
 */
_must_check_ int cdi_restore_set_aside(int root_fd, const char *cdi_dir, const char *install_dir,
				       char *ret_left, size_t size, struct err *e);

/*
 * Writes CDI_DIR/CDI_FILE under root_fd atomically, only when it changes, and
 * removes a legacy spec of ours. Returns 1 when written, 0 when unchanged, -1.
 */
_must_check_ int cdi_write(int root_fd, const char *cdi_dir, const struct cdi_input *in,
			   struct err *e);

/* Removes our spec (and a legacy one of ours). Returns 0 or -1. */
_must_check_ int cdi_remove(int root_fd, const char *cdi_dir, const char *install_dir,
			    struct err *e);

/* The kind our spec in CDI_DIR declares, into RET. Returns 0, or -1 when there is none. */
int cdi_our_kind(int root_fd, const char *cdi_dir, char *ret, size_t size);

/* Where our spec lives, of what kind, and the rule for another producer's of that kind. */
struct cdi_rule {
	const char *dir;	 /* host path of our spec's directory (--cdi-dir) */
	const char *install_dir; /* host path */
	const char *kind;
	bool replace; /* --cdi-replace: theirs set aside; else theirs win, ours withdrawn */
};

/* What cdi_settle found and did. */
struct cdi_settled {
	char theirs[4200];    /* host path of the other producer's spec that stays, or "" */
	char set_aside[4200]; /* the last one set aside, or "" */
	unsigned n_set_aside;
	bool withdrew; /* ours was there, and is withdrawn */
	bool conflict; /* on error: ours and theirs both stay, and a runtime resolves neither */
};

/*
 * The rule for another producer's spec of R's kind (docs/design.md, "One producer per
 * kind"), applied at install and at each look of the agent: two specs that define
 * KIND=0 make a runtime drop the device for every container. Without R->replace theirs
 * win: ours is withdrawn. With it, each of theirs is set aside (cdi_set_aside). Fills
 * RET. Returns 1 when no spec of theirs stays (ours may stand), 0 when one does and ours
 * is withdrawn, -1 when the rule could not be applied (RET->conflict says whether both
 * stay).
 */
_must_check_ int cdi_settle(int root_fd, const struct cdi_rule *r, struct cdi_settled *ret,
			    struct err *e);
