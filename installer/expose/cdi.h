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

#include "expose/expose.h" /* the face: what other folders call of this module */
#include "util/err.h"

/* What versions before this one wrote: removed when its content proves it ours. */
#define CDI_LEGACY_FILE "nvidia.json"
#define CDI_MAX_GPUS 16

/* A GPU's DRM nodes: a primary (card) and a render node, a third for any other kind. */
#define CDI_MAX_DRM 4

struct cdi_gpu {
	unsigned index; /* NVML's: the device's name */
	unsigned minor;
	char uuid[96];
	/* With graphics: its /dev/dri/cardN and renderDN (cdi_drm_nodes); n_drm of them. */
	char drm[CDI_MAX_DRM][32];
	unsigned n_drm;
};

/*
 * The DRM nodes of the GPU whose /dev/nvidiaMINOR the driver made, as
 * nvidia-container-toolkit finds them for graphics (internal/discover/graphics.go:399-452,
 * internal/info/drm/drm_devices.go:24-38): its PCI address from the driver's
 * /proc/driver/nvidia/gpus/BDF/information ("Device Minor"), then each card* and renderD*
 * entry of /sys/bus/pci/devices/BDF/drm/ whose /dev/dri/NAME is a character device, all
 * under ROOT_FD. Fills G->drm and G->n_drm (none when the driver or the node lacks them).
 */
void cdi_drm_nodes(int root_fd, struct cdi_gpu *g);

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
	/* /dev paths every device needs: nvidiactl, nvidia-uvm, nvidia-uvm-tools, nvidia-modeset */
	const char *shared_nodes[32];
	/*
	 * GDRCopy's and GPUDirect Storage's nodes (/dev/gdrdrv; /dev/nvidia-fsN), each set a
	 * device of its own ("gdrcopy", "gds") asked for beside a GPU, as nvidia-container-
	 * toolkit gives them only on NVIDIA_GDRCOPY/NVIDIA_GDS=enabled; none: no such device.
	 */
	const char *gdrcopy_nodes[1];
	size_t n_gdrcopy;
	const char *gds_nodes[16];
	size_t n_gds;
	const char *mps_pipe_dir; /* MPS's pipe directory (host path), mounted alike; NULL */
	size_t n_shared;
	unsigned config_files; /* bit i: cdi_graphics_files[i] is in the install dir, mounted */
};

/*
 * Graphics' files for the loaders: where the package keeps each (under the install dir)
 * and where the loaders in a container read it, as nvidia-container-toolkit mounts them
 * (internal/discover/graphics.go at d34b304: Vulkan's at /etc, 116-138; EGL's and
 * OptiX's at /usr/share, 82-99). NULL-terminated; docs/design.md, "Video and graphics".
 */
struct cdi_config_file {
	const char *package_path;
	const char *container_path;
};
extern const struct cdi_config_file cdi_graphics_files[];

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
 * Moves another producer's spec at host path PATH (under P's root) aside (PATH +
 * CDI_SET_ASIDE), and records it (path and inode) in P's install_dir for
 * cdi_restore_set_aside. 0 or -1.
 */
_must_check_ int cdi_set_aside(const struct cdi_place *p, const char *path, struct err *e);

/*
 * Puts back what the record in P's install_dir says cdi_set_aside moved, where the file
 * set aside is still the one moved and its name is free, and drops the record. A spec of
 * ours found set aside (by a version that took it for another's) is removed; the
 * first other one set aside that stays goes to RET_LEFT ("" when none). 0 or -1.
 */
_must_check_ int cdi_restore_set_aside(const struct cdi_place *p, char *ret_left, size_t size,
				       struct err *e);

/*
 * Writes P's cdi_dir/CDI_FILE under its root atomically, only when it changes, and
 * removes a legacy spec of ours (one that mounts from P's install_dir). IN's install_dir
 * must be P's (else -1, EXIT_UNEXPECTED). Returns 1 when written, 0 when unchanged, -1.
 */
_must_check_ int cdi_write(const struct cdi_place *p, const struct cdi_input *in, struct err *e);

/* Removes our spec at P (and a legacy one of ours). Returns 0 or -1. */
_must_check_ int cdi_remove(const struct cdi_place *p, struct err *e);
