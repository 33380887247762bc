// SPDX-License-Identifier: Apache-2.0
/*
 * A stand-in for NVIDIA's libcuda.so.1: the part of the CUDA driver API the installer's
 * readiness check calls (installer/expose/cuda.c), answered as the NVML stand-in does
 * from /proc/driver/nvidia (under $FAKE_KERNEL_ROOT when set), with the behaviour that
 * matters on NVSwitch systems: while the host has an NVLink fabric that is not trained
 * (tests/standin/fabric.h), cuInit returns 802, CUDA_ERROR_SYSTEM_NOT_READY, as the real
 * library does until Fabric Manager has trained it.
 *
 * Devices are enumerated as CUDA enumerates them beside MIG (NVIDIA's MIG user guide, "CUDA
 * Device Enumeration"), from the MIG state the NVML stand-in keeps (mig.h): a GPU in MIG
 * mode is no CUDA device, and a process sees at most one MIG device, the first that
 * CUDA_VISIBLE_DEVICES names by its MIG-<uuid>, or without that variable the node's first;
 * where no device is left (every GPU in MIG mode and no instance yet), cuInit returns
 * CUDA_ERROR_NO_DEVICE. CUDA_VISIBLE_DEVICES is a comma-separated list of GPU-<uuid>,
 * MIG-<uuid> or ordinals (among the devices seen without it); the list ends at the first
 * entry that names no device, as CUDA's does, and set but empty it hides every device.
 * $CUDA_STANDIN_FAIL=init makes cuInit fail (999), =ctx:N the context on device N, and
 * =ctx:UUID the context on the device with that UUID (GPU-... or MIG-...).
 * Error names and texts are CUDA's (cuda.h, cuGetErrorName / cuGetErrorString).
 */
#include "fabric.h"
#include "mig.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;

enum { SUCCESS = 0, INVALID_VALUE = 1, NOT_INITIALIZED = 3, NO_DEVICE = 100,
       INVALID_DEVICE = 101, SYSTEM_NOT_READY = 802, UNKNOWN = 999 };

CUresult cuInit(unsigned flags);
CUresult cuDriverGetVersion(int *v);
CUresult cuDeviceGetCount(int *n);
CUresult cuDeviceGet(CUdevice *d, int ordinal);
CUresult cuDeviceGetPCIBusId(char *bus, int len, CUdevice d);
CUresult cuCtxCreate_v2(CUcontext *c, unsigned flags, CUdevice d);
CUresult cuCtxDestroy_v2(CUcontext c);
CUresult cuGetErrorName(CUresult r, const char **s);
CUresult cuGetErrorString(CUresult r, const char **s);

#ifndef STANDIN_VERSION
#error "build with -DSTANDIN_VERSION='\"535.261.03\"' (scripts/make-standin-driver does)"
#endif

/* Which stand-in this is: tests/tools/plugin-view.c prints it to tell versions apart. */
const char *cuDriverGetVersion_version(void);
const char *cuDriverGetVersion_version(void)
{
	return STANDIN_VERSION;
}

#define MAX_GPUS 16
#define MAX_DEVS (MAX_GPUS * STANDIN_MIG_MAX)

/* A device CUDA can enumerate: a GPU outside MIG mode, or one MIG device. */
struct dev {
	char bdf[32], uuid[96];
	int is_mig;
};

static struct dev devs[MAX_GPUS + 1]; /* this process's devices, by ordinal */
static int n_devices, initialised, driver_major;
static int contexts[MAX_GPUS + 1];

static int cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Entries of directory REL (not . and ..), into OUT (up to MAX_GPUS). */
static int entries(const char *rel, char (*out)[32])
{
	char p[512];
	struct dirent *de;
	int n = 0;
	DIR *d;

	standin_path(p, sizeof(p), rel);
	d = opendir(p);
	while (d && (de = readdir(d)) && n < MAX_GPUS) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(out[n], sizeof(out[n]), "%s", de->d_name);
		n++;
	}
	if (d)
		closedir(d);
	return n;
}

/*
 * Every device CUDA could enumerate, by PCI address: each GPU outside MIG mode, and the MIG
 * devices of those in MIG mode, in NVML's order. Returns how many, into ALL.
 */
static int all_devices(struct dev *all)
{
	char bdfs[MAX_GPUS][32], minor[16];
	int n_gpus = entries("proc/driver/nvidia/gpus", bdfs), n = 0;

	qsort(bdfs, (size_t)n_gpus, sizeof(bdfs[0]), cmp);
	for (int i = 0; i < n_gpus; i++) {
		struct standin_mig_dev migs[STANDIN_MIG_MAX];
		char uuid[96];
		unsigned mode, k = standin_mig_read(bdfs[i], &mode, migs, STANDIN_MIG_MAX);

		standin_info_field(bdfs[i], "GPU UUID", uuid, sizeof(uuid));
		standin_info_field(bdfs[i], "Device Minor", minor, sizeof(minor));
		if (!mode) {
			all[n] = (struct dev){.is_mig = 0};
			snprintf(all[n].bdf, sizeof(all[n].bdf), "%s", bdfs[i]);
			snprintf(all[n].uuid, sizeof(all[n].uuid), "%s", uuid);
			n++;
			continue;
		}
		for (unsigned j = 0; j < k; j++, n++) {
			all[n] = (struct dev){.is_mig = 1};
			snprintf(all[n].bdf, sizeof(all[n].bdf), "%s", bdfs[i]);
			standin_mig_uuid(all[n].uuid, sizeof(all[n].uuid), uuid,
					 (unsigned)atoi(minor), migs[j].gi, migs[j].ci);
		}
	}
	return n;
}

/* Adds ALL[I] to this process's devices, unless it is there or a second MIG device. */
static void add_device(const struct dev *all, int i)
{
	for (int j = 0; j < n_devices; j++)
		if (strcmp(devs[j].uuid, all[i].uuid) == 0 || (all[i].is_mig && devs[j].is_mig))
			return;
	if (n_devices <= MAX_GPUS)
		devs[n_devices++] = all[i];
}

/* The devices this process sees, of the N in ALL, as CUDA_VISIBLE_DEVICES says. */
static void visible_devices(const struct dev *all, int n)
{
	const char *env = getenv("CUDA_VISIBLE_DEVICES");
	char list[4096], *save = NULL;

	n_devices = 0;
	if (!env) {
		for (int i = 0; i < n; i++)
			add_device(all, i);
		return;
	}
	snprintf(list, sizeof(list), "%s", env);
	for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *end;
		long ord = strtol(t, &end, 10);
		int found = -1;

		for (int i = 0; i < n && found < 0; i++)
			if (strcmp(all[i].uuid, t) == 0)
				found = i;
		/* An ordinal counts the devices seen without the variable: one MIG device. */
		for (int i = 0, seen = 0, mig = 0; found < 0 && *t && !*end && i < n; i++) {
			if (all[i].is_mig && mig++)
				continue;
			if (seen++ == ord)
				found = i;
		}
		if (found < 0)
			break;
		add_device(all, found);
	}
}

CUresult cuInit(unsigned flags)
{
	const char *fail = getenv("CUDA_STANDIN_FAIL");
	static struct dev all[MAX_DEVS];
	char p[512], line[256];
	FILE *f;

	if (flags != 0)
		return INVALID_VALUE;
	if (fail && strcmp(fail, "init") == 0)
		return UNKNOWN;
	standin_path(p, sizeof(p), "proc/driver/nvidia/version");
	f = fopen(p, "r");
	if (!f)
		return NO_DEVICE;
	if (!fgets(line, sizeof(line), f) ||
	    sscanf(line, "NVRM version: NVIDIA UNIX %*s Kernel Module %d", &driver_major) != 1) {
		fclose(f);
		return UNKNOWN;
	}
	fclose(f);
	if (standin_has_fabric() && !standin_fabric_trained())
		return SYSTEM_NOT_READY;
	visible_devices(all, all_devices(all));
	if (n_devices == 0)
		return NO_DEVICE;
	initialised = 1;
	return SUCCESS;
}

CUresult cuDriverGetVersion(int *v)
{
	if (!v)
		return INVALID_VALUE;
	*v = driver_major >= 550 ? 12040 : 12020; /* what 550 and 535 report */
	return SUCCESS;
}

CUresult cuDeviceGetCount(int *n)
{
	if (!initialised)
		return NOT_INITIALIZED;
	*n = n_devices;
	return SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
	if (!initialised)
		return NOT_INITIALIZED;
	if (ordinal < 0 || ordinal >= n_devices)
		return INVALID_DEVICE;
	*d = ordinal;
	return SUCCESS;
}

/* As CUDA writes it: upper-case hex ("0000:3B:00.0"). */
CUresult cuDeviceGetPCIBusId(char *bus, int len, CUdevice d)
{
	if (!initialised)
		return NOT_INITIALIZED;
	if (d < 0 || d >= n_devices)
		return INVALID_DEVICE;
	if (len < 13)
		return INVALID_VALUE;
	snprintf(bus, (size_t)len, "%s", devs[d].bdf);
	for (char *c = bus; *c; c++)
		if (*c >= 'a' && *c <= 'f')
			*c = (char)(*c - 'a' + 'A');
	return SUCCESS;
}

CUresult cuCtxCreate_v2(CUcontext *c, unsigned flags, CUdevice d)
{
	const char *fail = getenv("CUDA_STANDIN_FAIL");
	int bad;

	(void)flags;
	if (!initialised)
		return NOT_INITIALIZED;
	if (d < 0 || d >= n_devices)
		return INVALID_DEVICE;
	if (fail && ((sscanf(fail, "ctx:%d", &bad) == 1 && bad == d) ||
		     (strncmp(fail, "ctx:", 4) == 0 && strcmp(fail + 4, devs[d].uuid) == 0)))
		return UNKNOWN;
	contexts[d]++;
	*c = &contexts[d];
	return SUCCESS;
}

CUresult cuCtxDestroy_v2(CUcontext c)
{
	int *n = c;

	if (!n || n < contexts || n >= contexts + MAX_GPUS + 1 || *n == 0)
		return INVALID_VALUE;
	(*n)--;
	return SUCCESS;
}

static const struct {
	CUresult r;
	const char *name, *text;
} errors[] = {
	{SUCCESS, "CUDA_SUCCESS", "no error"},
	{INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	{NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	{NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	{INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	{SYSTEM_NOT_READY, "CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized"},
	{UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult lookup(CUresult r, const char **s, int text)
{
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
		if (errors[i].r == r) {
			*s = text ? errors[i].text : errors[i].name;
			return SUCCESS;
		}
	}
	*s = NULL;
	return INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult r, const char **s)
{
	return lookup(r, s, 0);
}

CUresult cuGetErrorString(CUresult r, const char **s)
{
	return lookup(r, s, 1);
}
