// SPDX-License-Identifier: Apache-2.0
/* libFuzzer: driver versions and requests: validity, ordering (antisymmetric), matching. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "source/repo.h"
#include "source/version.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *b;
	int ab, ba;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	/* Two strings: before and after the first newline. */
	b = strchr(buf, '\n');
	b = b ? (*b = '\0', b + 1) : buf;
	version_is_valid(buf);
	repo_request_is_valid(buf);
	if (version_is_valid(buf) && version_is_valid(b)) {
		ab = version_compare(buf, b);
		ba = version_compare(b, buf);
		if ((ab > 0) - (ab < 0) != -((ba > 0) - (ba < 0)))
			abort(); /* an order must be antisymmetric */
		version_matches(buf, b);
	}
	free(buf);
	return 0;
}
