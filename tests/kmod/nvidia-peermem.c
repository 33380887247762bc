// SPDX-License-Identifier: GPL-2.0
/*
 * Stand-in for nvidia-peermem.ko, built as NVIDIA's is: with MOFED's peer-memory API where
 * the build finds it (tests/kmod/Kbuild defines NV_MLNX_IB_PEER_MEM_SYMBOLS_PRESENT, as
 * open-gpu-kernel-modules kernel-open/conftest.sh:3294-3318 does), it imports
 * ib_register_peer_memory_client (tests/kmod/mofed/ib_peer_mem.c stands in for MOFED's
 * ib_core exporting it), so the kernel refuses it until that API is loaded and shows it
 * among its holders after (nvidia-peermem.c:558-605 registers there). Without it, the stub:
 * its init fails with -EINVAL, as NVIDIA's does (nvidia-peermem.c:679-681). Either way it
 * needs nvidia's symbols and the RDMA core's (ib_register_client).
 */
#include <linux/module.h>
#include <rdma/ib_verbs.h>

const char *nvidia_standin_version(void);

static int peermem_add(struct ib_device *device)
{
	return 0;
}

static void peermem_remove(struct ib_device *device, void *client_data)
{
}

static struct ib_client peermem_client = {
	.name = "nvidia-peermem-standin",
	.add = peermem_add,
	.remove = peermem_remove,
};

#ifdef NV_MLNX_IB_PEER_MEM_SYMBOLS_PRESENT
/* MOFED's, imported: the module loads only where it is exported. */
void *ib_register_peer_memory_client(const void *client, void *invalidate);
#endif

static int __init peermem_init(void)
{
#ifdef NV_MLNX_IB_PEER_MEM_SYMBOLS_PRESENT
	int r = ib_register_client(&peermem_client);

	if (r)
		return r;
	ib_register_peer_memory_client(&peermem_client, NULL);
	pr_info("nvidia-peermem stand-in for nvidia %s: registered with ib_core and MOFED's peer-memory API\n",
		nvidia_standin_version());
	return 0;
#else
	/* Referenced, so that the stub needs ib_core and nvidia like NVIDIA's. */
	pr_info("nvidia-peermem stand-in for nvidia %s (%p): built without MOFED's peer-memory API: -EINVAL\n",
		nvidia_standin_version(), ib_register_client);
	return -EINVAL;
#endif
}

static void __exit peermem_exit(void)
{
	ib_unregister_client(&peermem_client);
}

module_init(peermem_init);
module_exit(peermem_exit);
MODULE_LICENSE("GPL");
MODULE_VERSION(NV_VERSION);
MODULE_DESCRIPTION("nvidia-peermem.ko stand-in for nvidia-driver-installer tests");
