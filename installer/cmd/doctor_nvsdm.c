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
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "cmd/cmd.h"
#include "cmd/doctor_checks.h"
#include "host/host.h"
#include "stage/stage.h"
#include "util/fs.h"

#define NVSDM_SONAME "libnvsdm.so.1"

/*
 * Whether NAME in LIB_FD (lib64/) is a regular file, or a link to one beside it a few links
 * deep, as make-repo counts a package's libnvsdm (scan_package: a link whose target has no
 * '/'). A link is judged by its text and never followed by the kernel: an absolute one
 * would resolve in this process's mount namespace, not under the host root, and in a
 * container it names whatever the container has there.
 */
static bool lib64_has_file(int lib_fd, const char *name)
{
	char buf[2][256];

	for (int depth = 0; depth < 5; depth++) {
		struct stat st;
		ssize_t n;

		if (fstatat(lib_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			return false;
		if (S_ISREG(st.st_mode))
			return true;
		if (!S_ISLNK(st.st_mode))
			return false;
		n = readlinkat(lib_fd, name, buf[depth % 2], sizeof(buf[0]));
		if (n <= 0 || (size_t)n >= sizeof(buf[0]))
			return false;
		buf[depth % 2][n] = '\0';
		name = buf[depth % 2];
		if (strchr(name, '/') || strcmp(name, "..") == 0)
			return false;
	}
	return false;
}

/* Whether the installed version's lib64/ has libnvsdm.so.1 (a file, or a link to one in it). */
static bool installed_has_nvsdm(int root_fd, const struct config *c, const struct nodestate *s)
{
	_cleanup_close_ int lib_fd = doctor_installed_subdir(root_fd, c, s, "lib64");

	if (lib_fd < 0)
		return false;
	return lib64_has_file(lib_fd, NVSDM_SONAME);
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
