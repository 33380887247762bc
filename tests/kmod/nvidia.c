// SPDX-License-Identifier: GPL-2.0
/*
 * Stand-in for NVIDIA's nvidia.ko, for tests on a real kernel: it takes
 * character major 195 (so an open /dev/nvidiactl holds a reference, as with
 * the real driver), shows /proc/driver/nvidia/{version,params} and one
 * gpus/BDF/information per fake GPU, and exports a symbol the other
 * stand-ins use, so that their dependency on it is real.
 */
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/string.h>

#define NV_MAJOR 195

static uint NVreg_DeviceFileMode = 0666;
module_param(NVreg_DeviceFileMode, uint, 0444);
static uint NVreg_DeviceFileUID;
module_param(NVreg_DeviceFileUID, uint, 0444);
static uint NVreg_DeviceFileGID;
module_param(NVreg_DeviceFileGID, uint, 0444);
static uint NVreg_ModifyDeviceFiles = 1;
module_param(NVreg_ModifyDeviceFiles, uint, 0444);
/*
 * NVIDIA's nvidia.ko has it from branch 580 on (nv-reg.h, CoherentGPUMemoryMode): on a
 * coherent platform (Grace) "driver" keeps GPU memory from the OS as a NUMA node. The
 * stand-in takes it, so that build-driver-package's Grace default can be proven here.
 */
static char *NVreg_CoherentGPUMemoryMode;
module_param(NVreg_CoherentGPUMemoryMode, charp, 0444);
static char *gpus = "0000:00:04.0,0000:00:05.0";
module_param(gpus, charp, 0444);
MODULE_PARM_DESC(gpus, "PCI addresses of the fake GPUs, comma-separated");

static struct proc_dir_entry *nv_proc;

const char *nvidia_standin_version(void)
{
	return NV_VERSION;
}
EXPORT_SYMBOL(nvidia_standin_version);

static int nv_open(struct inode *inode, struct file *file)
{
	return 0;
}

static int nv_release(struct inode *inode, struct file *file)
{
	return 0;
}

static const struct file_operations nv_fops = {
	.owner = THIS_MODULE,
	.open = nv_open,
	.release = nv_release,
};

static int version_show(struct seq_file *m, void *v)
{
	seq_printf(m, "NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  (stand-in)\n",
		   NV_VERSION);
	return 0;
}

static int params_show(struct seq_file *m, void *v)
{
	seq_printf(m, "ModifyDeviceFiles: %u\nDeviceFileUID: %u\nDeviceFileGID: %u\n"
		      "DeviceFileMode: %u\n",
		   NVreg_ModifyDeviceFiles, NVreg_DeviceFileUID, NVreg_DeviceFileGID,
		   NVreg_DeviceFileMode);
	return 0;
}

static int information_show(struct seq_file *m, void *v)
{
	long minor = (long)m->private;

	seq_printf(m, "Model: \t\t NVIDIA stand-in GPU\nIRQ:   \t\t 0\n"
		      "GPU UUID: \t GPU-5a5a5a5a-0000-0000-0000-%012ld\nBus Type: \t PCIe\n"
		      "Device Minor: \t %ld\nGPU Excluded:\t No\n",
		   minor, minor);
	return 0;
}

static int nv_proc_init(void)
{
	struct proc_dir_entry *gdir;
	char list[128], *p = list, *bdf;
	long minor = 0;

	nv_proc = proc_mkdir("driver/nvidia", NULL);
	if (!nv_proc)
		return -ENOMEM;
	proc_create_single("version", 0444, nv_proc, version_show);
	proc_create_single("params", 0444, nv_proc, params_show);
	gdir = proc_mkdir("gpus", nv_proc);
	strscpy(list, gpus, sizeof(list));
	while (gdir && (bdf = strsep(&p, ",")) != NULL) {
		struct proc_dir_entry *d = *bdf ? proc_mkdir(bdf, gdir) : NULL;

		if (d)
			proc_create_single_data("information", 0444, d, information_show,
						(void *)minor++);
	}
	return 0;
}

static int __init nv_init(void)
{
	int r = register_chrdev(NV_MAJOR, "nvidia", &nv_fops);

	if (r < 0)
		return r;
	r = nv_proc_init();
	if (r < 0) {
		unregister_chrdev(NV_MAJOR, "nvidia");
		return r;
	}
	return 0;
}

static void __exit nv_exit(void)
{
	proc_remove(nv_proc);
	unregister_chrdev(NV_MAJOR, "nvidia");
}

module_init(nv_init);
module_exit(nv_exit);
MODULE_LICENSE("GPL");
MODULE_VERSION(NV_VERSION);
MODULE_DESCRIPTION("nvidia.ko stand-in for nvidia-driver-installer tests");
