// SPDX-License-Identifier: Apache-2.0
/*
 * doctor's IMEX check: on a node whose GPUs belong to a multi-node NVLink domain (GB200,
 * GB300 NVL72: host_imex_first), a job across nodes needs NVIDIA's IMEX daemon from the
 * installed version (nvidia-imex and nvidia-imex-ctl in its usr/bin/, the programs
 * themselves, which the DRA driver's CDI spec mounts from the driver root: design.md,
 * "Multi-node NVLink: IMEX") and the loaded driver's IMEX channels (the chrdev
 * nvidia-caps-imex-channels in /proc/devices, from branch 550); with --imex-channel0 also
 * the host's channel0 at the kernel's major. The node still serves single-node jobs without
 * them; the check fails all the same, so that an NVL72 pool is not taken for whole. A driver
 * older than the GPU's first release (host_imex_lack) fails too: it drives neither the GPU
 * nor its IMEX. A driver older than the DRA driver's default feature gate
 * IMEXDaemonsWithDNSNames needs (host_imex_gate) is a warning: IMEX runs, ComputeDomains do
 * not with the gate on. Where a driver is loaded, that one is judged for the GPU and the
 * gate: the DRA driver reads the loaded version through NVML (k8s-dra-driver-gpu at
 * 2240711, cmd/compute-domain-kubelet-plugin/nvlib.go:125-134, SystemGetDriverVersion, which
 * device_state.go:761-780 holds to the gate's floor), so with a reload pending (the "loaded"
 * check) the installed version is not what it refuses or accepts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "agent/agent.h"
#include "cmd/cmd.h"
#include "cmd/doctor_checks.h"
#include "host/host.h"
#include "kernel/kernel.h"
#include "stage/stage.h"
#include "util/fs.h"
#include "util/str.h"
#include "util/vercmp.h"

/*
 * Whether the installed version's usr/bin/ has both IMEX programs, each a regular file with
 * an execute bit, not followed through a link: what nvcdi mounts from the driver root
 * (stage/locate.c links usr/bin/NAME to the program itself; bin/NAME may be our launcher).
 */
static bool installed_has_imex(int root_fd, const struct config *c, const struct nodestate *s)
{
	static const char *const progs[] = {"nvidia-imex", "nvidia-imex-ctl"};
	_cleanup_close_ int bin_fd = doctor_installed_subdir(root_fd, c, s, "usr/bin");
	struct stat st;

	if (bin_fd < 0)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(progs); i++) {
		if (fstatat(bin_fd, progs[i], &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || !(st.st_mode & 0111))
			return false;
	}
	return true;
}

/*
 * The line of a node whose IMEX is in place (WHAT says what was found): ok, or a warning
 * with its fix where driver V is older than the DRA driver's default gate needs. V is the
 * loaded driver where one is (the DRA driver reads its version through NVML), else the
 * installed INST; where the installed one is new enough, loading it is the fix.
 */
static void imex_in_place(struct doctor *d, const char *gpu, const char *v, const char *inst,
			  const char *what)
{
	char gate[256], fix[sizeof(d->checks[0].fix)];

	if (!host_imex_gate(v, gate, sizeof(gate), fix, sizeof(fix))) {
		doctor_add(d, V_OK, "imex", NULL, "%s; %s", gpu, what);
		return;
	}
	if (vercmp_rpm(inst, HOST_IMEX_DNS_NAMES_MIN) >= 0)
		str_fmt_cut(
			fix, sizeof(fix),
			"drain the node and re-run install, or reboot: either loads the installed %s; or set the DRA driver's featureGates.IMEXDaemonsWithDNSNames=false",
			inst);
	doctor_add(d, V_WARN, "imex", fix, "%s; %s; %s", gpu, what, gate);
}

/*
 * channel0 (--imex-channel0) against MAJOR: "" when it is right, else what is wrong, judged
 * as install judges it (devnodes_imex_channel0: a link at its directory is not followed),
 * and in FIX what to do: re-run install, or first remove what install refuses.
 */
static void channel0_wrong(int root_fd, int major, char *buf, size_t size, char *fix,
			   size_t fix_size)
{
	dev_t rdev = 0;
	struct err e;
	int r;

	err_clear(&e);
	r = devnodes_imex_channel0(root_fd, &rdev, &e);
	buf[0] = '\0';
	str_fmt_cut(fix, fix_size, "re-run install with --imex-channel0: it makes it");
	if (r < 0) {
		str_fmt_cut(buf, size, "%s", e.msg);
		str_fmt_cut(fix, fix_size, "%s; then re-run install", e.hint);
	} else if (r == 0) {
		str_fmt_cut(buf, size, "%s is missing", DEVNODES_IMEX_CHANNEL0);
	} else if (major(rdev) != (unsigned)major || minor(rdev) != 0) {
		str_fmt_cut(buf, size, "%s is %u:%u, the kernel's channel 0 is %d:0",
			    DEVNODES_IMEX_CHANNEL0, major(rdev), minor(rdev), major);
	}
}

/*
 * The fix for ROW's GPU where the installed driver lacks what KIND says: a driver new enough
 * built with IMEX, one that also serves ComputeDomains (host_imex_fix_version).
 */
static void imex_fix(char *fix, size_t size, const struct host_imex_gpu *row,
		     enum host_imex_lack kind)
{
	str_fmt_cut(
		fix, size,
		"install a driver %s or later built with build-driver-package --imex (NVIDIA's nvidia-imex package of its version%s)",
		host_imex_fix_version(row),
		kind == HOST_IMEX_NO_PROGRAMS ? "; single-node jobs run without it" : "");
}

void doctor_check_imex(struct doctor *d, int root_fd, const struct config *c,
		       const struct nodestate *s)
{
	const struct host_imex_gpu *row = NULL;
	const struct gpu *g = host_imex_first(&s->host, &row);
	char gpu[128], lack[160], fix[sizeof(d->checks[0].fix)], wrong[160], what[320];
	const char *v = s->manifest.driver_version, *live = s->loaded_version;
	enum host_imex_lack kind;
	int major;

	if (!g) {
		doctor_add(d, V_OK, "imex", NULL,
			   "no GPU here needs IMEX (multi-node NVLink: GB200, GB300)");
		return;
	}
	snprintf(gpu, sizeof(gpu), "GPU %04x:%04x (%s) needs IMEX for jobs across nodes", g->vendor,
		 g->device, row->name);
	if (!s->installed) {
		doctor_add(d, V_SKIP, "imex", NULL, "%s; no driver is installed", gpu);
		return;
	}
	kind = host_imex_lack(v, installed_has_imex(root_fd, c, s), row, lack, sizeof(lack));
	if (kind != HOST_IMEX_SERVED) {
		imex_fix(fix, sizeof(fix), row, kind);
		doctor_add(d, V_FAIL, "imex", fix, "%s; the installed driver %s: %s", gpu, v, lack);
		return;
	}
	if (!live[0]) {
		snprintf(
			what, sizeof(what),
			"the installed driver %s has nvidia-imex and nvidia-imex-ctl (no driver loaded: its channels not checked)",
			v);
		imex_in_place(d, gpu, v, v, what);
		return;
	}
	/* Another driver loaded (a reload pending): it is what the GPUs and the DRA driver see. */
	if (host_imex_lack(live, true, row, lack, sizeof(lack)) != HOST_IMEX_SERVED) {
		str_fmt_cut(
			fix, sizeof(fix),
			"drain the node and re-run install, or reboot: either loads the installed %s",
			v);
		doctor_add(d, V_FAIL, "imex", fix, "%s; the loaded driver %s: %s", gpu, live, lack);
		return;
	}
	imex_fix(fix, sizeof(fix), row, HOST_IMEX_NO_PROGRAMS);
	major = devnodes_imex_major(root_fd);
	if (major <= 0) {
		doctor_add(d, V_FAIL, "imex", fix,
			   "%s; the loaded driver %s registers no " DEVNODES_IMEX_CHRDEV
			   " in /proc/devices",
			   gpu, live);
		return;
	}
	wrong[0] = '\0';
	if (c->imex_channel0)
		channel0_wrong(root_fd, major, wrong, sizeof(wrong), fix, sizeof(fix));
	if (wrong[0]) {
		doctor_add(d, V_FAIL, "imex", fix, "%s; %s", gpu, wrong);
		return;
	}
	if (strcmp(live, v) != 0)
		str_fmt_cut(
			what, sizeof(what),
			"the installed driver %s has nvidia-imex and nvidia-imex-ctl, the loaded driver %s's " DEVNODES_IMEX_CHRDEV
			" is major %d%s",
			v, live, major, c->imex_channel0 ? ", channel0 in place" : "");
	else
		str_fmt_cut(
			what, sizeof(what),
			"the installed driver %s has nvidia-imex and nvidia-imex-ctl, the kernel's " DEVNODES_IMEX_CHRDEV
			" is major %d%s",
			v, major, c->imex_channel0 ? ", channel0 in place" : "");
	imex_in_place(d, gpu, live, v, what);
}
