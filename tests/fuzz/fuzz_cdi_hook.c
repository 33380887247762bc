// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer: what the CDI hook reads of an image's libraries (installer/helpers/cdi-hook-elf.c,
 * a file of the static hook program, included whole): a library's soname (read_soname, for
 * update-ldcache's links) and NVIDIA's forward-compatibility note (read_fwd_note, for
 * enable-cuda-compat). A soname it returns is a plain file name, ended inside its buffer:
 * the link it names stays beside the library.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The hook is built with gcc, whose warnings it is clean of; clang warns of three more. */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wformat-nonliteral"
#pragma clang diagnostic ignored "-Wsign-conversion"
#pragma clang diagnostic ignored "-Wstring-plus-int"
#include "helpers/cdi-hook-elf.c"
#pragma clang diagnostic pop

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char soname[NAME_MAX + 1];
	int fd = memfd_create("library", MFD_CLOEXEC);
	size_t done = 0;

	if (fd < 0)
		return 0;
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);

		if (n <= 0)
			break;
		done += (size_t)n;
	}
	if (read_soname(fd, soname, sizeof(soname))) {
		size_t len = strnlen(soname, sizeof(soname));

		if (len == 0 || len == sizeof(soname) || strchr(soname, '/') ||
		    strcmp(soname, ".") == 0 || strcmp(soname, "..") == 0)
			__builtin_trap();
	}
	free(read_fwd_note(fd));
	close(fd);
	return 0;
}
