/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The index's kernel module flavours (docs/repository-format.md, "Module flavours"):
 * what repo.c's parser calls for packages[].module_type, drivers[].module_types and
 * drivers[].gpu_names, and the decision between the flavours for a host.
 */
#pragma once

#include <json-c/json.h>

#include "source/source.h"

/* Parses "vvvv:dddd" (hex, any case) into vendor << 16 | device. 0, or -1. */
int repo_parse_pci_id(const char *s, uint32_t *ret);

/* packages[].module_type: optional, "open" or "proprietary". 0, or -1 (EXIT_VERIFY). */
_must_check_ int repo_kmt_parse_package(json_object *o, const char *where, struct repo_package *p,
					struct err *e);

/* drivers[].module_types and drivers[].gpu_names: optional, strict. 0, or -1 (EXIT_VERIFY). */
_must_check_ int repo_kmt_parse_driver(json_object *o, const char *where, struct repo_driver *d,
				       struct err *e);

/*
 * The layout older installers rely on (rules 2 to 4): where a driver has both flavours,
 * each open package comes after, and is no more specific than, the proprietary package
 * of its kernel and arch, and "supported_pci_ids" is the proprietary list. 0, or -1
 * (EXIT_VERIFY) naming the package.
 */
_must_check_ int repo_kmt_check_layout(const struct repo_driver *d, const char *where,
				       struct err *e);

/* Frees what repo_kmt_parse_driver allocated in D. */
void repo_kmt_driver_done(struct repo_driver *d);

/* The name "gpu_names" gives GPU ID (vendor << 16 | device) in D, or NULL. */
const char *repo_gpu_name(const struct repo_driver *d, uint32_t id);

/*
 * The flavour a package of D for H would have to be, for a host that has none (repo_wanted):
 * the one POLICY names; under auto, the one repo_kmt_decide takes for H's GPUs were both
 * built (D's lists of the GPUs each supports decide), else the one D's packages state, else
 * proprietary (a driver that states none is judged as before flavours existed).
 */
enum repo_module_type repo_kmt_wanted(const struct repo_driver *d, const struct host *h,
				      enum repo_kmt_policy policy);
