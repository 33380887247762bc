// SPDX-License-Identifier: Apache-2.0
/*
 * A GPU's DRM nodes for the CDI spec's graphics (cdi.h cdi_drm_nodes): what
 * nvidia-container-toolkit's graphics modifier adds per GPU (internal/modifier/graphics.go:
 * 47-58 merges NewDRMNodesDiscoverer's /dev/dri/card* and renderD* of the visible devices).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "expose/cdi.h"
#include "util/fs.h"

#define GPUS_DIR "/proc/driver/nvidia/gpus"

/* The "Device Minor" of the information file TEXT, or -1. */
static long info_minor(const char *text)
{
	const char *p = strstr(text, "Device Minor:");
	char *end;
	long v;

	if (!p)
		return -1;
	v = strtol(p + strlen("Device Minor:"), &end, 10);
	return end == p + strlen("Device Minor:") || v < 0 ? -1 : v;
}

/* The PCI address of the GPU with MINOR into BDF, from the driver's /proc. 0 or -1. */
static int gpu_bdf(int root_fd, unsigned minor, char *bdf, size_t size)
{
	struct err ie;
	int fd = fs_dir_in_root(root_fd, GPUS_DIR, false, &ie);
	_cleanup_closedir_ DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (fd >= 0 && !d)
		close(fd);
	while (d && (de = readdir(d))) {
		_cleanup_free_ char *info = NULL;
		char path[320];

		if (de->d_name[0] == '.' || strlen(de->d_name) >= size)
			continue;
		snprintf(path, sizeof(path), GPUS_DIR "/%s/information", de->d_name);
		info = fs_read_in_root(root_fd, path, 1 << 16, NULL);
		if (info && info_minor(info) == (long)minor) {
			memcpy(bdf, de->d_name, strlen(de->d_name) + 1); /* shorter than SIZE */
			return 0;
		}
	}
	return -1;
}

static bool is_drm_name(const char *n)
{
	return (strncmp(n, "card", 4) == 0 && n[4]) || (strncmp(n, "renderD", 7) == 0 && n[7]);
}

/* Whether /dev/dri/NAME under ROOT_FD is a character device. */
static bool is_chr(int root_fd, const char *name)
{
	char path[300];
	struct stat st;
	struct err ie;
	_cleanup_close_ int fd = -1;

	snprintf(path, sizeof(path), "/dev/dri/%s", name);
	fd = fs_open_in_root(root_fd, path, O_PATH | O_CLOEXEC, 0, FS_NOFOLLOW_LAST, &ie);
	return fd >= 0 && fstat(fd, &st) == 0 && S_ISCHR(st.st_mode);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

void cdi_drm_nodes(int root_fd, struct cdi_gpu *g)
{
	char bdf[64], path[128];
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	struct err ie;
	int fd;

	g->n_drm = 0;
	if (gpu_bdf(root_fd, g->minor, bdf, sizeof(bdf)) < 0 || strchr(bdf, '/'))
		return;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/drm", bdf);
	fd = fs_dir_in_root(root_fd, path, false, &ie);
	if (fd < 0)
		return;
	if (!(d = fdopendir(fd))) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) && g->n_drm < CDI_MAX_DRM) {
		if (!is_drm_name(de->d_name) || strlen(de->d_name) > 20 ||
		    !is_chr(root_fd, de->d_name))
			continue;
		if (snprintf(g->drm[g->n_drm], sizeof(g->drm[0]), "/dev/dri/%s", de->d_name) <
		    (int)sizeof(g->drm[0]))
			g->n_drm++;
	}
	/* readdir's order is the file system's: the spec's is sorted, so it is stable. */
	qsort(g->drm, g->n_drm, sizeof(g->drm[0]), by_name);
}
