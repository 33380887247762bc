// SPDX-License-Identifier: GPL-2.0
/*
 * Stand-in for NVIDIA's nvidia.ko, for tests on a real kernel: it takes
 * character major 195 (so an open /dev/nvidiactl holds a reference, as with
 * the real driver), shows /proc/driver/nvidia/{version,params} and one
 * gpus/BDF/information per fake GPU, and exports a symbol the other
 * stand-ins use, so that their dependency on it is real.
 *
 * MIG, as far as the installer meets it: a character major "nvidia-caps", the driver's
 * capabilities/mig/{config,monitor}, and per GPU a gpus/BDF/standin-mig file (a file of the
 * stand-ins only) that the NVML stand-in (tests/standin/libnvidia-ml.c) writes its MIG
 * state to: its "gi ID PROFILE" and "ci GI CI PROFILE" lines become the capabilities the
 * real driver makes for its instances (capabilities/gpuMINOR/mig/giN/access,
 * .../ciK/access), with the driver's mig-minors numbering.
 *
 * /proc/driver/nvidia/standin-kmsg (the stand-ins' too): a line written there is logged by
 * the kernel, as the driver's own lines are.
 *
 * IMEX: from branch 550 (NV_VERSION's first number) the driver registers the character
 * device "nvidia-caps-imex-channels" at a dynamic major, as NVIDIA's does (its IMEX guide,
 * "Default Channel Creation": the major is read from /proc/devices); 535 has none.
 */
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "nv-p2p.h"

#define NV_MAJOR 195
#define NV_MAX_GPUS 4
#define NV_MAX_GI 8
#define NV_MIG_STATE 1024

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
static int caps_major;
static int imex_major; /* 0: not registered (branch before 550) */

struct nv_gpu {
	long minor;
	struct proc_dir_entry *mig; /* capabilities/gpuMINOR/mig */
	struct proc_dir_entry *gi[NV_MAX_GI];
	char state[NV_MIG_STATE];
};
static struct nv_gpu nv_gpus[NV_MAX_GPUS];
static DEFINE_MUTEX(mig_lock);

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

/* An access file: "DeviceFileMinor" and the mode nv-caps.c gives it (0400 or 0444). */
static int access_show(struct seq_file *m, void *v)
{
	long minor = (long)m->private;

	seq_printf(m, "DeviceFileMinor: %ld\nDeviceFileMode: %d\nDeviceFileModify: 1\n", minor,
		   minor == 1 ? 256 : 292);
	return 0;
}

static struct proc_dir_entry *cap_dir(struct proc_dir_entry *parent, const char *name,
				      long minor)
{
	struct proc_dir_entry *d = proc_mkdir(name, parent);

	if (d)
		proc_create_single_data("access", 0444, d, access_show, (void *)minor);
	return d;
}

/* The instances' capabilities, made anew from G's state lines. */
static void mig_rebuild(struct nv_gpu *g)
{
	char *s = g->state, *line, name[16];
	unsigned int a, b, c;

	for (a = 0; a < NV_MAX_GI; a++) {
		proc_remove(g->gi[a]);
		g->gi[a] = NULL;
	}
	while ((line = strsep(&s, "\n")) != NULL) {
		if (sscanf(line, "gi %u %u", &a, &b) == 2 && a < NV_MAX_GI && !g->gi[a]) {
			snprintf(name, sizeof(name), "gi%u", a);
			g->gi[a] = cap_dir(g->mig, name, 3 + 135 * g->minor + 9 * a);
		} else if (sscanf(line, "ci %u %u %u", &a, &b, &c) == 3 && a < NV_MAX_GI &&
			   g->gi[a] && b < 8) {
			snprintf(name, sizeof(name), "ci%u", b);
			cap_dir(g->gi[a], name, 3 + 135 * g->minor + 9 * a + 1 + b);
		}
		if (s)
			s[-1] = '\n';
	}
}

static int mig_show(struct seq_file *m, void *v)
{
	struct nv_gpu *g = m->private;

	mutex_lock(&mig_lock);
	seq_puts(m, g->state);
	mutex_unlock(&mig_lock);
	return 0;
}

static int mig_open(struct inode *inode, struct file *file)
{
	return single_open(file, mig_show, pde_data(inode));
}

/* One write is the whole state (the NVML stand-in writes it at once, truncating). */
static ssize_t mig_write(struct file *file, const char __user *buf, size_t len, loff_t *pos)
{
	struct nv_gpu *g = pde_data(file_inode(file));

	if (len >= NV_MIG_STATE)
		return -ENOSPC;
	mutex_lock(&mig_lock);
	if (copy_from_user(g->state, buf, len)) {
		mutex_unlock(&mig_lock);
		return -EFAULT;
	}
	g->state[len] = '\0';
	mig_rebuild(g);
	mutex_unlock(&mig_lock);
	return len;
}

static const struct proc_ops mig_ops = {
	.proc_open = mig_open,
	.proc_read = seq_read,
	.proc_write = mig_write,
	.proc_lseek = seq_lseek,
	.proc_release = single_release,
};

/*
 * standin-kmsg (a file of the stand-ins only): the kernel logs each line written to it, as
 * the real driver logs its own ("NVRM: Xid ...", "NVRM: loading NVIDIA UNIX ..."), so that a
 * test can put the driver's words into /dev/kmsg as the kernel's (facility 0), where a
 * write to /dev/kmsg from user space is LOG_USER's (printk.c, devkmsg_write).
 */
static ssize_t kmsg_write(struct file *file, const char __user *buf, size_t len, loff_t *pos)
{
	char line[256];
	size_t n = min(len, sizeof(line) - 1);

	if (copy_from_user(line, buf, n))
		return -EFAULT;
	line[n] = '\0';
	line[strcspn(line, "\n")] = '\0';
	printk(KERN_ERR "%s\n", line);
	return len;
}

static const struct proc_ops kmsg_ops = {
	.proc_write = kmsg_write,
};

static void caps_init(void)
{
	struct proc_dir_entry *caps = proc_mkdir("capabilities", nv_proc), *mig;

	mig = caps ? proc_mkdir("mig", caps) : NULL;
	/* The driver's two: files of their own, where an instance's is giN/access. */
	if (mig) {
		proc_create_single_data("config", 0444, mig, access_show, (void *)1L);
		proc_create_single_data("monitor", 0444, mig, access_show, (void *)2L);
	}
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
	proc_create("standin-kmsg", 0200, nv_proc, &kmsg_ops);
	gdir = proc_mkdir("gpus", nv_proc);
	caps_init();
	strscpy(list, gpus, sizeof(list));
	while (gdir && (bdf = strsep(&p, ",")) != NULL) {
		struct proc_dir_entry *d = *bdf ? proc_mkdir(bdf, gdir) : NULL;
		char name[48];

		if (!d)
			continue;
		if (minor < NV_MAX_GPUS) {
			struct nv_gpu *g = &nv_gpus[minor];

			g->minor = minor;
			snprintf(name, sizeof(name), "capabilities/gpu%ld", minor);
			g->mig = proc_mkdir(name, nv_proc);
			g->mig = g->mig ? proc_mkdir("mig", g->mig) : NULL;
			proc_create_data("standin-mig", 0644, d, &mig_ops, g);
		}
		proc_create_single_data("information", 0444, d, information_show,
					(void *)minor++);
	}
	return 0;
}

/* The driver's branch, NV_VERSION's first number ("550.90.07": 550). */
static unsigned long nv_branch(void)
{
	return simple_strtoul(NV_VERSION, NULL, 10);
}

/*
 * The peer-to-peer API of NVIDIA's nv-p2p.h (nvidia_p2p_*), exported as nvidia.ko exports
 * it, so that the stand-ins of gdrdrv and nvidia-fs (tests/standin/) take these symbols from
 * this module, as the real ones take them from nvidia.ko: modpost records the dependency
 * (modinfo depends=nvidia) and the symbols' CRCs from this build's Module.symvers. The
 * prototypes are nv-p2p.h's, beside this file (the header the stand-ins compile against),
 * so that the definitions are checked against it; who builds this directory copies it
 * with the *.c files. No GPU memory exists here: every mapping request fails.
 */
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

int nvidia_p2p_get_pages_persistent(u64 virtual_address, u64 length,
				    struct nvidia_p2p_page_table **page_table, u32 flags)
{
	return -EINVAL;
}
EXPORT_SYMBOL(nvidia_p2p_get_pages_persistent);

int nvidia_p2p_put_pages_persistent(u64 virtual_address, struct nvidia_p2p_page_table *page_table,
				    u32 flags)
{
	return -EINVAL;
}
EXPORT_SYMBOL(nvidia_p2p_put_pages_persistent);

int nvidia_p2p_dma_map_pages(struct pci_dev *peer, struct nvidia_p2p_page_table *page_table,
			     struct nvidia_p2p_dma_mapping **dma_mapping)
{
	return -EINVAL;
}
EXPORT_SYMBOL(nvidia_p2p_dma_map_pages);

int nvidia_p2p_dma_unmap_pages(struct pci_dev *peer, struct nvidia_p2p_page_table *page_table,
			       struct nvidia_p2p_dma_mapping *dma_mapping)
{
	return -EINVAL;
}
EXPORT_SYMBOL(nvidia_p2p_dma_unmap_pages);

int nvidia_p2p_free_dma_mapping(struct nvidia_p2p_dma_mapping *dma_mapping)
{
	return -EINVAL;
}
EXPORT_SYMBOL(nvidia_p2p_free_dma_mapping);

static int __init nv_init(void)
{
	int r = register_chrdev(NV_MAJOR, "nvidia", &nv_fops);

	if (r < 0)
		return r;
	caps_major = register_chrdev(0, "nvidia-caps", &nv_fops);
	if (caps_major < 0) {
		r = caps_major;
		goto out_nvidia;
	}
	if (nv_branch() >= 550) {
		imex_major = register_chrdev(0, "nvidia-caps-imex-channels", &nv_fops);
		if (imex_major < 0) {
			r = imex_major;
			imex_major = 0;
			goto out_caps;
		}
	}
	r = nv_proc_init();
	if (r < 0)
		goto out_imex;
	return 0;
out_imex:
	if (imex_major)
		unregister_chrdev(imex_major, "nvidia-caps-imex-channels");
out_caps:
	unregister_chrdev(caps_major, "nvidia-caps");
out_nvidia:
	unregister_chrdev(NV_MAJOR, "nvidia");
	return r;
}

static void __exit nv_exit(void)
{
	proc_remove(nv_proc);
	if (imex_major)
		unregister_chrdev(imex_major, "nvidia-caps-imex-channels");
	unregister_chrdev(caps_major, "nvidia-caps");
	unregister_chrdev(NV_MAJOR, "nvidia");
}

module_init(nv_init);
module_exit(nv_exit);
MODULE_LICENSE("GPL");
MODULE_VERSION(NV_VERSION);
MODULE_DESCRIPTION("nvidia.ko stand-in for nvidia-driver-installer tests");
