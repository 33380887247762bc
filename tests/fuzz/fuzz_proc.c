// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer: what the kernel stage reads from /proc and /sys: /proc/devices (majors),
 * /proc/driver/nvidia/params and gpus/.../information, /proc/keys (keyrings and key
 * lines), the lockdown file, LoadPin's files and /proc/cmdline, /proc/kallsyms (GPUDirect
 * RDMA's symbols),
 * and PCI sysfs attributes (vendor, device, class); and a /dev/kmsg record, as the node
 * agent reads it for Xids.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/xid.h"
#include "kernel/devnodes.h"
#include "host/probe.h"
#include "kernel/ktrust.h"
#include "kernel/rdma.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), out[64];
	struct nv_params p;
	uint32_t v;
	struct ktrust_key k;
	struct xid_event ev;
	long id;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	devnodes_parse_major(buf, "nvidia-uvm");
	devnodes_parse_minor(buf);
	devnodes_parse_params(buf, &p);
	ktrust_find_keyring(buf, ".secondary_trusted_keys", &id);
	ktrust_parse_lockdown(buf, out, sizeof(out));
	ktrust_parse_key(buf, &k);
	ktrust_parse_loadpin(buf, buf, buf, out, sizeof(out));
	ktrust_parse_loadpin(buf, NULL, buf, out, sizeof(out));
	host_parse_pci_hex(buf, 4, &v);
	host_parse_pci_hex(buf, 6, &v);
	(void)xid_parse((const char *)data, size, &ev);
	if (size) {
		FILE *f = fmemopen(buf, size, "r");
		bool api, dmabuf;

		if (f) {
			kernel_rdma_kallsyms(f, &api, &dmabuf);
			fclose(f);
		}
	}
	free(buf);
	return 0;
}
