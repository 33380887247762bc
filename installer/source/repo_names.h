/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The index's arrays of names (packages[].capabilities, packages[].gpudirect) as bits: one
 * rule for every such field (docs/repository-format.md, "How the format evolves", rules 1
 * and 3): a name this installer does not know is skipped and grants nothing; anything but
 * an array of strings refuses the index.
 */
#pragma once

#include <json-c/json.h>
#include <stddef.h>

#include "source/source.h"
#include "util/cleanup.h"
#include "util/err.h"

/* A field's known names: bit i stands for names[i] (n of them, at most 32). */
struct repo_name_set {
	const char *field;
	const char *const *names;
	size_t n;
};

/*
 * O's NAMES->field, an array of strings, as bits: bit i for each element equal to
 * NAMES->names[i], other strings skipped. Returns 1 with *RET_BITS set, 0 when the field is
 * absent (*RET_BITS untouched), or -1 (EXIT_VERIFY, "WHERE: "FIELD" must be an array of
 * strings") for another type.
 */
_must_check_ int repo_names_bits(json_object *o, const struct repo_name_set *names,
				 const char *where, unsigned *ret_bits, struct err *e);

/*
 * packages[].gpudirect: optional, an array of strings; "gdrcopy" and "gds" set
 * REPO_GPUDIRECT_GDRCOPY and REPO_GPUDIRECT_GDS in P, other names are skipped. 0, or -1
 * (EXIT_VERIFY) where it is not an array of strings.
 */
_must_check_ int repo_gpudirect_parse_package(json_object *o, const char *where,
					      struct repo_package *p, struct err *e);
