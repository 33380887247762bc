/* SPDX-License-Identifier: Apache-2.0 */
/* Stand-in for NVIDIA/gdrcopy's src/gdrdrv/gdrdrv.h: the driver's version and one ioctl. */
#ifndef STANDIN_GDRDRV_H
#define STANDIN_GDRDRV_H

#define GDRDRV_MAJOR_VERSION 2
#define GDRDRV_MINOR_VERSION 5
#define GDRDRV_VERSION ((GDRDRV_MAJOR_VERSION << 16) | GDRDRV_MINOR_VERSION)
#define GDRDRV_TOSTRING_(x) #x
#define GDRDRV_TOSTRING(x) GDRDRV_TOSTRING_(x)
#define GDRDRV_VERSION_STRING                                                                      \
	GDRDRV_TOSTRING(GDRDRV_MAJOR_VERSION) "." GDRDRV_TOSTRING(GDRDRV_MINOR_VERSION)

#define GDRDRV_IOCTL 0xDA
#define GDRDRV_IOC_GET_VERSION _IOR(GDRDRV_IOCTL, 255, unsigned int)
#define GDRDRV_IOC_PIN_BUFFER _IOW(GDRDRV_IOCTL, 1, unsigned long long)

#endif
