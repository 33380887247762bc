// SPDX-License-Identifier: Apache-2.0
/*
 * A stand-in for NVIDIA's libnvidia-ml.so.1: the part of NVML the installer
 * calls, answered from the driver's /proc/driver/nvidia files as the stand-in
 * kernel modules (or the fake kernel, under $FAKE_KERNEL_ROOT) show them, so
 * that the same verification code runs against the fake kernel, the VM and a
 * real driver. $NVML_STANDIN_FAIL=init makes nvmlInit fail. The NVLink fabric
 * (nvmlDeviceGetGpuFabricInfo): not supported on a host without one, else completed once
 * trained, not started before (tests/standin/fabric.h).
 *
 * Where NVIDIA's consumers rely on NVML's behaviour, it behaves as NVML does (nvml.h, as
 * go-nvml vendors it): nvmlInit is reference-counted (each nvmlInit needs its
 * nvmlShutdown; the last one shuts down, one more is NVML_ERROR_UNINITIALIZED), as
 * go-nvlib's HasNvml (an init/shutdown pair before the plugin's own) needs; PCI info
 * (nvmlDeviceGetPciInfo_v3: bus id in both formats, the device and vendor ids and the
 * subsystem id from sysfs), the architecture and the compute capability by the GPU's PCI
 * device id, and the brand (NVML_BRAND_NVIDIA, what datacenter GPUs report).
 */
#include "fabric.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct standin_gpu *nvmlDevice_t;
typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

enum { OK = 0, UNINITIALIZED = 1, INVALID_ARGUMENT = 2, INSUFFICIENT_SIZE = 7,
       DRIVER_NOT_LOADED = 9, UNKNOWN = 999 };

struct standin_gpu {
	char bdf[32], name[96], uuid[96];
	unsigned minor, domain, bus, dev, pci_id, subsys_id;
};

/* nvmlPciInfo_t. */
typedef struct {
	char busIdLegacy[16];
	unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

/* NVML_DEVICE_ARCH_* and the compute capability of the GPUs the tests name. */
static const struct {
	unsigned device_id, arch;
	int major, minor;
} archs[] = {
	{0x1eb8, 6, 7, 5},  /* T4: Turing */
	{0x20b0, 7, 8, 0},  /* A100 SXM4 40GB: Ampere */
	{0x20b5, 7, 8, 0},  /* A100 80GB PCIe */
	{0x27b8, 8, 8, 9},  /* L4: Ada */
	{0x2330, 9, 9, 0},  /* H100 SXM5 80GB: Hopper */
	{0x2331, 9, 9, 0},  /* H100 PCIe */
	{0x2335, 9, 9, 0},  /* H200 */
	{0x2901, 10, 10, 0}, /* B200: Blackwell */
};
#define ARCH_HOPPER 9
#define BRAND_NVIDIA 14

static struct standin_gpu gpus[16];
static unsigned n_gpus;
static char version[80];
static int initialised; /* nvmlInit calls not yet shut down */

nvmlReturn_t nvmlInit_v2(void);

/* nvmlGpuFabricInfo_t of 535's nvml.h. */
typedef struct {
	char clusterUuid[16];
	nvmlReturn_t status;
	unsigned int partitionId;
	unsigned char state;
} nvmlGpuFabricInfo_t;
nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t d, nvmlGpuFabricInfo_t *info);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t r);
nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned len);
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned len);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned len);
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned *minor);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m);
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major, int *minor);
nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t d, unsigned *arch);
nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t d, int *brand);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci);
nvmlReturn_t nvmlInit(void);
nvmlReturn_t nvmlInitWithFlags(unsigned flags);

/* "Key: \t value" from an information file. */
static void field(const char *file, const char *key, char *out, size_t size)
{
	char line[256];
	FILE *f = fopen(file, "r");
	size_t kl = strlen(key);

	out[0] = '\0';
	while (f && fgets(line, sizeof(line), f)) {
		char *v;

		if (strncmp(line, key, kl) != 0 || line[kl] != ':')
			continue;
		for (v = line + kl + 1; *v == ' ' || *v == '\t'; v++)
			;
		v[strcspn(v, "\n")] = '\0';
		snprintf(out, size, "%s", v);
	}
	if (f)
		fclose(f);
}

static int by_minor(const void *a, const void *b)
{
	return (int)((const struct standin_gpu *)a)->minor - (int)((const struct standin_gpu *)b)->minor;
}

/* A hex number from the sysfs file sys/bus/pci/devices/BDF/NAME, 0 without one. */
static unsigned sysfs_hex(const char *bdf, const char *name)
{
	char rel[128], p[512];
	unsigned v = 0;
	FILE *f;

	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/%s", bdf, name);
	standin_path(p, sizeof(p), rel);
	f = fopen(p, "r");
	if (f && fscanf(f, "%x", &v) != 1)
		v = 0;
	if (f)
		fclose(f);
	return v;
}

static void pci_ids(struct standin_gpu *g)
{
	unsigned fn;

	if (sscanf(g->bdf, "%x:%x:%x.%x", &g->domain, &g->bus, &g->dev, &fn) != 4)
		g->domain = g->bus = g->dev = 0;
	g->pci_id = sysfs_hex(g->bdf, "device") << 16 | (sysfs_hex(g->bdf, "vendor") ?: 0x10de);
	g->subsys_id = sysfs_hex(g->bdf, "subsystem_device") << 16 |
		       sysfs_hex(g->bdf, "subsystem_vendor");
}

nvmlReturn_t nvmlInit(void)
{
	return nvmlInit_v2();
}

nvmlReturn_t nvmlInitWithFlags(unsigned flags)
{
	(void)flags;
	return nvmlInit_v2();
}

nvmlReturn_t nvmlInit_v2(void)
{
	char p[512], line[256], minor[16];
	const char *fail = getenv("NVML_STANDIN_FAIL");
	struct dirent *de;
	FILE *f;
	DIR *d;

	if (fail && strcmp(fail, "init") == 0)
		return DRIVER_NOT_LOADED;
	if (initialised) {
		initialised++;
		return OK;
	}
	standin_path(p, sizeof(p), "proc/driver/nvidia/version");
	f = fopen(p, "r");
	if (!f)
		return DRIVER_NOT_LOADED;
	if (!fgets(line, sizeof(line), f) ||
	    sscanf(line, "NVRM version: NVIDIA UNIX %*s Kernel Module %79s", version) != 1) {
		fclose(f);
		return UNKNOWN;
	}
	fclose(f);
	n_gpus = 0;
	standin_path(p, sizeof(p), "proc/driver/nvidia/gpus");
	d = opendir(p);
	while (d && (de = readdir(d)) && n_gpus < 16) {
		struct standin_gpu *g = &gpus[n_gpus];
		char info[512];

		if (de->d_name[0] == '.')
			continue;
		snprintf(info, sizeof(info), "%s/%s/information", p, de->d_name);
		snprintf(g->bdf, sizeof(g->bdf), "%s", de->d_name);
		field(info, "Model", g->name, sizeof(g->name));
		field(info, "GPU UUID", g->uuid, sizeof(g->uuid));
		field(info, "Device Minor", minor, sizeof(minor));
		g->minor = (unsigned)atoi(minor);
		pci_ids(g);
		n_gpus++;
	}
	if (d)
		closedir(d);
	qsort(gpus, n_gpus, sizeof(gpus[0]), by_minor);
	initialised = 1;
	return OK;
}

nvmlReturn_t nvmlShutdown(void)
{
	if (!initialised)
		return UNINITIALIZED;
	initialised--;
	return OK;
}

const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case OK:
		return "Success";
	case DRIVER_NOT_LOADED:
		return "Driver Not Loaded";
	case UNINITIALIZED:
		return "Uninitialized";
	case INSUFFICIENT_SIZE:
		return "Insufficient Size";
	default:
		return "Unknown Error";
	}
}

#define NEED_INIT()                           \
	do {                                  \
		if (!initialised)             \
			return UNINITIALIZED; \
	} while (0)

nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned len)
{
	NEED_INIT();
	if (strlen(version) + 1 > len)
		return INSUFFICIENT_SIZE;
	strcpy(v, version);
	return OK;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v)
{
	NEED_INIT();
	*v = atoi(version) >= 550 ? 12040 : 12020; /* what 550 and 535 report */
	return OK;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count)
{
	NEED_INIT();
	*count = n_gpus;
	return OK;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d)
{
	NEED_INIT();
	if (i >= n_gpus)
		return INVALID_ARGUMENT;
	*d = &gpus[i];
	return OK;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned len)
{
	snprintf(name, len, "%s", d->name);
	return OK;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned len)
{
	snprintf(uuid, len, "%s", d->uuid);
	return OK;
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned *minor)
{
	*minor = d->minor;
	return OK;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
	(void)d;
	m->total = 81559ull << 20; /* an H100 80GB HBM3 */
	m->used = 0;
	m->free = m->total;
	return OK;
}

static int arch_of(nvmlDevice_t d)
{
	for (size_t i = 0; i < sizeof(archs) / sizeof(archs[0]); i++)
		if (archs[i].device_id == d->pci_id >> 16)
			return (int)i;
	return -1;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major, int *minor)
{
	int a;

	NEED_INIT();
	a = arch_of(d);
	*major = a < 0 ? 9 : archs[a].major;
	*minor = a < 0 ? 0 : archs[a].minor;
	return OK;
}

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t d, unsigned *arch)
{
	int a;

	NEED_INIT();
	a = arch_of(d);
	*arch = a < 0 ? ARCH_HOPPER : archs[a].arch;
	return OK;
}

nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t d, int *brand)
{
	(void)d;
	NEED_INIT();
	*brand = BRAND_NVIDIA;
	return OK;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci)
{
	NEED_INIT();
	if (!pci)
		return INVALID_ARGUMENT;
	memset(pci, 0, sizeof(*pci));
	snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.0", d->domain & 0xffff,
		 d->bus, d->dev);
	snprintf(pci->busId, sizeof(pci->busId), "%08X:%02X:%02X.0", d->domain, d->bus, d->dev);
	pci->domain = d->domain;
	pci->bus = d->bus;
	pci->device = d->dev;
	pci->pciDeviceId = d->pci_id;
	pci->pciSubSystemId = d->subsys_id;
	return OK;
}

nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t d, nvmlGpuFabricInfo_t *info)
{
	if (!initialised)
		return UNINITIALIZED;
	if (!d || !info)
		return INVALID_ARGUMENT;
	memset(info, 0, sizeof(*info));
	if (!standin_has_fabric())
		return 3; /* NVML_ERROR_NOT_SUPPORTED */
	info->state = standin_fabric_trained() ? 3 : 1;
	return OK;
}
