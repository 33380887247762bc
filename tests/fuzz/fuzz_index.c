// SPDX-License-Identifier: Apache-2.0
/* libFuzzer: the repository index parser (what a signed index can make it do). */
#include <stddef.h>
#include <stdint.h>

#include "repo.h"
#include "unpack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct repo_index *idx = NULL;
	struct err e;

	err_clear(&e);
	if (repo_index_parse((const char *)data, size, &idx, &e) < 0)
		return 0;
	/* What the parsed index feeds: its identity, version requests, unpack limits. */
	{
		char ident[REPO_IDENTITY_SIZE];

		repo_index_identity(idx, "0123456789abcdef", ident, sizeof(ident));
	}
	for (size_t i = 0; i < idx->n_drivers; i++) {
		const struct repo_driver *d = &idx->drivers[i];

		(void)repo_driver_wanted(idx, d, idx->drivers[0].version);
		(void)repo_driver_wanted(idx, d, "550");
		for (size_t p = 0; p < d->n_pkgs; p++)
			(void)unpack_limit_for(d->pkgs[p].size, d->pkgs[p].unpacked_size);
	}
	repo_index_free(idx);
	return 0;
}
