// SPDX-License-Identifier: GPL-2.0
/*
 * Stand-in for nvidia-peermem.ko: it needs the RDMA core's exported symbols
 * (ib_register_client, ib_core's), so the kernel refuses it before ib_core is loaded and
 * shows it among ib_core's holders after; and nvidia's. Where MOFED's peer-memory API is
 * loaded (ib_register_peer_memory_client: NVIDIA's nvidia-peermem registers with it,
 * open-gpu-kernel-modules kernel-open/nvidia-peermem/nvidia-peermem.c:558-605), it
 * registers there too and keeps a reference on the module that exports it (symbol_get),
 * which the kernel shows as that module's refcnt (a weak symbol taken by symbol_get makes
 * no holder). Unlike NVIDIA's, it loads without that
 * API (NVIDIA's init returns -EINVAL then: nvidia-peermem.c:679-681).
 */
#include <linux/module.h>
#include <rdma/ib_verbs.h>

const char *nvidia_standin_version(void);
/* MOFED's (tests/kmod/mofed/ib_peer_mem.c stands in), looked up when the module loads. */
extern void *ib_register_peer_memory_client(const void *client, void *invalidate) __weak;

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

static void *(*peer_register)(const void *client, void *invalidate);

static int __init peermem_init(void)
{
	int r = ib_register_client(&peermem_client);

	if (r)
		return r;
	peer_register = symbol_get(ib_register_peer_memory_client);
	if (peer_register)
		peer_register(&peermem_client, NULL);
	pr_info("nvidia-peermem stand-in for nvidia %s: registered with ib_core%s\n",
		nvidia_standin_version(),
		peer_register ? " and MOFED's peer-memory API" : " (no peer-memory API)");
	return 0;
}

static void __exit peermem_exit(void)
{
	if (peer_register)
		symbol_put(ib_register_peer_memory_client);
	ib_unregister_client(&peermem_client);
}

module_init(peermem_init);
module_exit(peermem_exit);
MODULE_LICENSE("GPL");
MODULE_VERSION(NV_VERSION);
MODULE_DESCRIPTION("nvidia-peermem.ko stand-in for nvidia-driver-installer tests");
