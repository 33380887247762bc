/* SPDX-License-Identifier: Apache-2.0 */
/* Stand-in for NVIDIA/gdrcopy's include/gdrapi.h: the API version and a small API. */
#ifndef STANDIN_GDRAPI_H
#define STANDIN_GDRAPI_H

#define GDR_API_MAJOR_VERSION 2
#define GDR_API_MINOR_VERSION 5

typedef struct gdr *gdr_t;

/* Opens /dev/gdrdrv; NULL (errno set) where it cannot. */
gdr_t gdr_open(void);
int gdr_close(gdr_t g);
/* The driver's version (its GET_VERSION ioctl): 0 and *version set, or -1. */
int gdr_driver_get_version(gdr_t g, int *major, int *minor);
void gdr_runtime_get_version(int *major, int *minor);

#endif
