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
#include "mig.h"

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

static int by_minor(const void *a, const void *b)
{
	const struct standin_gpu *ga = a, *gb = b;

	return (int)ga->minor - (int)gb->minor;
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

		if (de->d_name[0] == '.')
			continue;
		snprintf(g->bdf, sizeof(g->bdf), "%s", de->d_name);
		standin_info_field(g->bdf, "Model", g->name, sizeof(g->name));
		standin_info_field(g->bdf, "GPU UUID", g->uuid, sizeof(g->uuid));
		standin_info_field(g->bdf, "Device Minor", minor, sizeof(minor));
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

/* The MiB a GPU (or MIG device) has: its MIG model's, else an H100 80GB HBM3's. */
static unsigned long long memory_mib(nvmlDevice_t d);

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
	m->total = memory_mib(d) << 20;
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

/* ---- MIG ---------------------------------------------------------------------------- */
/*
 * Multi-Instance GPU on the models of tests/integration (H100 80GB, H200, A100 40GB), by
 * nvml.h's interface: MIG mode (current and pending), GPU instances of the profiles a model
 * has (nvmlDeviceGetGpuInstanceProfileInfo by NVML_GPU_INSTANCE_PROFILE_* index, created by
 * the profile's id), compute instances, and the MIG devices they make. The profile table is
 * NVIDIA's (the MIG user guide's tables and `nvidia-smi mig -lgip` on an H100 80GB: ids,
 * counts, slices, SMs, engines); memory sizes are those nvidia-smi prints, rounded to MiB.
 *
 * State lives beside the stand-in kernel's files, so that each process sees the last one's
 * work as a driver would: proc/driver/nvidia/gpus/BDF/standin-mig ("mode CURRENT PENDING",
 * "gi ID PROFILE_ID", "ci GI_ID CI_ID CI_PROFILE_ID" lines; a file of the stand-ins only),
 * and each instance's capability file, as nv-caps.c makes them (capabilities/gpuMINOR/mig/
 * giN/access and .../ciK/access, minors by the driver's mig-minors numbering: 3 + 135 per
 * GPU + 9 per GPU instance + 1 + the compute instance). $NVML_STANDIN_MIG=reset-required
 * makes a mode change wait for a GPU reset (NVML_ERROR_RESET_REQUIRED as the activation
 * status), as in a pass-through VM.
 */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

enum { NOT_SUPPORTED = 3, NOT_FOUND = 6, RESET_REQUIRED = 16, IN_USE = 19,
       INSUFFICIENT_RESOURCES = 23, INVALID_STATE = 29 };

typedef struct {
	unsigned id, isP2pSupported, sliceCount, instanceCount, multiprocessorCount,
		copyEngineCount, decoderCount, encoderCount, jpegCount, ofaCount;
	unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;

typedef struct {
	unsigned id, sliceCount, instanceCount, multiprocessorCount, sharedCopyEngineCount,
		sharedDecoderCount, sharedEncoderCount, sharedJpegCount, sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

typedef struct {
	unsigned multiprocessorCount, sharedCopyEngineCount, sharedDecoderCount,
		sharedEncoderCount, sharedJpegCount, sharedOfaCount, gpuInstanceSliceCount,
		computeInstanceSliceCount;
	unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

struct mig_profile {
	unsigned index, id, slices, mem_slices, count, sms, ce, dec, jpeg, ofa;
	unsigned long long mem_mb;
};

struct mig_model_tab {
	unsigned device_id;
	unsigned long long total_mb;
	const struct mig_profile *p;
	size_t n;
};

/*
 * Index (NVML_GPU_INSTANCE_PROFILE_*), id, slices, memory slices, count,
 * SMs, CE, NVDEC, JPEG, OFA.
 */
static const struct mig_profile h100[] = {
	{0, 19, 1, 1, 7, 16, 1, 1, 1, 0, 9984},	   {7, 20, 1, 1, 1, 16, 1, 1, 1, 1, 9984},
	{9, 15, 1, 2, 4, 26, 1, 1, 1, 0, 20096},   {1, 14, 2, 2, 3, 32, 2, 2, 2, 0, 20096},
	{2, 9, 3, 4, 2, 60, 3, 3, 3, 0, 40448},	   {3, 5, 4, 4, 1, 64, 4, 4, 4, 0, 40448},
	{4, 0, 7, 8, 1, 132, 8, 7, 7, 1, 81152},
};
static const struct mig_profile h200[] = {
	{0, 19, 1, 1, 7, 16, 1, 1, 1, 0, 16384},   {7, 20, 1, 1, 1, 16, 1, 1, 1, 1, 16384},
	{9, 15, 1, 2, 4, 26, 1, 1, 1, 0, 32768},   {1, 14, 2, 2, 3, 32, 2, 2, 2, 0, 32768},
	{2, 9, 3, 4, 2, 60, 3, 3, 3, 0, 65536},	   {3, 5, 4, 4, 1, 64, 4, 4, 4, 0, 65536},
	{4, 0, 7, 8, 1, 132, 8, 7, 7, 1, 130560},
};
static const struct mig_profile a100[] = {
	{0, 19, 1, 1, 7, 14, 1, 0, 0, 0, 4864},	   {7, 20, 1, 1, 1, 14, 1, 1, 1, 1, 4864},
	{9, 15, 1, 2, 4, 14, 1, 1, 0, 0, 9856},	   {1, 14, 2, 2, 3, 28, 2, 1, 0, 0, 9856},
	{2, 9, 3, 4, 2, 42, 3, 2, 0, 0, 19968},	   {3, 5, 4, 4, 1, 56, 4, 2, 0, 0, 19968},
	{4, 0, 7, 8, 1, 98, 7, 5, 1, 1, 40192},
};
static const struct mig_model_tab mig_models[] = {
	{0x2330, 81559, h100, sizeof(h100) / sizeof(h100[0])},
	{0x2335, 143771, h200, sizeof(h200) / sizeof(h200[0])},
	{0x20b0, 40536, a100, sizeof(a100) / sizeof(a100[0])},
};

#define MAX_GI 8
#define MAX_CI 8

struct standin_ci {
	int used;
	unsigned id, profile_id, slices;
	struct standin_gi *gi;
};

struct standin_gi {
	int used;
	unsigned id;
	const struct mig_profile *p;
	struct standin_gpu *gpu;
	struct standin_ci ci[MAX_CI];
};

struct standin_mig {
	int loaded;
	unsigned mode, pending;
	struct standin_gi gi[MAX_GI];
};

/* Each GPU's MIG state, gpus[] order; MIG device handles are standin_gpu entries too. */
static struct standin_mig migs[16];
static struct standin_gpu mig_devs[16 * MAX_GI];
static struct {
	struct standin_gpu *parent;
	struct standin_gi *gi;
	struct standin_ci *ci;
} mig_dev_of[16 * MAX_GI];

typedef struct standin_gi *nvmlGpuInstance_t;
typedef struct standin_ci *nvmlComputeInstance_t;
typedef struct {
	unsigned start, size;
} nvmlGpuInstancePlacement_t;
typedef struct {
	nvmlDevice_t device;
	unsigned id, profileId;
	nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

static const struct mig_model_tab *mig_model(nvmlDevice_t d)
{
	for (size_t i = 0; i < sizeof(mig_models) / sizeof(mig_models[0]); i++)
		if (mig_models[i].device_id == d->pci_id >> 16)
			return &mig_models[i];
	return NULL;
}

static int is_mig_dev(nvmlDevice_t d)
{
	return d >= mig_devs && d < mig_devs + sizeof(mig_devs) / sizeof(mig_devs[0]);
}

static struct standin_mig *mig_of(nvmlDevice_t d)
{
	return &migs[d - gpus];
}

static void mig_state_path(nvmlDevice_t d, char *p, size_t size)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "proc/driver/nvidia/gpus/%s/standin-mig", d->bdf);
	standin_path(p, size, rel);
}

static const struct mig_profile *profile_by_id(nvmlDevice_t d, unsigned id)
{
	const struct mig_model_tab *m = mig_model(d);

	for (size_t i = 0; m && i < m->n; i++)
		if (m->p[i].id == id)
			return &m->p[i];
	return NULL;
}

/* The capability file of a GPU instance (CI < 0) or compute instance, made or removed. */
static void cap_file(const struct standin_gi *gi, int ci, int make)
{
	char rel[160], p[512], file[600];
	unsigned minor = 3 + 135 * gi->gpu->minor + 9 * gi->id + (ci < 0 ? 0 : 1 + (unsigned)ci);
	FILE *f;

	if (ci < 0)
		snprintf(rel, sizeof(rel), "proc/driver/nvidia/capabilities/gpu%u/mig/gi%u",
			 gi->gpu->minor, gi->id);
	else
		snprintf(rel, sizeof(rel), "proc/driver/nvidia/capabilities/gpu%u/mig/gi%u/ci%d",
			 gi->gpu->minor, gi->id, ci);
	standin_path(p, sizeof(p), rel);
	snprintf(file, sizeof(file), "%s/access", p);
	if (!make) {
		unlink(file);
		rmdir(p);
		return;
	}
	for (char *s = p + 1; *s; s++) {
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	}
	mkdir(p, 0755);
	f = fopen(file, "w");
	if (f) {
		fprintf(f, "DeviceFileMinor: %u\nDeviceFileMode: 292\nDeviceFileModify: 1\n", minor);
		fclose(f);
	}
}

static void mig_load(nvmlDevice_t d)
{
	struct standin_mig *m = mig_of(d);
	char p[512], line[128];
	unsigned a, b, c;
	FILE *f;

	if (m->loaded)
		return;
	memset(m, 0, sizeof(*m));
	m->loaded = 1;
	mig_state_path(d, p, sizeof(p));
	f = fopen(p, "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "mode %u %u", &a, &b) == 2) {
			m->mode = a;
			m->pending = b;
		} else if (sscanf(line, "gi %u %u", &a, &b) == 2 && a < MAX_GI) {
			m->gi[a].used = 1;
			m->gi[a].id = a;
			m->gi[a].p = profile_by_id(d, b);
			m->gi[a].gpu = d;
		} else if (sscanf(line, "ci %u %u %u", &a, &b, &c) == 3 && a < MAX_GI && b < MAX_CI) {
			struct standin_ci *ci = &m->gi[a].ci[b];

			ci->used = 1;
			ci->id = b;
			ci->profile_id = c;
			ci->slices = c == 4 ? 7 : c + 1;
			ci->gi = &m->gi[a];
		}
	}
	if (f)
		fclose(f);
}

static void mig_save(nvmlDevice_t d)
{
	struct standin_mig *m = mig_of(d);
	char p[512];
	FILE *f;

	mig_state_path(d, p, sizeof(p));
	f = fopen(p, "w");
	if (!f)
		return;
	fprintf(f, "mode %u %u\n", m->mode, m->pending);
	for (unsigned i = 0; i < MAX_GI; i++) {
		if (!m->gi[i].used)
			continue;
		fprintf(f, "gi %u %u\n", i, m->gi[i].p->id);
		for (unsigned j = 0; j < MAX_CI; j++)
			if (m->gi[i].ci[j].used)
				fprintf(f, "ci %u %u %u\n", i, j, m->gi[i].ci[j].profile_id);
	}
	fclose(f);
}

/* A GPU handle of this process that can hold MIG state: NOT_SUPPORTED, INVALID_ARGUMENT or OK. */
static nvmlReturn_t mig_gpu(nvmlDevice_t d)
{
	NEED_INIT();
	if (!d || is_mig_dev(d) || d < gpus || d >= gpus + n_gpus)
		return INVALID_ARGUMENT;
	if (!mig_model(d))
		return NOT_SUPPORTED;
	mig_load(d);
	return OK;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned *current, unsigned *pending);
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned *current, unsigned *pending)
{
	nvmlReturn_t r = mig_gpu(d);

	if (r != OK)
		return r;
	*current = mig_of(d)->mode;
	*pending = mig_of(d)->pending;
	return OK;
}

nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t d, unsigned mode, nvmlReturn_t *status);
nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t d, unsigned mode, nvmlReturn_t *status)
{
	const char *how = getenv("NVML_STANDIN_MIG");
	nvmlReturn_t r = mig_gpu(d);
	struct standin_mig *m;

	if (r != OK)
		return r;
	if (mode > 1 || !status)
		return INVALID_ARGUMENT;
	m = mig_of(d);
	for (unsigned i = 0; i < MAX_GI; i++)
		if (m->gi[i].used)
			return IN_USE; /* instances first */
	m->pending = mode;
	if (how && strcmp(how, "reset-required") == 0 && m->mode != mode) {
		*status = RESET_REQUIRED;
	} else {
		m->mode = mode;
		*status = OK;
	}
	mig_save(d);
	return OK;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t d, unsigned index,
						 nvmlGpuInstanceProfileInfo_t *info);
nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t d, unsigned index,
						 nvmlGpuInstanceProfileInfo_t *info)
{
	const struct mig_model_tab *t;
	nvmlReturn_t r = mig_gpu(d);

	if (r != OK)
		return r;
	if (!info)
		return INVALID_ARGUMENT;
	if (!mig_of(d)->mode)
		return NOT_SUPPORTED; /* only in MIG mode */
	t = mig_model(d);
	for (size_t i = 0; i < t->n; i++) {
		const struct mig_profile *p = &t->p[i];

		if (p->index != index)
			continue;
		*info = (nvmlGpuInstanceProfileInfo_t){
			.id = p->id, .isP2pSupported = 0, .sliceCount = p->slices,
			.instanceCount = p->count, .multiprocessorCount = p->sms,
			.copyEngineCount = p->ce, .decoderCount = p->dec, .encoderCount = 0,
			.jpegCount = p->jpeg, .ofaCount = p->ofa, .memorySizeMB = p->mem_mb};
		return OK;
	}
	return index < 17 ? NOT_SUPPORTED : INVALID_ARGUMENT;
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t d, unsigned profile_id,
				       nvmlGpuInstance_t *out, unsigned *count);
nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t d, unsigned profile_id,
				       nvmlGpuInstance_t *out, unsigned *count)
{
	nvmlReturn_t r = mig_gpu(d);
	struct standin_mig *m;
	unsigned n = 0;

	if (r != OK)
		return r;
	if (!count || !profile_by_id(d, profile_id))
		return INVALID_ARGUMENT;
	m = mig_of(d);
	if (!m->mode)
		return NOT_SUPPORTED;
	for (unsigned i = 0; i < MAX_GI; i++)
		if (m->gi[i].used && m->gi[i].p->id == profile_id && out)
			out[n++] = &m->gi[i];
	*count = n;
	return OK;
}

nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t d, unsigned profile_id,
					 nvmlGpuInstance_t *out);
nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t d, unsigned profile_id,
					 nvmlGpuInstance_t *out)
{
	const struct mig_profile *p;
	nvmlReturn_t r = mig_gpu(d);
	struct standin_mig *m;
	unsigned slices = 0, mem = 0, same = 0, id;

	if (r != OK)
		return r;
	p = profile_by_id(d, profile_id);
	if (!p || !out)
		return INVALID_ARGUMENT;
	m = mig_of(d);
	if (!m->mode)
		return NOT_SUPPORTED;
	for (unsigned i = 0; i < MAX_GI; i++) {
		if (!m->gi[i].used)
			continue;
		slices += m->gi[i].p->slices;
		mem += m->gi[i].p->mem_slices;
		same += m->gi[i].p->id == profile_id;
	}
	if (same >= p->count || slices + p->slices > 7 || mem + p->mem_slices > 8)
		return INSUFFICIENT_RESOURCES;
	for (id = 1; id < MAX_GI && m->gi[id].used; id++)
		;
	if (id >= MAX_GI)
		return INSUFFICIENT_RESOURCES;
	memset(&m->gi[id], 0, sizeof(m->gi[id]));
	m->gi[id] = (struct standin_gi){.used = 1, .id = id, .p = p, .gpu = d};
	cap_file(&m->gi[id], -1, 1);
	mig_save(d);
	*out = &m->gi[id];
	return OK;
}

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gi);
nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gi)
{
	NEED_INIT();
	if (!gi || !gi->used)
		return INVALID_ARGUMENT;
	for (unsigned j = 0; j < MAX_CI; j++)
		if (gi->ci[j].used)
			return IN_USE;
	cap_file(gi, -1, 0);
	gi->used = 0;
	mig_save(gi->gpu);
	return OK;
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gi, nvmlGpuInstanceInfo_t *info);
nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gi, nvmlGpuInstanceInfo_t *info)
{
	NEED_INIT();
	if (!gi || !gi->used || !info)
		return INVALID_ARGUMENT;
	*info = (nvmlGpuInstanceInfo_t){.device = gi->gpu, .id = gi->id, .profileId = gi->p->id,
					.placement = {0, gi->p->slices}};
	return OK;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t d, unsigned id, nvmlGpuInstance_t *out);
nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t d, unsigned id, nvmlGpuInstance_t *out)
{
	nvmlReturn_t r = mig_gpu(d);

	if (r != OK)
		return r;
	if (!out || id >= MAX_GI || !mig_of(d)->gi[id].used)
		return NOT_FOUND;
	*out = &mig_of(d)->gi[id];
	return OK;
}

/* NVML_COMPUTE_INSTANCE_PROFILE_* index: its slice count (1, 2, 3, 4, 7, 8, 6, 1 REV1). */
static unsigned ci_slices_of(unsigned index)
{
	static const unsigned slices[] = {1, 2, 3, 4, 7, 8, 6};

	return index < 7 ? slices[index] : 0;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gi, unsigned index,
							  unsigned eng,
							  nvmlComputeInstanceProfileInfo_t *info);
nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gi, unsigned index,
							  unsigned eng,
							  nvmlComputeInstanceProfileInfo_t *info)
{
	unsigned s = ci_slices_of(index);

	NEED_INIT();
	if (!gi || !gi->used || !info || eng != 0)
		return INVALID_ARGUMENT;
	if (!s || s > gi->p->slices || gi->p->slices % s)
		return NOT_SUPPORTED;
	*info = (nvmlComputeInstanceProfileInfo_t){
		.id = index, .sliceCount = s, .instanceCount = gi->p->slices / s,
		.multiprocessorCount = gi->p->sms * s / gi->p->slices,
		.sharedCopyEngineCount = gi->p->ce, .sharedDecoderCount = gi->p->dec,
		.sharedEncoderCount = 0, .sharedJpegCount = gi->p->jpeg,
		.sharedOfaCount = gi->p->ofa};
	return OK;
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gi, unsigned profile_id,
						  nvmlComputeInstance_t *out);
nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gi, unsigned profile_id,
						  nvmlComputeInstance_t *out)
{
	unsigned s = ci_slices_of(profile_id), used = 0, id;

	NEED_INIT();
	if (!gi || !gi->used || !out || !s || s > gi->p->slices)
		return INVALID_ARGUMENT;
	for (unsigned j = 0; j < MAX_CI; j++)
		used += gi->ci[j].used ? gi->ci[j].slices : 0;
	if (used + s > gi->p->slices)
		return INSUFFICIENT_RESOURCES;
	for (id = 0; id < MAX_CI && gi->ci[id].used; id++)
		;
	gi->ci[id] = (struct standin_ci){.used = 1, .id = id, .profile_id = profile_id,
					 .slices = s, .gi = gi};
	cap_file(gi, (int)id, 1);
	mig_save(gi->gpu);
	*out = &gi->ci[id];
	return OK;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gi, unsigned profile_id,
						nvmlComputeInstance_t *out, unsigned *count);
nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gi, unsigned profile_id,
						nvmlComputeInstance_t *out, unsigned *count)
{
	unsigned n = 0;

	NEED_INIT();
	if (!gi || !gi->used || !count)
		return INVALID_ARGUMENT;
	for (unsigned j = 0; j < MAX_CI; j++)
		if (gi->ci[j].used && gi->ci[j].profile_id == profile_id && out)
			out[n++] = &gi->ci[j];
	*count = n;
	return OK;
}

nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t ci);
nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t ci)
{
	NEED_INIT();
	if (!ci || !ci->used)
		return INVALID_ARGUMENT;
	cap_file(ci->gi, (int)ci->id, 0);
	ci->used = 0;
	mig_save(ci->gi->gpu);
	return OK;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned *count);
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned *count)
{
	nvmlReturn_t r = mig_gpu(d);

	if (r != OK)
		return r;
	*count = 7;
	return OK;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned index,
						 nvmlDevice_t *out);
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned index,
						 nvmlDevice_t *out)
{
	nvmlReturn_t r = mig_gpu(d);
	struct standin_mig *m;
	unsigned n = 0;

	if (r != OK)
		return r;
	m = mig_of(d);
	if (!m->mode)
		return NOT_SUPPORTED;
	for (unsigned i = 0; i < MAX_GI; i++) {
		for (unsigned j = 0; m->gi[i].used && j < MAX_CI; j++) {
			size_t slot = (size_t)(d - gpus) * MAX_GI + n;
			struct standin_gpu *g = &mig_devs[slot];

			if (!m->gi[i].ci[j].used)
				continue;
			if (n++ != index)
				continue;
			*g = *d;
			/* The UUID the CUDA stand-in gives the same device (mig.h). */
			standin_mig_uuid(g->uuid, sizeof(g->uuid), d->uuid, d->minor, i, j);
			/* go-nvlib's rounding: eighths of the GPU, of its memory in whole GiB. */
			unsigned long long eighths =
				(mig_model(d)->total_mb / 1024 + 1) * m->gi[i].p->mem_slices;

			snprintf(g->name, sizeof(g->name), "%.60s MIG %ug.%llugb", d->name,
				 m->gi[i].p->slices, eighths / 8 + (eighths % 8 >= 4));
			mig_dev_of[slot].parent = d;
			mig_dev_of[slot].gi = &m->gi[i];
			mig_dev_of[slot].ci = &m->gi[i].ci[j];
			*out = g;
			return OK;
		}
	}
	return INVALID_ARGUMENT;
}

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t d, unsigned *is);
nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t d, unsigned *is)
{
	NEED_INIT();
	*is = (unsigned)is_mig_dev(d);
	return OK;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned *id);
nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned *id)
{
	NEED_INIT();
	if (!is_mig_dev(d))
		return NOT_SUPPORTED;
	*id = mig_dev_of[d - mig_devs].gi->id;
	return OK;
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t d, unsigned *id);
nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t d, unsigned *id)
{
	NEED_INIT();
	if (!is_mig_dev(d))
		return NOT_SUPPORTED;
	*id = mig_dev_of[d - mig_devs].ci->id;
	return OK;
}

nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t d, nvmlDeviceAttributes_t *a);
nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t d, nvmlDeviceAttributes_t *a)
{
	const struct standin_gi *gi;
	const struct standin_ci *ci;

	NEED_INIT();
	if (!is_mig_dev(d))
		return NOT_SUPPORTED;
	gi = mig_dev_of[d - mig_devs].gi;
	ci = mig_dev_of[d - mig_devs].ci;
	*a = (nvmlDeviceAttributes_t){
		.multiprocessorCount = gi->p->sms * ci->slices / gi->p->slices,
		.sharedCopyEngineCount = gi->p->ce, .sharedDecoderCount = gi->p->dec,
		.sharedEncoderCount = 0, .sharedJpegCount = gi->p->jpeg,
		.sharedOfaCount = gi->p->ofa, .gpuInstanceSliceCount = gi->p->slices,
		.computeInstanceSliceCount = ci->slices, .memorySizeMB = gi->p->mem_mb};
	return OK;
}

static unsigned long long memory_mib(nvmlDevice_t d)
{
	const struct mig_model_tab *t;

	if (is_mig_dev(d))
		return mig_dev_of[d - mig_devs].gi->p->mem_mb;
	t = mig_model(d);
	return t ? t->total_mb : 81559;
}
