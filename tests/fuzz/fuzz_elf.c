// SPDX-License-Identifier: Apache-2.0
/* libFuzzer: the ELF and program headers of a package's bin/ file (installer/stage/wrap.h). */
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/fs.h"
#include "stage/wrap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct err e;
	int fd = memfd_create("program", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	err_clear(&e);
	if (fs_write_all(fd, data, size) == 0 && wrap_elf_has_interp(fd, &e) > 1)
		__builtin_trap();
	close(fd);
	return 0;
}
