// SPDX-License-Identifier: GPL-2.0
/*
 * Stand-in for NVIDIA/gdrcopy's gdrdrv.ko: registers the char device "gdrdrv" with a
 * dynamic major and no node (upstream gdrdrv.c:305 DEVNAME, :1889 register_chrdev; the node
 * is insmod.sh's to make), answers the version ioctl, and pins through nvidia.ko's
 * nvidia_p2p_get_pages / put_pages / free_page_table as upstream does (gdrdrv.c:592, 744,
 * 877), so that the module depends on nvidia. With no GPU memory every pin fails.
 */
#include <linux/errno.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/uaccess.h>

#include "gdrdrv.h"
#include "nv-p2p.h"

static int major;

static long gdrdrv_pin(unsigned long arg)
{
	struct nvidia_p2p_page_table *pt = NULL;
	u64 va;
	int r;

	if (copy_from_user(&va, (void __user *)arg, sizeof(va)))
		return -EFAULT;
	r = nvidia_p2p_get_pages(0, 0, va, 65536, &pt, NULL, NULL);
	if (r == 0) {
		nvidia_p2p_put_pages(0, 0, va, pt);
		nvidia_p2p_free_page_table(pt);
	}
	return r;
}

static long gdrdrv_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	unsigned int v = GDRDRV_VERSION;

	switch (cmd) {
	case GDRDRV_IOC_GET_VERSION:
		return copy_to_user((void __user *)arg, &v, sizeof(v)) ? -EFAULT : 0;
	case GDRDRV_IOC_PIN_BUFFER:
		return gdrdrv_pin(arg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations gdrdrv_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = gdrdrv_ioctl,
};

static int __init gdrdrv_init(void)
{
	major = register_chrdev(0, "gdrdrv", &gdrdrv_fops);
	if (major < 0)
		return major;
	pr_info("gdrdrv: loading gdrdrv version %s (stand-in), major %d\n", GDRDRV_VERSION_STRING,
		major);
	return 0;
}

static void __exit gdrdrv_exit(void)
{
	unregister_chrdev(major, "gdrdrv");
}

module_init(gdrdrv_init);
module_exit(gdrdrv_exit);
MODULE_LICENSE("Dual MIT/GPL");
MODULE_VERSION(GDRDRV_VERSION_STRING);
MODULE_DESCRIPTION("gdrdrv stand-in for nvidia-driver-installer tests");
/* What the build's HAVE_* probes answered (src/gdrdrv/Makefile), for the tests to read. */
#ifdef GDRDRV_HAVE_PROC_OPS
MODULE_INFO(have_proc_ops, "y");
#else
MODULE_INFO(have_proc_ops, "n");
#endif
#ifdef GDRDRV_HAVE_VM_FLAGS_SET
MODULE_INFO(have_vm_flags_set, "y");
#else
MODULE_INFO(have_vm_flags_set, "n");
#endif
