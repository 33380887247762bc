/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The NVLink fabric as the stand-in libcuda and libnvidia-ml see it, under
 * $FAKE_KERNEL_ROOT: the host has one when nvidia.ko lists an NVSwitch
 * (proc/driver/nvidia-nvswitch/devices/, HGX H100-like) or an InfiniBand function's VPD
 * marks an NVLink 5 management port (sys/class/infiniband/DEV/device/vpd holding
 * SMDL=SW_MNG, HGX B200-like); it is trained when run/nvidia-fabricmanager/standin-fabric
 * says "trained" (what the stand-in Fabric Manager writes; a file of the stand-ins only,
 * no interface of NVIDIA's).
 */
#pragma once

#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* $FAKE_KERNEL_ROOT/REL into BUF. */
static inline void standin_path(char *buf, size_t size, const char *rel)
{
	const char *root = getenv("FAKE_KERNEL_ROOT");

	snprintf(buf, size, "%s/%s", root && *root ? root : "", rel);
}

/* Whether the file REL's first bytes (up to 4 KiB) hold WANT: at its start, or anywhere. */
static inline int standin_file_has(const char *rel, const char *want, int anywhere)
{
	char p[512], buf[4096];
	size_t n;
	FILE *f;

	standin_path(p, sizeof(p), rel);
	f = fopen(p, "rb");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	if (!anywhere)
		return n >= strlen(want) && memcmp(buf, want, strlen(want)) == 0;
	return memmem(buf, n, want, strlen(want)) != NULL;
}

/* Whether directory REL has an entry (not . or ..) for which OK(REL, NAME) holds; OK NULL: any. */
static inline int standin_dir_has(const char *rel, int (*ok)(const char *rel, const char *name))
{
	char p[512];
	struct dirent *de;
	int found = 0;
	DIR *d;

	standin_path(p, sizeof(p), rel);
	d = opendir(p);
	while (d && !found && (de = readdir(d)))
		found = de->d_name[0] != '.' && (!ok || ok(rel, de->d_name));
	if (d)
		closedir(d);
	return found;
}

static inline int standin_is_mgmt_port(const char *rel, const char *name)
{
	char vpd[512];

	snprintf(vpd, sizeof(vpd), "%s/%s/device/vpd", rel, name);
	return standin_file_has(vpd, "SMDL=SW_MNG", 1);
}

static inline int standin_has_fabric(void)
{
	return standin_dir_has("proc/driver/nvidia-nvswitch/devices", NULL) ||
	       standin_dir_has("sys/class/infiniband", standin_is_mgmt_port);
}

static inline int standin_fabric_trained(void)
{
	return standin_file_has("run/nvidia-fabricmanager/standin-fabric", "trained", 0);
}
