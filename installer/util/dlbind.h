/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A table of function pointers bound by name from a dlopen()ed vendor library (NVML,
 * CUDA), whose headers the build does not need: the caller declares the slice of the ABI
 * it calls as a struct of pointers and lists each symbol with its offset in that struct.
 */
#pragma once

#include <stddef.h>

struct dlbind_sym {
	const char *name;
	size_t offset; /* offsetof() the pointer in the caller's table */
};

/*
 * Fills TABLE's pointer at each SYMS[i].offset with H's symbol of that name. Returns NULL,
 * or the first name H lacks (TABLE is then partly filled and must not be used).
 */
const char *dlbind(void *h, const struct dlbind_sym *syms, size_t n, void *table);
