/* SPDX-License-Identifier: Apache-2.0 */
/* The index's packages[].capabilities: what repo.c's parser calls (docs/repository-format.md). */
#pragma once

#include <json-c/json.h>

#include "source/source.h"

/* packages[].capabilities: optional, capability words; absent is compute and utility. 0, or
 * -1 (EXIT_VERIFY). */
_must_check_ int repo_caps_parse_package(json_object *o, const char *where, struct repo_package *p,
					 struct err *e);
