// SPDX-License-Identifier: GPL-2.0
/*
 * Stand-in for nvidia-drm.ko: uses symbols of the kernel's drm and
 * drm_kms_helper and of nvidia-modeset, so that it depends on all three as
 * the real one does.
 */
#include <drm/drm_drv.h>
#include <drm/drm_probe_helper.h>
#include <linux/module.h>

int nvidia_modeset_standin(void);

static bool modeset;
module_param(modeset, bool, 0444);

static int __init nvdrm_init(void)
{
	pr_info("nvidia-drm stand-in: modeset %d, drm %ps, helper %ps\n",
		modeset && nvidia_modeset_standin(), drm_dev_put, drm_kms_helper_hotplug_event);
	return 0;
}

static void __exit nvdrm_exit(void)
{
}

module_init(nvdrm_init);
module_exit(nvdrm_exit);
MODULE_LICENSE("GPL");
MODULE_VERSION(NV_VERSION);
MODULE_DESCRIPTION("nvidia-drm.ko stand-in for nvidia-driver-installer tests");
