// SPDX-License-Identifier: Apache-2.0
/*
 * doctor's GPU partitions and sharing checks: the layout a pool asks for against what each
 * GPU has and NVML shows, and MPS or time-sharing as GKE's gpu_config.json asks.
 */
#include <fcntl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "cmd/cmd.h"
#include "cmd/doctor_checks.h"
#include "cmd/pending_failed.h"
#include "cmd/session.h"
#include "host/host.h"
#include "kernel/kernel.h"
#include "source/source.h"
#include "util/jsonc.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/out.h"
#include "util/str.h"

/* Whether MPS's control daemon serves: its control socket in the pipe directory. */
static bool mps_serves(int root_fd)
{
	struct err e;
	struct stat st;
	_cleanup_close_ int fd = fs_open_in_root(root_fd, MIG_MPS_PIPE_DIR "/control",
						 O_PATH | O_NOFOLLOW | O_CLOEXEC, 0, 0, &e);

	return fd >= 0 && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
}

/*
 * Whether MPS's pipe directory, where there is one, is root's alone (expose/expose.h):
 * false with E saying whose it is. Looked at, never made.
 */
static bool mps_dir_ours(int root_fd, struct err *e)
{
	_cleanup_close_ int fd = fs_own_dir_in_root(root_fd, MIG_MPS_PIPE_DIR, 0, false, e);

	return fd >= 0 || err_errnum(e) == ENOENT;
}

/* What the pool's GPU sharing asks of the node beyond the device plugin (MPS's daemon). */
static void check_sharing(struct doctor *d, int root_fd, const struct mig_request *req,
			  const char *what)
{
	struct err e;

	err_clear(&e);
	if (req->sharing == MIG_SHARING_MPS && !mps_dir_ours(root_fd, &e))
		doctor_add(
			d, V_FAIL, "partitions",
			"remove the directory (rm -r " MIG_MPS_PIPE_DIR
			"): the node agent makes it again, root's alone, and starts MPS's control daemon",
			"%s; MPS with %u clients per GPU: %s", what, req->max_shared_clients,
			e.msg);
	else if (req->sharing == MIG_SHARING_MPS && mps_serves(root_fd))
		doctor_add(d, V_OK, "partitions", NULL,
			   "%s; MPS with %u clients per GPU: the control daemon serves (%s)", what,
			   req->max_shared_clients, MIG_MPS_PIPE_DIR);
	else if (req->sharing == MIG_SHARING_MPS)
		doctor_add(
			d, V_WARN, "partitions",
			"the node agent runs it (nvidia-cuda-mps-control from the install dir's bin/) while the pool asks for MPS: see the agent's log and its metrics",
			"%s; MPS with %u clients per GPU: no control daemon serves (%s/control)",
			what, req->max_shared_clients, MIG_MPS_PIPE_DIR);
	else if (req->sharing == MIG_SHARING_TIME)
		doctor_add(d, V_OK, "partitions", NULL,
			   "%s; time-sharing with %u clients per GPU (the device plugin's part)",
			   what, req->max_shared_clients);
	else
		doctor_add(d, V_OK, "partitions", NULL, "%s", what);
}

/*
 * What the layout ONE means on GPU, by its PCI id (GKE's partitioner's tables): its size
 * and model into *MS and *M (both NULL where the model is not known here and NVML answers,
 * which then judges alone). Returns 0, or -1 with E naming the sizes the GPU has.
 */
static int profile_on_gpu(const struct part_one *one, const struct gpu *gpu, bool nvml_ok,
			  const struct mig_size **ms, const struct mig_model **m, struct err *e)
{
	struct mig_request req = {.sharing = MIG_SHARING_NONE};

	*ms = NULL;
	*m = mig_model_of(gpu->vendor, gpu->device);
	if (!*m && nvml_ok)
		return 0;
	snprintf(req.partition_size, sizeof(req.partition_size), "%s", one->profile);
	return mig_size_for_gpu(&req, gpu->vendor, gpu->device, ms, e);
}

static bool names_gpus(const struct part_layout *l)
{
	for (unsigned i = 0; i < PART_LAYOUT_GPUS; i++)
		if (l->named[i])
			return true;
	return false;
}

/* Whether GPU I of R holds what ONE asks for (EXPECTED MIG devices, 0: any number). */
static bool gpu_in_place(const struct nvml_report *r, unsigned i, const struct part_one *one,
			 unsigned expected)
{
	unsigned n = 0, match = 0;

	for (unsigned k = 0; k < r->n_migs; k++) {
		n += r->migs[k].gpu == i;
		match += r->migs[k].gpu == i && strcmp(r->migs[k].profile, one->profile) == 0;
	}
	switch (one->kind) {
	case PART_KEEP:
		return true;
	case PART_DISABLED:
		return r->gpus[i].mig_mode <= 0;
	case PART_ENABLED:
		return r->gpus[i].mig_mode == 1;
	case PART_PROFILE:
		break;
	}
	return r->gpus[i].mig_mode == 1 && n > 0 && match == n && (!expected || n == expected);
}

/* Whether NVML shows L in place: the MIG modes, the MIG devices and their profiles. */
static void check_layout_live(struct doctor *d, const struct part_layout *l,
			      const struct nodestate *s, const char *what, const unsigned *expected)
{
	const struct nvml_report *r = &s->nvml;
	unsigned on = 0, pending = 0, match = 0, off = 0;

	if (!s->nvml_ok) {
		doctor_add(d, V_WARN, "partitions", "see the nvml line",
			   "%s asked for (%s); NVML does not answer: not checked", what, l->source);
		return;
	}
	for (unsigned i = 0; i < r->n_gpus; i++) {
		struct part_one one = part_layout_for(l, i);

		on += r->gpus[i].mig_mode == 1;
		pending += r->gpus[i].mig_pending >= 0 &&
			   r->gpus[i].mig_pending != r->gpus[i].mig_mode;
		off += !gpu_in_place(r, i, &one, i < NVML_MAX_GPUS ? expected[i] : 0);
	}
	for (unsigned i = 0; i < r->n_migs; i++) {
		struct part_one one = part_layout_for(l, r->migs[i].gpu);

		match += strcmp(r->migs[i].profile, one.profile) == 0;
	}
	if (pending)
		doctor_add(
			d, V_FAIL, "partitions",
			"reboot the node (or, with the GPUs idle, nvidia-smi -r); the installer's next run makes the instances",
			"%s asked for (%s); MIG mode waits for a GPU reset on %u GPU(s)", what,
			l->source, pending);
	else if (!off)
		doctor_add(d, V_OK, "partitions", NULL,
			   "%s (%s); in place: %u GPU(s) in MIG mode, %u MIG devices", what,
			   l->source, on, r->n_migs);
	else
		doctor_add(
			d, V_WARN, "partitions",
			"run the installer again (the DaemonSet's next start), with the GPUs idle: it makes the layout",
			"%s asked for (%s); not in place: %u of %u GPUs in MIG mode, %u MIG devices, %u of them as asked",
			what, l->source, on, r->n_gpus, r->n_migs, match);
}

/*
 * The GPU layout asked for (--mig-layout; by default GKE's gpu_config.json): a MIG size
 * each GPU has, and whether NVML shows it in place; a pool's sharing; no line when no
 * layout and no sharing is asked for.
 */
void doctor_check_partitions(struct doctor *d, int root_fd, const struct config *c,
			     const struct nodestate *s)
{
	struct mig_request req = {.sharing = MIG_SHARING_NONE};
	unsigned expected[NVML_MAX_GPUS] = {0};
	struct part_layout l;
	char what[PART_LAYOUT_NAME_MAX + 96];
	struct err e;
	int r;

	err_clear(&e);
	r = strcmp(c->mig_layout, "gke") == 0 ? mig_read_gke_config(root_fd, &req, &e) : 1;
	if (r < 0) {
		doctor_add(
			d, V_WARN, "partitions",
			"correct it: GKE writes it from the node pool's gpu-partition-size and GPU sharing settings",
			"%s; GKE's device plugin ignores such a file too", e.msg);
		return;
	}
	/* The file, read once: its layout, or (no file) none. */
	if (strcmp(c->mig_layout, "gke") == 0)
		part_layout_of_gke(r == 0 ? &req : &(struct mig_request){.partition_size = ""}, &l);
	else if (part_layout_parse(c->mig_layout, root_fd, &l, &e) < 0) {
		doctor_add(d, V_FAIL, "partitions", "correct --mig-layout", "%s", e.msg);
		return;
	}
	if (part_layout_keeps(&l)) {
		if (r == 0)
			check_sharing(d, root_fd, &req, "whole GPUs (no partition size asked for)");
		return;
	}
	part_layout_name(&l, what, sizeof(what));
	if (l.kind == PART_DISABLED && !names_gpus(&l))
		snprintf(what, sizeof(what), "whole GPUs");
	for (size_t i = 0; i < s->host.n_gpus && i < NVML_MAX_GPUS; i++) {
		struct part_one one = part_layout_for(&l, (unsigned)i);
		const struct mig_size *ms;
		const struct mig_model *m;

		if (one.kind != PART_PROFILE)
			continue;
		if (profile_on_gpu(&one, &s->host.gpus[i], s->nvml_ok, &ms, &m, &e) < 0) {
			doctor_add(
				d, V_FAIL, "partitions",
				"ask for a size the GPU has (the node pool's gpu-partition-size, or --mig-layout)",
				"%s", e.msg);
			return;
		}
		expected[i] = ms ? ms->count : 0;
		/* One profile for every GPU: what it means, in GKE's terms. */
		if (i == 0 && ms && l.kind == PART_PROFILE && !names_gpus(&l))
			snprintf(
				what, sizeof(what),
				"MIG %s: %u instances of GPU-instance profile %u on each of %zu %s",
				ms->name, ms->count, ms->profile_id, s->host.n_gpus, m->name);
	}
	check_layout_live(d, &l, s, what, expected);
	if (req.sharing != MIG_SHARING_NONE)
		check_sharing(d, root_fd, &req, what);
}
