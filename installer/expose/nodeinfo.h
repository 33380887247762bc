/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the rest of the cluster reads about the node: node-feature-discovery
 * labels (named as NVIDIA's GPU feature discovery names them), the readiness
 * marker the GPU Operator's components wait for, and a Prometheus textfile.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "expose/expose.h" /* the face: what other folders call of this module */
#include "util/err.h"

/*
 * The labels as "key=value" lines for the loaded driver D: from NVML when R is not NULL,
 * else what PCI and the version alone tell. D's module_type ("open", "proprietary") is
 * NULL when not known (no label then); its kernel is not read. Returns a malloc'd string
 * or NULL.
 */
char *labels_render(const struct driver_id *d, const struct nvml_report *r, size_t pci_gpus);

/* Removes the readiness marker and the labels files. Returns 0 or -1. */
_must_check_ int nodeinfo_remove(int root_fd, struct err *e);
