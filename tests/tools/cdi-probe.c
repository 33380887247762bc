// SPDX-License-Identifier: Apache-2.0
/*
 * The workload of t_cdi_podman: prints its LD_LIBRARY_PATH, then dlopen()s each
 * library named on the command line as a CUDA program would, by soname.
 * Exits 1 when one is not found.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
	int bad = 0;
	const char *ld = getenv("LD_LIBRARY_PATH");
	printf("LD_LIBRARY_PATH=%s\n", ld ? ld : "(unset)");
	for (int i = 1; i < argc; i++) {
		void *h = dlopen(argv[i], RTLD_NOW);
		printf("dlopen %s: %s\n", argv[i], h ? "ok" : dlerror());
		bad |= !h;
	}
	return bad;
}
