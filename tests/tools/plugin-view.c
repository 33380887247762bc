// SPDX-License-Identifier: Apache-2.0
/*
 * What a device plugin finds of the driver, run inside a stand-in of its container
 * (t_manifest_pending): the NVML library it would load, the version NVML reports, and the
 * device nodes it would hand to GPU containers. Our own program, doing what the plugins'
 * sources do (cited in t_manifest_pending.sh), never their code:
 *
 *   plugin-view gke            libnvidia-ml.so.1 by name, through LD_LIBRARY_PATH
 *   plugin-view nvidia ROOT    libnvidia-ml.so.1 looked up under the driver root ROOT in
 *                              NVIDIA's plugin's list of directories, symlinks resolved,
 *                              loaded by that path
 *
 * Prints one "key value" line each: library (the loaded file, links resolved), nvml (the
 * driver version NVML reports), cuda (the version libcuda.so.1 beside it was built as),
 * then "node PATH ok|missing" for /dev/nvidiactl, /dev/nvidia-uvm and each GPU's
 * /dev/nvidiaMINOR, and "devnodes N": the entries of /dev that GKE's plugin counts as GPUs
 * (^nvidia[0-9]*$, not directories), which it restarts on when they outnumber NVML's.
 * With nvidia, also what the plugin and go-nvlib ask of NVML (the stand-in must answer as
 * NVML does, tests/standin/libnvidia-ml.c): an nvmlInit/nvmlShutdown pair first (go-nvlib's
 * HasNvml), then per GPU "gpu INDEX BUSID pci 0xDEVVEND arch N cc M.m brand B"
 * (nvmlDeviceGetPciInfo_v3, GetArchitecture, GetCudaComputeCapability, GetBrand), and at
 * the end "shutdown OK-STATUS AGAIN-STATUS": the last nvmlShutdown, then one too many.
 * Exits 1 when the library cannot be loaded or NVML fails.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef int (*init_fn)(void);
typedef int (*version_fn)(char *, unsigned);
typedef int (*count_fn)(unsigned *);
typedef int (*handle_fn)(unsigned, void **);
typedef int (*minor_fn)(void *, unsigned *);
typedef const char *(*cuda_fn)(void);
typedef int (*shutdown_fn)(void);
typedef int (*uint_fn)(void *, unsigned *);
typedef int (*int_fn)(void *, int *);
typedef int (*cc_fn)(void *, int *, int *);
typedef struct {
	char busIdLegacy[16];
	unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} pci_info;
typedef int (*pci_fn)(void *, pci_info *);

static void node(const char *path)
{
	struct stat st;

	printf("node %s %s\n", path,
	       stat(path, &st) == 0 && S_ISCHR(st.st_mode) ? "ok" : "missing");
}

/* GKE's plugin, discoverNumGPUs: /dev entries named nvidia followed by digits only. */
static unsigned count_gpu_nodes(void)
{
	DIR *d = opendir("/dev");
	struct dirent *de;
	unsigned n = 0;

	while (d && (de = readdir(d))) {
		const char *s = de->d_name;

		if (strncmp(s, "nvidia", 6) != 0 || de->d_type == DT_DIR)
			continue;
		for (s += 6; *s >= '0' && *s <= '9'; s++)
			;
		n += *s == '\0';
	}
	if (d)
		closedir(d);
	return n;
}

/* NVIDIA's plugin: the first of its directories under ROOT that holds NAME, resolved. */
static int resolve_under(const char *root, const char *name, char *out)
{
	static const char *const dirs[] = {
		"/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
		"/lib64",     "/lib/x86_64-linux-gnu",	   "/lib/aarch64-linux-gnu"};
	char p[PATH_MAX];

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s%s/%s", root, dirs[i], name);
		if (realpath(p, out))
			return 0;
	}
	return -1;
}

int main(int argc, char **argv)
{
	char nvml_path[PATH_MAX] = "libnvidia-ml.so.1", cuda_path[PATH_MAX] = "libcuda.so.1";
	char real[PATH_MAX], version[96];
	struct link_map *lm = NULL;
	unsigned n = 0;
	void *h, *cuda;
	bool nvidia;

	if (argc == 3 && strcmp(argv[1], "nvidia") == 0) {
		if (resolve_under(argv[2], "libnvidia-ml.so.1", nvml_path) < 0 ||
		    resolve_under(argv[2], "libcuda.so.1", cuda_path) < 0) {
			printf("library none under %s\n", argv[2]);
			return 1;
		}
	} else if (argc != 2 || strcmp(argv[1], "gke") != 0) {
		fprintf(stderr, "usage: plugin-view gke | plugin-view nvidia DRIVER_ROOT\n");
		return 2;
	}
	h = dlopen(nvml_path, RTLD_LAZY | RTLD_GLOBAL);
	if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !realpath(lm->l_name, real)) {
		printf("library none (%s)\n", dlerror());
		return 1;
	}
	printf("library %s\n", real);
	nvidia = strcmp(argv[1], "nvidia") == 0;
	/* go-nvlib's HasNvml: an init and its shutdown, before the plugin's own init. */
	if (nvidia && (((init_fn)dlsym(h, "nvmlInit_v2"))() != 0 ||
		       ((shutdown_fn)dlsym(h, "nvmlShutdown"))() != 0)) {
		printf("nvml none (HasNvml)\n");
		return 1;
	}
	if (((init_fn)dlsym(h, "nvmlInit_v2"))() != 0 ||
	    ((version_fn)dlsym(h, "nvmlSystemGetDriverVersion"))(version, sizeof(version)) != 0) {
		printf("nvml none\n");
		return 1;
	}
	printf("nvml %s\n", version);
	cuda = dlopen(cuda_path, RTLD_NOW);
	printf("cuda %s\n", cuda ? ((cuda_fn)dlsym(cuda, "cuDriverGetVersion_version"))() : "none");
	node("/dev/nvidiactl");
	node("/dev/nvidia-uvm");
	if (((count_fn)dlsym(h, "nvmlDeviceGetCount_v2"))(&n) != 0)
		return 1;
	for (unsigned i = 0; i < n; i++) {
		void *dev;
		unsigned minor;
		char p[64];

		if (((handle_fn)dlsym(h, "nvmlDeviceGetHandleByIndex_v2"))(i, &dev) != 0 ||
		    ((minor_fn)dlsym(h, "nvmlDeviceGetMinorNumber"))(dev, &minor) != 0)
			return 1;
		snprintf(p, sizeof(p), "/dev/nvidia%u", minor);
		node(p);
		if (nvidia) {
			pci_info pci;
			unsigned arch;
			int major, cminor, brand;

			if (((pci_fn)dlsym(h, "nvmlDeviceGetPciInfo_v3"))(dev, &pci) != 0 ||
			    ((uint_fn)dlsym(h, "nvmlDeviceGetArchitecture"))(dev, &arch) != 0 ||
			    ((cc_fn)dlsym(h, "nvmlDeviceGetCudaComputeCapability"))(dev, &major,
										    &cminor) != 0 ||
			    ((int_fn)dlsym(h, "nvmlDeviceGetBrand"))(dev, &brand) != 0)
				return 1;
			printf("gpu %u %s pci 0x%08x arch %u cc %d.%d brand %d\n", i, pci.busId,
			       pci.pciDeviceId, arch, major, cminor, brand);
		}
	}
	printf("devnodes %u\n", count_gpu_nodes());
	if (nvidia) {
		int last = ((shutdown_fn)dlsym(h, "nvmlShutdown"))();

		printf("shutdown %d %d\n", last, ((shutdown_fn)dlsym(h, "nvmlShutdown"))());
	}
	return 0;
}
