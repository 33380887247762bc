/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVLink 5 nodes (fourth-generation NVSwitch: HGX B200/B300, B100). Their NVSwitches are
 * not on the host's PCI bus: the GPU baseboard's ConnectX-7 bridge shows the host four
 * InfiniBand functions, and the two "limited" ones, whose PCI VPD carries the vendor field
 * SMDL=SW_MNG, are the ports through which NVIDIA's NVLink Subnet Manager (NVLSM) and
 * Fabric Manager reach the switches, each started with the port's GUID (NVIDIA Fabric
 * Manager User Guide, "NVIDIA HGX B200/B300 GPU Baseboard" and "Running Fabric Manager as a
 * Non-Root User"). NVLSM talks to them through ib_umad (/dev/infiniband/umadN).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HOST_MAX_NVLINK_PORTS 8
#define PCI_VENDOR_MELLANOX 0x15b3

struct nvlink_port {
	char ibdev[64];	    /* the InfiniBand device: "mlx5_0" */
	unsigned port;	    /* its port number: 1 */
	uint64_t guid;	    /* the port GUID: the interface id of the port's GID 0 */
	char guid_text[19]; /* as NVLSM and Fabric Manager take it: "0x0002c90300317b01" */
};

/* What host_scan_nvlink found: the management ports, and whether ib_umad is loaded. */
struct nvlink {
	struct nvlink_port ports[HOST_MAX_NVLINK_PORTS];
	size_t n_ports;
	bool ib_umad;
};

/* Whether VPD (a PCI function's Vital Product Data, LEN bytes) marks an NVLink management port. */
bool host_vpd_is_nvlink_mgmt(const void *vpd, size_t len);

/*
 * Parses a GID as sysfs writes it ("fe80:0000:0000:0000:0002:c903:0031:7b01\n": eight
 * groups of four hex digits) into its interface id, the port GUID. Returns 0, or -1 when
 * the text is not such a GID.
 */
int host_parse_gid_guid(const char *gid, uint64_t *ret);

/*
 * Lists the NVLink management ports under ROOT/sys/class/infiniband (a Mellanox function
 * whose VPD marks it, each port with a GUID), sorted by device and port, and whether
 * ib_umad is loaded (ROOT/sys/class/infiniband_mad). A host without InfiniBand has none.
 */
void host_scan_nvlink(int root_fd, struct nvlink *ret);
