// SPDX-License-Identifier: Apache-2.0
/*
 * DCGM's NvSwitch module's library lookup, restated (no code of DCGM's): NVSDM first, then
 * NSCQ (NVIDIA/DCGM modules/nvswitch/DcgmModuleNvSwitch.cpp:26-47), each by its bare name,
 * so that glibc's loader searches LD_LIBRARY_PATH, the ld cache and its default directories
 * as it does for DCGM inside dcgm-exporter's container:
 *   dlopen("libnvsdm.so.1", RTLD_LAZY), then dlsym "nvsdmInitialize" and the call
 *     (sdk/nvidia/nvsdm/loader/nvsdm_loader.cpp:57,90,118,181; DcgmNvsdmManager.cpp:971-979);
 *   dlopen("libnvidia-nscq.so.2", RTLD_NOW), "libnvidia-nscq.so.%u" of NSCQ_API_VERSION's
 *     major 2, then dlsym "nscq_api_version" (sdk/nvidia/nscq/dlwrap/posix.c:63-77,
 *     dlwrap.c:51; nscq.h:53-54).
 * Prints one line per library: "nvsdm: loaded PATH" or "nvsdm: not loaded: dlerror()", and
 * "nvswitch: nvsdm|nscq|none", the manager DCGM would keep. Exits 0 when one is loaded, 1
 * when neither (DCGM then logs "Could not load NVSDM" and "Could not load NSCQ"), 2 on usage.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

static int load(const char *what, const char *name, int mode, const char *sym)
{
	void *h = dlopen(name, mode);
	struct link_map *lm = NULL;
	int (*init)(void);

	if (!h) {
		printf("%s: not loaded: %s\n", what, dlerror());
		return 0;
	}
	if (!dlsym(h, sym)) {
		printf("%s: no %s in %s\n", what, sym, name);
		return 0;
	}
	if (strcmp(what, "nvsdm") == 0) {
		init = (int (*)(void))dlsym(h, sym);
		if (init() != 0) {
			printf("%s: %s failed\n", what, sym);
			return 0;
		}
	}
	dlinfo(h, RTLD_DI_LINKMAP, &lm);
	printf("%s: loaded %s\n", what, lm ? lm->l_name : name);
	return 1;
}

int main(int argc, char **argv)
{
	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "usage: dcgm-load (no arguments; LD_LIBRARY_PATH as the consumer's)\n");
		return 2;
	}
	if (load("nvsdm", "libnvsdm.so.1", RTLD_LAZY, "nvsdmInitialize")) {
		printf("nvswitch: nvsdm\n");
		return 0;
	}
	if (load("nscq", "libnvidia-nscq.so.2", RTLD_NOW, "nscq_api_version")) {
		printf("nvswitch: nscq\n");
		return 0;
	}
	printf("nvswitch: none\n");
	return 1;
}
