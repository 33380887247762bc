// SPDX-License-Identifier: GPL-2.0
/*
 * Stand-in for gds-nvidia-fs's nvidia-fs.ko: registers the char device "nvidia-fs" with a
 * dynamic major (nvfs-core.h:24, nvfs-core.c:2524), a class whose devnode callback gives
 * mode 0666 (:2456-2464), and nvidia-fs0..N-1 at minors 0..N-1, N its max_devices parameter,
 * default and at most 16 (:78, :106, :2553-2555, :2622). Its ioctl maps through nvidia.ko's
 * nvidia_p2p_* as upstream's does (nvfs-core.c:399, :1316), so the module depends on nvidia.
 */
#include <linux/device.h>
#include <linux/errno.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/uaccess.h>
#include <linux/version.h>

#include "config-host.h"
#include "nv-p2p.h"
#include "nvfs-vers.h"

#define DEVICE_NAME "nvidia-fs"
#define CLASS_NAME "nvidia-fs-class"
#define MAX_NVFS_DEVICES 16U
#define NVFS_IOCTL_MAP _IOW('t', 1, unsigned long long)
#define TO_STR_(x) #x
#define TO_STR(x) TO_STR_(x)

#ifndef NVFS_STANDIN_CONFIGURED
#error "config-host.h not from configure"
#endif

static unsigned int nvfs_max_devices = MAX_NVFS_DEVICES;
/* Writable, as upstream's (nvfs-core.c:2622: S_IWUSR | S_IRUGO). */
module_param_named(max_devices, nvfs_max_devices, uint, 0644);
static int major_number;
static struct class *nvfs_class;
static unsigned int nvfs_curr_devices;

static long nvfs_map(unsigned long arg)
{
	struct nvidia_p2p_page_table *pt = NULL;
	struct nvidia_p2p_dma_mapping *dma = NULL;
	u64 va;
	int r;

	if (copy_from_user(&va, (void __user *)arg, sizeof(va)))
		return -EFAULT;
	r = nvidia_p2p_get_pages(0, 0, va, 65536, &pt, NULL, NULL);
	if (r)
		return r;
	r = nvidia_p2p_dma_map_pages(NULL, pt, &dma);
	if (r == 0)
		nvidia_p2p_dma_unmap_pages(NULL, pt, dma);
	nvidia_p2p_put_pages(0, 0, va, pt);
	nvidia_p2p_free_page_table(pt);
	return r;
}

static long nvfs_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	return cmd == NVFS_IOCTL_MAP ? nvfs_map(arg) : -ENOTTY;
}

static const struct file_operations nvfs_dev_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = nvfs_ioctl,
};

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 2, 0)
static char *nvfs_devnode(struct device *dev, umode_t *mode)
#else
static char *nvfs_devnode(const struct device *dev, umode_t *mode)
#endif
{
	if (mode)
		*mode = 0666;
	return NULL;
}

static void nvfs_remove_devices(unsigned int n)
{
	while (n-- > 0)
		device_destroy(nvfs_class, MKDEV(major_number, n));
}

static int __init nvfs_init(void)
{
	unsigned int i;

	major_number = register_chrdev(0, DEVICE_NAME, &nvfs_dev_fops);
	if (major_number < 0)
		return major_number;
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 4, 0)
	nvfs_class = class_create(THIS_MODULE, CLASS_NAME);
#else
	nvfs_class = class_create(CLASS_NAME);
#endif
	if (IS_ERR(nvfs_class)) {
		unregister_chrdev(major_number, DEVICE_NAME);
		return PTR_ERR(nvfs_class);
	}
	nvfs_class->devnode = nvfs_devnode;
	nvfs_curr_devices = nvfs_max_devices == 0 || nvfs_max_devices > MAX_NVFS_DEVICES
				    ? MAX_NVFS_DEVICES
				    : nvfs_max_devices;
	for (i = 0; i < nvfs_curr_devices; i++) {
		struct device *d = device_create(nvfs_class, NULL, MKDEV(major_number, i), NULL,
						 DEVICE_NAME "%u", i);
		if (IS_ERR(d)) {
			nvfs_remove_devices(i);
			class_destroy(nvfs_class);
			unregister_chrdev(major_number, DEVICE_NAME);
			return PTR_ERR(d);
		}
	}
	pr_info("nvidia_fs: Initializing nvfs driver module (stand-in), major %d\n", major_number);
	return 0;
}

static void __exit nvfs_exit(void)
{
	nvfs_remove_devices(nvfs_curr_devices);
	class_destroy(nvfs_class);
	unregister_chrdev(major_number, DEVICE_NAME);
}

module_init(nvfs_init);
module_exit(nvfs_exit);
MODULE_LICENSE("GPL v2");
MODULE_DESCRIPTION("nvidia-fs stand-in for nvidia-driver-installer tests");
MODULE_VERSION(TO_STR(NVFS_DRIVER_MAJOR_VERSION) "." TO_STR(NVFS_DRIVER_MINOR_VERSION) "." TO_STR(
	NVFS_DRIVER_PATCH_VERSION));
