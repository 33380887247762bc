// SPDX-License-Identifier: GPL-2.0
/*
 * Stand-in for what MOFED/DOCA-OFED's RDMA stack adds to ib_core: the peer-memory API
 * (ib_register_peer_memory_client, which NVIDIA's nvidia-peermem needs: the symbol
 * open-gpu-kernel-modules' conftest.sh:3297-3318 looks for). It sits on the in-tree
 * ib_core (it uses ib_register_client), as MOFED's modules sit on MOFED's ib_core, and is
 * installed where MOFED installs its modules, /lib/modules/R/updates/, so that openibd's
 * stand-in in tests/vm/test.sh (rdma) can stop and start the stack as MOFED's driver
 * container does.
 */
#include <linux/module.h>
#include <rdma/ib_verbs.h>

static int clients;

void *ib_register_peer_memory_client(const void *client, void *invalidate)
{
	clients++;
	pr_info("ib_peer_mem stand-in: peer-memory client %d registered\n", clients);
	return (void *)client;
}
/* GPL: this kernel's symbol_get takes GPL-only exports alone (the stand-in peermem's way). */
EXPORT_SYMBOL_GPL(ib_register_peer_memory_client);

static int add(struct ib_device *device)
{
	return 0;
}

static struct ib_client peer_mem_client = {.name = "ib_peer_mem-standin", .add = add};

static int __init peer_mem_init(void)
{
	int r = ib_register_client(&peer_mem_client);

	if (!r)
		pr_info("ib_peer_mem stand-in: MOFED's peer-memory API up on ib_core\n");
	return r;
}

static void __exit peer_mem_exit(void)
{
	ib_unregister_client(&peer_mem_client);
}

module_init(peer_mem_init);
module_exit(peer_mem_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("MOFED peer-memory API stand-in for nvidia-driver-installer tests");
