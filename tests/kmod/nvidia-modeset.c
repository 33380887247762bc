// SPDX-License-Identifier: GPL-2.0
/* Stand-in for nvidia-modeset.ko: depends on nvidia, and is depended on by nvidia-drm. */
#include <linux/module.h>

const char *nvidia_standin_version(void);

int nvidia_modeset_standin(void)
{
	return 1;
}
EXPORT_SYMBOL(nvidia_modeset_standin);

static int __init nvm_init(void)
{
	pr_info("nvidia-modeset stand-in for nvidia %s\n", nvidia_standin_version());
	return 0;
}

static void __exit nvm_exit(void)
{
}

module_init(nvm_init);
module_exit(nvm_exit);
MODULE_LICENSE("GPL");
MODULE_VERSION(NV_VERSION);
MODULE_DESCRIPTION("nvidia-modeset.ko stand-in for nvidia-driver-installer tests");
