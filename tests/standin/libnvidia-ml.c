// SPDX-License-Identifier: Apache-2.0
/*
 * A stand-in for NVIDIA's libnvidia-ml.so.1: the part of NVML the installer
 * calls, answered from the driver's /proc/driver/nvidia files as the stand-in
 * kernel modules (or the fake kernel, under $FAKE_KERNEL_ROOT) show them, so
 * that the same verification code runs against the fake kernel, the VM and a
 * real driver. $NVML_STANDIN_FAIL=init makes nvmlInit fail. The NVLink fabric
 * (nvmlDeviceGetGpuFabricInfo): not supported on a host without one, else completed once
 * trained, not started before (tests/standin/fabric.h).
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
	unsigned minor;
};

static struct standin_gpu gpus[16];
static unsigned n_gpus;
static char version[80];
static int initialised;

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

nvmlReturn_t nvmlInit_v2(void)
{
	char p[512], line[256], minor[16];
	const char *fail = getenv("NVML_STANDIN_FAIL");
	struct dirent *de;
	FILE *f;
	DIR *d;

	if (fail && strcmp(fail, "init") == 0)
		return DRIVER_NOT_LOADED;
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
	initialised = 0;
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

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major, int *minor)
{
	(void)d;
	*major = 9;
	*minor = 0;
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
