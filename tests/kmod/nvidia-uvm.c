// SPDX-License-Identifier: GPL-2.0
/* Stand-in for nvidia-uvm.ko: a dynamic character major "nvidia-uvm", and nvidia's symbol. */
#include <linux/fs.h>
#include <linux/module.h>

const char *nvidia_standin_version(void);

static int uvm_perf_prefetch_enable = 1;
module_param(uvm_perf_prefetch_enable, int, 0444);
static int uvm_major;

static const struct file_operations uvm_fops = {
	.owner = THIS_MODULE,
};

static int __init uvm_init(void)
{
	uvm_major = register_chrdev(0, "nvidia-uvm", &uvm_fops);
	if (uvm_major < 0)
		return uvm_major;
	pr_info("nvidia-uvm stand-in for nvidia %s, major %d\n", nvidia_standin_version(),
		uvm_major);
	return 0;
}

static void __exit uvm_exit(void)
{
	unregister_chrdev(uvm_major, "nvidia-uvm");
}

module_init(uvm_init);
module_exit(uvm_exit);
MODULE_LICENSE("GPL");
MODULE_VERSION(NV_VERSION);
MODULE_DESCRIPTION("nvidia-uvm.ko stand-in for nvidia-driver-installer tests");
