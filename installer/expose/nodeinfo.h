/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the rest of the cluster reads about the node: node-feature-discovery
 * labels (named as NVIDIA's GPU feature discovery names them), the readiness
 * marker the GPU Operator's components wait for, and a Prometheus textfile.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "expose/nvml.h"
#include "stage/stage.h"
#include "expose/timing.h"
#include "util/err.h"

/*
 * NFD reads features.d in file name order and a later file's value wins: ours sorts
 * before GPU feature discovery's "gfd", so that GFD's labels win where it runs.
 */
#define LABELS_FILE "/etc/kubernetes/node-feature-discovery/features.d/00-nvidia-driver"
#define READY_FILE "/run/nvidia/validations/driver-ready"
/*
 * An upgrade that waits (installer/stage/pending.h), in a labels file of its own so that the
 * driver's labels file stays untouched while the old driver serves.
 */
#define LABELS_PENDING_FILE                                                                        \
	"/etc/kubernetes/node-feature-discovery/features.d/00-nvidia-driver-pending"
#define PENDING_LABEL_KEY "nvidia.com/gpu.driver-installer.upgrade-pending"
#define PENDING_REASON_LABEL_KEY "nvidia.com/gpu.driver-installer.upgrade-pending-reason"
/* A pending version that failed and was withdrawn (struct pending_failure), in a file of its own. */
#define LABELS_PENDING_FAILED_FILE                                                                 \
	"/etc/kubernetes/node-feature-discovery/features.d/00-nvidia-driver-pending-failed"
#define PENDING_FAILED_LABEL_KEY "nvidia.com/gpu.driver-installer.upgrade-failed"

/*
 * Writes the pending-upgrade labels (VERSION waits for REASON, PENDING_DRIVER_IN_USE or
 * PENDING_MODULE_ARGS), or removes them when VERSION is NULL. Returns 0 or -1.
 */
_must_check_ int labels_pending_write(int root_fd, const char *version, const char *reason,
				      struct err *e);
/*
 * Writes the label of a pending version that failed (VERSION), or removes it when VERSION
 * is NULL. Returns 0 or -1.
 */
_must_check_ int labels_pending_failed_write(int root_fd, const char *version, struct err *e);

/*
 * The labels as "key=value" lines for the loaded driver D: from NVML when R is not NULL,
 * else what PCI and the version alone tell. D's module_type ("open", "proprietary") is
 * NULL when not known (no label then); its kernel is not read. Returns a malloc'd string
 * or NULL.
 */
char *labels_render(const struct driver_id *d, const struct nvml_report *r, size_t pci_gpus);

/*
 * Writes the labels file (only when it changes), and removes the one releases before
 * 00-nvidia-driver wrote. Returns 1 written, 0 unchanged, -1.
 */
_must_check_ int labels_write(int root_fd, const struct driver_id *d, const struct nvml_report *r,
			      size_t pci_gpus, struct err *e);

/*
 * Writes the readiness marker: what the GPU Operator's driver validator writes for our
 * layout (a host driver where a standard path has nvidia-smi, else the driver root
 * INSTALL_DIR), then our own keys. Returns 0 or -1.
 */
_must_check_ int readiness_write(int root_fd, const char *install_dir, const char *version,
				 struct err *e);

/* Removes the readiness marker and the labels files. Returns 0 or -1. */
_must_check_ int nodeinfo_remove(int root_fd, struct err *e);
/*
 * Removes the readiness marker and the driver's labels, not the pending-upgrade labels (the
 * record they show stays). Returns 0 or -1.
 */
_must_check_ int nodeinfo_remove_driver(int root_fd, struct err *e);
void readiness_remove(int root_fd);

/* How a metrics file of ours starts: hostpath.c replaces no file that starts otherwise. */
#define METRICS_MARK "# HELP nvidia_driver_installer_"

/* What the last install run did, for the metrics file. */
struct metrics_report {
	int exit_code;
	struct driver_id driver;       /* the driver the run wanted; a NULL field: not known */
	const char *index_fallback;    /* why the cached index served (or NULL) */
	const struct timing *times;    /* the stages that ran to their end, or NULL */
	const struct pending *pending; /* the upgrade that waits, or NULL */
	/* the pending version that failed and was withdrawn, or NULL */
	const struct pending_failure *failed;
};

/*
 * Writes a Prometheus textfile at PATH (a host path under root_fd) from R: success, exit
 * code, driver version, kernel and module flavour (no label without one), whether the
 * node's cached index served although the mirrors were asked (index_fallback:
 * source_fallback_name), the time of each stage, the upgrade that waits and its reason,
 * and the pending version that failed and was withdrawn. Returns 0 or -1.
 */
_must_check_ int metrics_write(int root_fd, const char *path, const struct metrics_report *r,
			       struct err *e);

/*
 * Writes TEXT to the host path PATH under ROOT_FD when it differs from what is there (a
 * new file, renamed into place). Returns 1 written, 0 unchanged, -1.
 */
_must_check_ int nodeinfo_write_file(int root_fd, const char *path, const char *text,
				     struct err *e);
/* IN as a Prometheus label value (backslash, quote and newline escaped) into OUT. */
const char *metrics_label_escape(const char *in, char *out, size_t size);
