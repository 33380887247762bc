/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The index's packages[].gpudirect (docs/repository-format.md): what repo.c's parser calls
 * for it.
 */
#pragma once

#include <json-c/json.h>

#include "source/source.h"

/*
 * packages[].gpudirect: optional, an array of strings; "gdrcopy" and "gds" set
 * REPO_GPUDIRECT_GDRCOPY and REPO_GPUDIRECT_GDS in P, other names are skipped. 0, or -1
 * (EXIT_VERIFY) where it is not an array of strings.
 */
_must_check_ int repo_gpudirect_parse_package(json_object *o, const char *where,
					      struct repo_package *p, struct err *e);
