// SPDX-License-Identifier: Apache-2.0
/* libFuzzer: /etc/os-release as the host probe reads it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/probe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1);
	struct host h;
	struct err e;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	memset(&h, 0, sizeof(h));
	err_clear(&e);
	/* Parsed or refused, both are answers; a crash is not. */
	if (host_parse_os_release(buf, &h, &e) < 0)
		err_clear(&e);
	host_done(&h);
	free(buf);
	return 0;
}
