/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stand-in for NVIDIA's kernel/nvidia/nv-p2p.h, the peer-to-peer API nvidia.ko exports to
 * gdrdrv, nvidia-fs and nvidia-peermem (NVIDIA/open-gpu-kernel-modules
 * kernel-open/nvidia/nv-p2p.h). The names are NVIDIA's; the types are cut to what the
 * stand-ins of tests/standin/gdrcopy and tests/standin/gds-nvidia-fs use. gdrcopy's
 * Makefile adds the directory holding it to the include path (NVIDIA_SRC_DIR), as
 * build-driver-package --gdrcopy and --gds do with the driver's module sources.
 */
#ifndef STANDIN_NV_P2P_H
#define STANDIN_NV_P2P_H

#include <linux/types.h>

struct pci_dev;

struct nvidia_p2p_page {
	u64 physical_address;
};

struct nvidia_p2p_page_table {
	u32 version;
	u32 page_size;
	struct nvidia_p2p_page **pages;
	u32 entries;
};

struct nvidia_p2p_dma_mapping {
	u32 version;
	u32 entries;
	u64 *dma_addresses;
};

int nvidia_p2p_get_pages(u64 p2p_token, u32 va_space, u64 virtual_address, u64 length,
			 struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data);
int nvidia_p2p_put_pages(u64 p2p_token, u32 va_space, u64 virtual_address,
			 struct nvidia_p2p_page_table *page_table);
int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table);
int nvidia_p2p_get_pages_persistent(u64 virtual_address, u64 length,
				    struct nvidia_p2p_page_table **page_table, u32 flags);
int nvidia_p2p_put_pages_persistent(u64 virtual_address, struct nvidia_p2p_page_table *page_table,
				    u32 flags);
int nvidia_p2p_dma_map_pages(struct pci_dev *peer, struct nvidia_p2p_page_table *page_table,
			     struct nvidia_p2p_dma_mapping **dma_mapping);
int nvidia_p2p_dma_unmap_pages(struct pci_dev *peer, struct nvidia_p2p_page_table *page_table,
			       struct nvidia_p2p_dma_mapping *dma_mapping);
int nvidia_p2p_free_dma_mapping(struct nvidia_p2p_dma_mapping *dma_mapping);

#endif
