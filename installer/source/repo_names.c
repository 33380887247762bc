// SPDX-License-Identifier: Apache-2.0
/* The index's arrays of names as bits (repo_names.h), and packages[].gpudirect by them. */
#include <string.h>

#include "source/repo_names.h"

int repo_names_bits(json_object *o, const struct repo_name_set *names, const char *where,
		    unsigned *ret_bits, struct err *e)
{
	json_object *v;
	unsigned bits = 0;

	if (!json_object_object_get_ex(o, names->field, &v))
		return 0;
	if (!json_object_is_type(v, json_type_array))
		return err_set(e, EXIT_VERIFY, "%s: \"%s\" must be an array of strings", where,
			       names->field);
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		json_object *s = json_object_array_get_idx(v, i);

		if (!json_object_is_type(s, json_type_string))
			return err_set(e, EXIT_VERIFY, "%s: \"%s\" must be an array of strings",
				       where, names->field);
		for (size_t j = 0; j < names->n && j < 32; j++) {
			if (strcmp(json_object_get_string(s), names->names[j]) == 0)
				bits |= 1u << j;
		}
	}
	*ret_bits = bits;
	return 1;
}

/*
 * "gpudirect": an array of strings, optional (docs/repository-format.md): "gdrcopy" and
 * "gds", the GPUDirect modules the package carries, bits 0 and 1 as REPO_GPUDIRECT_*.
 */
int repo_gpudirect_parse_package(json_object *o, const char *where, struct repo_package *p,
				 struct err *e)
{
	static const char *const gpudirect_names[] = {"gdrcopy", "gds"};
	static const struct repo_name_set field = {"gpudirect", gpudirect_names,
						   ARRAY_SIZE(gpudirect_names)};
	unsigned bits = 0;

	_Static_assert(REPO_GPUDIRECT_GDRCOPY == 1u << 0 && REPO_GPUDIRECT_GDS == 1u << 1,
		       "gpudirect_names is in REPO_GPUDIRECT_* bit order");
	if (repo_names_bits(o, &field, where, &bits, e) < 0)
		return -1;
	p->gpudirect |= bits;
	return 0;
}
