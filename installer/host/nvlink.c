// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/nvlink.h"
#include "util/cleanup.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/vercmp.h"

/* The vendor field of the bridge's limited functions, as NVIDIA's guide names it. */
#define SW_MNG "SMDL=SW_MNG"
#define IB_CLASS "/sys/class/infiniband"

bool host_vpd_is_nvlink_mgmt(const void *vpd, size_t len)
{
	return vpd && memmem(vpd, len, SW_MNG, strlen(SW_MNG)) != NULL;
}

int host_parse_gid_guid(const char *gid, uint64_t *ret)
{
	uint64_t guid = 0;
	const char *p = gid;

	for (int group = 0; group < 8; group++) {
		for (int i = 0; i < 4; i++, p++) {
			int d = *p >= '0' && *p <= '9'	 ? *p - '0'
				: *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
				: *p >= 'A' && *p <= 'F' ? *p - 'A' + 10
							 : -1;

			if (d < 0)
				return -1;
			/* The last four groups are the interface id. */
			if (group >= 4)
				guid = guid << 4 | (uint64_t)d;
		}
		if (group < 7 && *p++ != ':')
			return -1;
	}
	if (*p == '\n')
		p++;
	if (*p)
		return -1;
	*ret = guid;
	return 0;
}

static int port_cmp(const void *a, const void *b)
{
	const struct nvlink_port *x = a, *y = b;
	int c = strcmp(x->ibdev, y->ibdev);

	return c ? c : (x->port > y->port) - (x->port < y->port);
}

/* Whether IBDEV is a Mellanox function whose VPD marks it a management port. */
static bool is_mgmt_function(int root_fd, const char *ibdev)
{
	_cleanup_free_ char *vendor = NULL, *vpd = NULL;
	char path[256];
	size_t len;

	snprintf(path, sizeof(path), IB_CLASS "/%.63s/device/vendor", ibdev);
	vendor = fs_read_in_root(root_fd, path, 64, NULL);
	/* The VPD of other functions is not read: on some it is slow, on none is it ours. */
	if (!vendor || strtoul(vendor, NULL, 16) != PCI_VENDOR_MELLANOX)
		return false;
	snprintf(path, sizeof(path), IB_CLASS "/%.63s/device/vpd", ibdev);
	vpd = fs_read_in_root(root_fd, path, 64 * 1024, &len);
	return host_vpd_is_nvlink_mgmt(vpd, vpd ? len : 0);
}

/* IBDEV's ports with a GUID, into h. */
static void add_ports(int root_fd, const char *ibdev, struct nvlink *h)
{
	for (unsigned port = 1; port <= 2 && h->n_ports < HOST_MAX_NVLINK_PORTS; port++) {
		_cleanup_free_ char *gid = NULL;
		struct nvlink_port *p = &h->ports[h->n_ports];
		char path[256];
		uint64_t guid;

		snprintf(path, sizeof(path), IB_CLASS "/%.63s/ports/%u/gids/0", ibdev, port);
		gid = fs_read_in_root(root_fd, path, 128, NULL);
		if (!gid || host_parse_gid_guid(gid, &guid) < 0 || guid == 0)
			continue;
		snprintf(p->ibdev, sizeof(p->ibdev), "%.63s", ibdev);
		p->port = port;
		p->guid = guid;
		snprintf(p->guid_text, sizeof(p->guid_text), "0x%016llx", (unsigned long long)guid);
		h->n_ports++;
	}
}

void host_scan_nvlink(int root_fd, struct nvlink *h)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	struct err e;
	int fd;

	h->n_ports = 0;
	h->ib_umad = faccessat(root_fd, "sys/class/infiniband_mad", F_OK, 0) == 0;
	fd = fs_dir_in_root(root_fd, IB_CLASS, false, &e);
	if (fd < 0)
		return; /* no InfiniBand on this host */
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(h->ports->ibdev))
			continue;
		if (is_mgmt_function(root_fd, de->d_name))
			add_ports(root_fd, de->d_name, h);
	}
	qsort(h->ports, h->n_ports, sizeof(*h->ports), port_cmp);
	if (h->n_ports > 0)
		log_kv(LOG_DEBUG, "host", "NVLink 5 management ports",
		       U64("ports", (uint64_t)h->n_ports), "ib_umad",
		       h->ib_umad ? "loaded" : "not loaded", LOG_END);
}

/*
 * The GPUs of NVIDIA's NVL72 racks, whose NVLink domain spans the rack's compute nodes, by
 * NVIDIA's own list of PCI device ids (open-gpu-kernel-modules README.md, "Compatible
 * GPUs", 595.45.04: lines 949-953 "NVIDIA GB200 | 2941 10DE ...", line 1023 "NVIDIA GB300 |
 * 31C2 10DE 21F1"). A row's version is the first release whose list names the id, every
 * tag of that repository read: 2941 from 570.123.01 (README.md:946 "HGX GB200 | 2941 10DE
 * 2046"; 570.86.16, the branch's first, lists none), 31C2 from 580.82.07 (README.md:1012
 * "NVIDIA GB300 | 31C2 10DE 21F1"; 580.76.05 lists none). The list is uneven across tags:
 * 580.94.02, .03, .06, .16, .17 and .18 name no 31C2 (nor B300 and other parts that
 * 580.94.10 names), so the floor is the first release that names the id, no promise that
 * every later one does. Only ids NVIDIA lists: no other part is guessed.
 */
static const struct host_imex_gpu imex_gpus[] = {
	{0x2941, "GB200", "570.123.01"},
	{0x31c2, "GB300", "580.82.07"},
};

const struct host_imex_gpu *host_imex_gpu(uint16_t vendor, uint16_t device)
{
	if (vendor != 0x10de)
		return NULL;
	for (size_t i = 0; i < sizeof(imex_gpus) / sizeof(imex_gpus[0]); i++) {
		if (imex_gpus[i].device == device)
			return &imex_gpus[i];
	}
	return NULL;
}

const struct gpu *host_imex_first(const struct host *h, const struct host_imex_gpu **ret_row)
{
	for (size_t i = 0; i < h->n_gpus; i++) {
		const struct host_imex_gpu *row =
			host_imex_gpu(h->gpus[i].vendor, h->gpus[i].device);

		if (row) {
			if (ret_row)
				*ret_row = row;
			return &h->gpus[i];
		}
	}
	return NULL;
}

enum host_imex_lack host_imex_lack(const char *version, bool has_imex,
				   const struct host_imex_gpu *row, char *buf, size_t size)
{
	buf[0] = '\0';
	if (vercmp_rpm(version, row->min_version) < 0) {
		snprintf(buf, size, "driver %s does not drive the %s (%s or later does)", version,
			 row->name, row->min_version);
		return HOST_IMEX_NOT_DRIVEN;
	}
	if (!has_imex) {
		snprintf(buf, size, "it carries no nvidia-imex and nvidia-imex-ctl");
		return HOST_IMEX_NO_PROGRAMS;
	}
	return HOST_IMEX_SERVED;
}

/*
 * The newer of the row's own version and HOST_IMEX_DNS_NAMES_MIN: ComputeDomains need
 * 570.158.01 or later (NVIDIA's DRA driver docs/prerequisites.md), so a fix that named the
 * GB200's 570.123.01 would lead to the gate's warning next.
 */
const char *host_imex_fix_version(const struct host_imex_gpu *row)
{
	return vercmp_rpm(row->min_version, HOST_IMEX_DNS_NAMES_MIN) > 0 ? row->min_version
									 : HOST_IMEX_DNS_NAMES_MIN;
}

/*
 * NVIDIA/k8s-dra-driver-gpu at 2240711: cmd/compute-domain-kubelet-plugin/main.go:44
 * IMEXDaemonsWithDNSNamesMinDriverVersion = "570.158.01"; device_state.go:80-83 and
 * :761-780 make the plugin fail to start below it while the gate is on, which
 * pkg/featuregates/featuregates.go:102-107 makes the default; docs/prerequisites.md:21
 * says the same. The comparison is numeric by dot-separated part, as its
 * version.ParseGeneric and LessThan are.
 */
bool host_imex_gate(const char *version, char *buf, size_t size, char *fix, size_t fix_size)
{
	buf[0] = fix[0] = '\0';
	if (vercmp_rpm(version, HOST_IMEX_DNS_NAMES_MIN) >= 0)
		return false;
	snprintf(
		buf, size,
		"driver %s is older than " HOST_IMEX_DNS_NAMES_MIN
		", which NVIDIA's DRA driver needs for its default feature gate IMEXDaemonsWithDNSNames: its ComputeDomain kubelet plugin refuses to start",
		version);
	snprintf(fix, fix_size,
		 "install " HOST_IMEX_DNS_NAMES_MIN
		 " or later, or set the DRA driver's featureGates.IMEXDaemonsWithDNSNames=false");
	return true;
}

/*
 * The GPUs of NVIDIA's HGX baseboards with NVLink 5 switches behind the ConnectX bridge:
 * B200 (2901, NVIDIA's MIG user guide as expose/mig.c cites it). B300's id is not named
 * here: no source read for this gives it, and no id is guessed; its nodes are told by their
 * management ports all the same.
 */
static const struct {
	uint16_t device;
	const char *name;
} nvlink5_gpus[] = {
	{0x2901, "B200"},
};

bool host_nvsdm_wanted(const struct host *h, char *buf, size_t size)
{
	buf[0] = '\0';
	/* NVIDIA/gpu-driver-container ubuntu24.04/install.sh:59: no arm64 libnvsdm. */
	if (strcmp(h->arch, "x86_64") != 0)
		return false;
	if (h->nvlink.n_ports > 0) {
		snprintf(buf, size, "%zu NVLink 5 management port(s)", h->nvlink.n_ports);
		return true;
	}
	for (size_t i = 0; i < h->n_gpus; i++) {
		for (size_t j = 0; j < sizeof(nvlink5_gpus) / sizeof(nvlink5_gpus[0]); j++) {
			if (h->gpus[i].vendor == 0x10de &&
			    h->gpus[i].device == nvlink5_gpus[j].device) {
				snprintf(buf, size, "GPU %04x:%04x (%s)", h->gpus[i].vendor,
					 h->gpus[i].device, nvlink5_gpus[j].name);
				return true;
			}
		}
	}
	return false;
}

void host_nvsdm_fix(unsigned long branch, char *buf, size_t size)
{
	if (branch < HOST_NVSDM_FIRST_BRANCH)
		snprintf(
			buf, size,
			"install a driver of branch %d or later built with build-driver-package --nvsdm (NVIDIA's libnvsdm package of its version)",
			HOST_NVSDM_FIRST_BRANCH);
	else
		snprintf(
			buf, size,
			"build the driver's package with build-driver-package --nvsdm (NVIDIA's libnvsdm package of its version)");
}
