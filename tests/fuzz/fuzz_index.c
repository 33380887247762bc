// SPDX-License-Identifier: Apache-2.0
/* libFuzzer: the repository index parser (what a signed index can make it do). */
#include <stddef.h>
#include <stdint.h>

#include "source/repo.h"
#include "stage/unpack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct repo_index *idx = NULL;
	struct gpu gpus[2] = {{.bdf = "0000:00:04.0", .vendor = 0x10de, .device = 0x2330},
			      {.bdf = "0000:00:05.0", .vendor = 0x10de, .device = 0x1db1}};
	struct host h = {.os_id = (char *)"cos",
			 .kernel = "6.1.0-57-amd64",
			 .arch = "x86_64",
			 .gpus = gpus,
			 .n_gpus = 2};
	struct repo_judgement j;
	struct err e;

	err_clear(&e);
	if (repo_index_parse((const char *)data, size, &idx, &e) < 0)
		return 0;
	/* What the parsed index feeds: its identity, version requests, unpack limits, choices. */
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
		/* The module flavour decision under each policy. */
		(void)repo_driver_judge(d, &h, REPO_KMT_AUTO, &j);
		(void)repo_driver_judge(d, &h, REPO_KMT_OPEN, &j);
		(void)repo_driver_judge(d, &h, REPO_KMT_PROPRIETARY, &j);
	}
	repo_index_free(idx);
	return 0;
}
