// SPDX-License-Identifier: GPL-2.0
/*
 * Stand-in for NVIDIA/gdrcopy's src/gdrdrv/nv-p2p-dummy.c: a module upstream builds beside
 * gdrdrv only so that modpost finds the nvidia_p2p_* symbols' versions on a machine without
 * nvidia.ko's Module.symvers (upstream nv-p2p-dummy.c:23-30). build-driver-package builds
 * gdrdrv alone against the driver's Module.symvers instead: were this module built beside
 * it, gdrdrv would depend on it, not on nvidia.
 */
#include <linux/errno.h>
#include <linux/module.h>

#include "nv-p2p.h"

int nvidia_p2p_get_pages(u64 p2p_token, u32 va_space, u64 virtual_address, u64 length,
			 struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data)
{
	return -EINVAL;
}
EXPORT_SYMBOL(nvidia_p2p_get_pages);

int nvidia_p2p_put_pages(u64 p2p_token, u32 va_space, u64 virtual_address,
			 struct nvidia_p2p_page_table *page_table)
{
	return -EINVAL;
}
EXPORT_SYMBOL(nvidia_p2p_put_pages);

int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table)
{
	return -EINVAL;
}
EXPORT_SYMBOL(nvidia_p2p_free_page_table);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("P2P dummy kernel-mode driver (stand-in)");
MODULE_VERSION("1.0");
