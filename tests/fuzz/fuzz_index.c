// SPDX-License-Identifier: Apache-2.0
/* libFuzzer: the repository index parser (what a signed index can make it do). */
#include <stddef.h>
#include <stdint.h>

#include "repo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct repo_index *idx = NULL;
	struct err e;

	err_clear(&e);
	if (repo_index_parse((const char *)data, size, &idx, &e) == 0)
		repo_index_free(idx);
	return 0;
}
