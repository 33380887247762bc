// SPDX-License-Identifier: Apache-2.0
/*
 * A stand-in for NVIDIA's libcuda.so.1: the part of the CUDA driver API the installer's
 * readiness check calls (installer/expose/cuda.c), answered as the NVML stand-in does
 * from /proc/driver/nvidia (under $FAKE_KERNEL_ROOT when set), with the behaviour that
 * matters on NVSwitch systems: while the host has an NVLink fabric that is not trained
 * (tests/standin/fabric.h), cuInit returns 802, CUDA_ERROR_SYSTEM_NOT_READY, as the real
 * library does until Fabric Manager has trained it.
 * $CUDA_STANDIN_FAIL=init makes cuInit fail (999), =ctx:N the context on device N.
 * Error names and texts are CUDA's (cuda.h, cuGetErrorName / cuGetErrorString).
 */
#include "fabric.h"

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

static char bdfs[16][32];
static int n_devices, initialised, driver_major;
static int contexts[16];

static int cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Entries of directory REL (not . and ..), into OUT (up to 16) when given. */
static int entries(const char *rel, char (*out)[32])
{
	char p[512];
	struct dirent *de;
	int n = 0;
	DIR *d;

	standin_path(p, sizeof(p), rel);
	d = opendir(p);
	while (d && (de = readdir(d)) && n < 16) {
		if (de->d_name[0] == '.')
			continue;
		if (out)
			snprintf(out[n], sizeof(out[n]), "%s", de->d_name);
		n++;
	}
	if (d)
		closedir(d);
	return n;
}

CUresult cuInit(unsigned flags)
{
	const char *fail = getenv("CUDA_STANDIN_FAIL");
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
	n_devices = entries("proc/driver/nvidia/gpus", bdfs);
	qsort(bdfs, (size_t)n_devices, sizeof(bdfs[0]), cmp);
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
	snprintf(bus, (size_t)len, "%s", bdfs[d]);
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
	if (fail && sscanf(fail, "ctx:%d", &bad) == 1 && bad == d)
		return UNKNOWN;
	contexts[d]++;
	*c = &contexts[d];
	return SUCCESS;
}

CUresult cuCtxDestroy_v2(CUcontext c)
{
	int *n = c;

	if (!n || n < contexts || n >= contexts + 16 || *n == 0)
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
