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

#include "host/host.h"

#define PCI_VENDOR_MELLANOX 0x15b3

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

/* The row of GPU VENDOR:DEVICE when it needs IMEX (struct host_imex_gpu), else NULL. */
const struct host_imex_gpu *host_imex_gpu(uint16_t vendor, uint16_t device);
