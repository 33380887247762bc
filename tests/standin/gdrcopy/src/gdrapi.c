// SPDX-License-Identifier: Apache-2.0
/* Stand-in for NVIDIA/gdrcopy's libgdrapi: opens /dev/gdrdrv, asks the driver's version. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "gdrapi.h"
#include "gdrdrv.h"

struct gdr {
	int fd;
};

gdr_t gdr_open(void)
{
	struct gdr *g = malloc(sizeof(*g));

	if (!g)
		return NULL;
	g->fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC);
	if (g->fd < 0) {
		int saved = errno;

		free(g);
		errno = saved;
		return NULL;
	}
	return g;
}

int gdr_close(gdr_t g)
{
	int r = close(g->fd);

	free(g);
	return r;
}

int gdr_driver_get_version(gdr_t g, int *major, int *minor)
{
	unsigned v = 0;

	if (ioctl(g->fd, GDRDRV_IOC_GET_VERSION, &v) < 0)
		return -1;
	*major = (int)(v >> 16);
	*minor = (int)(v & 0xffff);
	return 0;
}

void gdr_runtime_get_version(int *major, int *minor)
{
	*major = GDR_API_MAJOR_VERSION;
	*minor = GDR_API_MINOR_VERSION;
}
