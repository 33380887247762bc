// SPDX-License-Identifier: Apache-2.0
/* libFuzzer: a kernel module's appended signature, trailer and PKCS#7 (CMS) structure. */
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernel/modsig.h"
#include "util/fs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct modsig_result r;
	struct err e;
	int fd = memfd_create("module", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	err_clear(&e);
	if (fs_write_all(fd, data, size) == 0)
		/* Any verdict is an answer; a crash is not. */
		if (modsig_check_fd(fd, NULL, &r, &e) < 0)
			err_clear(&e);
	close(fd);
	return 0;
}
