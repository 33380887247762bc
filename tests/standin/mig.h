/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A GPU's MIG state as both stand-ins see it: the NVML stand-in keeps it in
 * proc/driver/nvidia/gpus/BDF/standin-mig under $FAKE_KERNEL_ROOT ("mode CURRENT PENDING",
 * "gi ID PROFILE_ID", "ci GI_ID CI_ID CI_PROFILE_ID" lines; a file of the stand-ins only,
 * no interface of NVIDIA's) and the CUDA stand-in reads it, so that the MIG devices NVML
 * lists are those CUDA enumerates, under the same UUIDs (made from the GPU's UUID and minor
 * in its information file, which both read with standin_info_field).
 */
#pragma once

#include "fabric.h"

#define STANDIN_MIG_MAX 64 /* MIG devices of one GPU that are read: 8 GPU instances of 8 */

/* One MIG device: its GPU instance's and compute instance's ids. */
struct standin_mig_dev {
	unsigned gi, ci;
};

static inline int standin_mig_dev_cmp(const void *a, const void *b)
{
	const struct standin_mig_dev *x = a, *y = b;

	if (x->gi != y->gi)
		return x->gi < y->gi ? -1 : 1;
	return x->ci < y->ci ? -1 : x->ci > y->ci;
}

/*
 * The MIG state of the GPU at BDF: its current MIG mode into *MODE (0 without a state
 * file) and its MIG devices into OUT (at most MAX), in NVML's order (by GPU instance id,
 * then compute instance id, as nvmlDeviceGetMigDeviceHandleByIndex counts them). Returns
 * how many.
 */
static inline unsigned standin_mig_read(const char *bdf, unsigned *mode,
					 struct standin_mig_dev *out, unsigned max)
{
	char rel[128], p[512], line[128];
	unsigned a, b, c, n = 0;
	FILE *f;

	*mode = 0;
	snprintf(rel, sizeof(rel), "proc/driver/nvidia/gpus/%s/standin-mig", bdf);
	standin_path(p, sizeof(p), rel);
	f = fopen(p, "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "mode %u %u", &a, &b) == 2)
			*mode = a;
		else if (sscanf(line, "ci %u %u %u", &a, &b, &c) == 3 && n < max)
			out[n++] = (struct standin_mig_dev){a, b};
	}
	if (f)
		fclose(f);
	qsort(out, n, sizeof(out[0]), standin_mig_dev_cmp);
	return n;
}

/* "KEY: \t value" of proc/driver/nvidia/gpus/BDF/information, into OUT ("" if none; the last
 * line for KEY where there are several). */
static inline void standin_info_field(const char *bdf, const char *key, char *out, size_t size)
{
	char rel[128], p[512], line[256];
	size_t kl = strlen(key);
	FILE *f;

	out[0] = '\0';
	snprintf(rel, sizeof(rel), "proc/driver/nvidia/gpus/%s/information", bdf);
	standin_path(p, sizeof(p), rel);
	f = fopen(p, "r");
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

/*
 * The UUID of a MIG device: "MIG-" and the shape of a UUID, made from its GPU's UUID, the
 * GPU's minor and the instance ids (a stand-in's own; NVIDIA's are random per instance).
 */
static inline void standin_mig_uuid(char *out, size_t size, const char *gpu_uuid, unsigned minor,
				    unsigned gi, unsigned ci)
{
	unsigned long h = 5381;

	for (const char *s = gpu_uuid; *s; s++)
		h = h * 33 + (unsigned char)*s;
	snprintf(out, size, "MIG-%08lx-%04x-%04x-%04x-%012lx", h & 0xffffffff, gi, ci,
		 0x4000u | (minor & 0xfff), (h >> 8) & 0xffffffffffffUL);
}
