// SPDX-License-Identifier: Apache-2.0
/* libFuzzer: GKE's /etc/nvidia/gpu_config.json as doctor reads it (expose/mig.h), and the
 * size it asks for judged against each GPU model the table knows. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "expose/mig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint16_t devices[] = {0x20b0, 0x20b2, 0x2330, 0x2335, 0x2901, 0x2941, 0x27b8};
	char *buf = malloc(size + 1);
	struct mig_request r;
	struct err e;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	err_clear(&e);
	/* Parsed or refused, both are answers; a crash is not. */
	if (mig_parse_gke_config(buf, size, &r, &e) == 0) {
		for (size_t i = 0; i < sizeof(devices) / sizeof(devices[0]); i++) {
			const struct mig_size *s;

			err_clear(&e);
			if (mig_size_for_gpu(&r, 0x10de, devices[i], &s, &e) == 0 && s &&
			    (s->count == 0 || s->count > 7))
				abort();
		}
	}
	free(buf);
	return 0;
}
