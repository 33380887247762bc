// SPDX-License-Identifier: Apache-2.0
/*
 * doctor's NVLink 5 telemetry line: on an x86_64 node whose NVSwitches sit behind NVLink 5
 * management ports (host_scan_nvlink: the ConnectX functions whose VPD says SW_MNG, the test
 * NVIDIA's driver container makes before it installs libnvsdm: gpu-driver-container
 * ubuntu24.04/precompiled/nvidia-driver:98-113,254-260) or with an HGX B200 whose ports are
 * not visible (host_nvsdm_wanted, as coverage decides it), DCGM, and so dcgm-exporter, reads
 * the switches and their links through NVSDM, loaded by the bare name libnvsdm.so.1 (DCGM
 * sdk/nvidia/nvsdm/loader/nvsdm_loader.cpp:90,181) from the driver's libraries a container
 * is given: the installed version's lib64/. Without it DCGM logs "Could not load NVSDM"
 * (NVIDIA/gpu-operator issue 1405) and exports no NVSwitch metrics, while the GPUs serve:
 * so a warning, never a failure. No line on other nodes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/agent.h"
#include "cmd/cmd.h"
#include "cmd/doctor_checks.h"
#include "host/host.h"
#include "stage/stage.h"
#include "util/fs.h"

#define NVSDM_SONAME "libnvsdm.so.1"

/* Whether the installed version's lib64/ has libnvsdm.so.1 (a file, or a link to one in it). */
static bool installed_has_nvsdm(int root_fd, const struct config *c, const struct nodestate *s)
{
	_cleanup_(publish_freep) struct installdir *dir = NULL;
	_cleanup_close_ int lib_fd = -1;
	struct stat st;
	struct err e;

	err_clear(&e);
	if (publish_open(root_fd, c->install_dir, false, &dir, &e) != 0 || !dir)
		return false;
	lib_fd = publish_version_subdir(dir, s->install_id, "lib64", &e);
	if (lib_fd < 0)
		return false;
	return fstatat(lib_fd, NVSDM_SONAME, &st, 0) == 0 && S_ISREG(st.st_mode);
}

void doctor_check_nvsdm(struct doctor *d, int root_fd, const struct config *c,
			const struct nodestate *s)
{
	const char *v = s->manifest.driver_version;
	char what[96], head[128], how[192], fix[256];

	/* As coverage decides it: management ports, or an HGX GPU whose are not visible. */
	if (!host_nvsdm_wanted(&s->host, what, sizeof(what)))
		return;
	if (s->host.nvlink.n_ports > 0)
		snprintf(head, sizeof(head), "NVLink 5 switches behind %zu management port(s)",
			 s->host.nvlink.n_ports);
	else
		snprintf(head, sizeof(head), "NVLink 5 switches of %s", what);
	if (!s->installed) {
		doctor_add(d, V_SKIP, "dcgm nvswitch", NULL, "%s; no driver is installed", head);
		return;
	}
	if (installed_has_nvsdm(root_fd, c, s)) {
		doctor_add(d, V_OK, "dcgm nvswitch", NULL,
			   "%s; the installed driver %s has lib64/" NVSDM_SONAME
			   ", which DCGM (dcgm-exporter) loads for their telemetry",
			   head, v);
		return;
	}
	host_nvsdm_fix(strtoul(v, NULL, 10), how, sizeof(how));
	snprintf(fix, sizeof(fix), "%s; the GPUs serve without it", how);
	doctor_add(
		d, V_WARN, "dcgm nvswitch", fix,
		"%s; the installed driver %s has no lib64/" NVSDM_SONAME
		": DCGM (dcgm-exporter) cannot load NVSDM and reports no NVSwitch or NVLink metrics",
		head, v);
}
