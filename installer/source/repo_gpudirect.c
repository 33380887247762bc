// SPDX-License-Identifier: Apache-2.0
/* The index's packages[].gpudirect: the GPUDirect modules a package carries. */
#include <string.h>

#include "source/repo_gpudirect.h"

/*
 * "gpudirect": an array of strings, optional (docs/repository-format.md): "gdrcopy" and
 * "gds", the GPUDirect modules the package carries. A name this installer does not know is
 * skipped (a newer build-driver-package may add one); anything but an array of strings
 * refuses the index.
 */
int repo_gpudirect_parse_package(json_object *o, const char *where, struct repo_package *p,
				 struct err *e)
{
	json_object *v;
	size_t n;

	if (!json_object_object_get_ex(o, "gpudirect", &v))
		return 0;
	if (!json_object_is_type(v, json_type_array))
		return err_set(e, EXIT_VERIFY, "%s: \"gpudirect\" must be an array of strings",
			       where);
	n = json_object_array_length(v);
	for (size_t i = 0; i < n; i++) {
		json_object *s = json_object_array_get_idx(v, i);
		const char *name;

		if (!json_object_is_type(s, json_type_string))
			return err_set(e, EXIT_VERIFY,
				       "%s: \"gpudirect\" must be an array of strings", where);
		name = json_object_get_string(s);
		if (strcmp(name, "gdrcopy") == 0)
			p->gpudirect |= REPO_GPUDIRECT_GDRCOPY;
		else if (strcmp(name, "gds") == 0)
			p->gpudirect |= REPO_GPUDIRECT_GDS;
	}
	return 0;
}
