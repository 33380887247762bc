// SPDX-License-Identifier: Apache-2.0
#include <dlfcn.h>
#include <string.h>

#include "util/dlbind.h"

const char *dlbind(void *h, const struct dlbind_sym *syms, size_t n, void *table)
{
	for (size_t i = 0; i < n; i++) {
		void *f = dlsym(h, syms[i].name);

		if (!f)
			return syms[i].name;
		/* POSIX guarantees a function pointer survives the trip through void *. */
		memcpy((char *)table + syms[i].offset, &f, sizeof(f));
	}
	return NULL;
}
