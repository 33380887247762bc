// SPDX-License-Identifier: Apache-2.0
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/health.h"
#include "util/cleanup.h"
#include "util/prom.h"

static const char *const reason_names[HEALTH_N_REASONS] = {
	[HEALTH_READY] = "ready",
	[HEALTH_NOT_INSTALLED] = "not_installed",
	[HEALTH_NOT_LOADED] = "not_loaded",
	[HEALTH_OTHER_LOADED] = "other_version_loaded",
	[HEALTH_NVML] = "nvml",
	[HEALTH_XID] = "xid",
	[HEALTH_FABRIC] = "fabric_manager",
	[HEALTH_CDI] = "cdi",
	[HEALTH_CUDA] = "cuda",
};

const char *health_reason_name(enum health_reason r)
{
	return r < HEALTH_N_REASONS ? reason_names[r] : "unknown";
}

enum health_reason health_judge(const struct health_input *in, char *cause, size_t size)
{
	if (!in->installed) {
		snprintf(cause, size, "no driver is installed");
		return HEALTH_NOT_INSTALLED;
	}
	if (!in->loaded || !in->loaded[0]) {
		snprintf(cause, size, "the nvidia module is not loaded (installed: %s)",
			 in->installed);
		return HEALTH_NOT_LOADED;
	}
	if (strcmp(in->loaded, in->installed) != 0) {
		snprintf(cause, size, "the loaded driver is %s, the installed one %s", in->loaded,
			 in->installed);
		return HEALTH_OTHER_LOADED;
	}
	if (in->nvml_error) {
		snprintf(cause, size, "%s", in->nvml_error);
		return HEALTH_NVML;
	}
	if (in->fatal_xid) {
		snprintf(cause, size, "%s: the GPU needs a reset or the node a reboot",
			 in->fatal_xid);
		return HEALTH_XID;
	}
	if (in->fabric_error) {
		snprintf(cause, size, "%s", in->fabric_error);
		return HEALTH_FABRIC;
	}
	if (in->cdi_error) {
		snprintf(cause, size, "%s", in->cdi_error);
		return HEALTH_CDI;
	}
	if (in->cuda_error) {
		snprintf(cause, size, "%s", in->cuda_error);
		return HEALTH_CUDA;
	}
	cause[0] = '\0';
	return HEALTH_READY;
}

bool health_update(struct health *h, enum health_reason r, const char *cause, double now_s)
{
	bool was_ready = h->judged && h->reason == HEALTH_READY, ready = r == HEALTH_READY;
	bool changed = !h->judged || was_ready != ready;

	if (h->judged && changed)
		h->transitions++;
	if (ready && !h->ever_ready) {
		h->ever_ready = true;
		h->time_to_ready_s = now_s;
	}
	h->judged = true;
	h->reason = r;
	snprintf(h->cause, sizeof(h->cause), "%s", cause);
	return changed;
}

void health_count_xid(struct health *h, const struct xid_event *ev)
{
	for (size_t i = 0; i < h->n_xids; i++)
		if (h->xids[i].code == ev->code && strcmp(h->xids[i].bdf, ev->bdf) == 0) {
			h->xids[i].count++;
			return;
		}
	if (h->n_xids == HEALTH_MAX_XID_SERIES) {
		h->xids_dropped++;
		return;
	}
	snprintf(h->xids[h->n_xids].bdf, sizeof(h->xids[0].bdf), "%s", ev->bdf);
	h->xids[h->n_xids].code = ev->code;
	h->xids[h->n_xids].count = 1;
	h->n_xids++;
}

#define P "nvidia_driver_installer_agent_"
#define STR_(x) #x
#define STR(x) STR_(x)

static const struct prom_family
	fam_ready =
		{P "ready", PROM_GAUGE,
		 "Whether a CUDA job can run on this node now, as the node agent last judged it."},
	fam_not_ready =
		{P "not_ready", PROM_GAUGE,
		 "Why the node is not ready: the first failing check (not_installed, not_loaded, other_version_loaded, nvml, xid, fabric_manager, cdi, cuda); 0 for the others."},
	fam_time_to_ready = {P "time_to_ready_seconds", PROM_GAUGE,
			     "From the agent's start to the node's first ready.", 3},
	fam_transitions = {P "ready_transitions_total", PROM_COUNTER,
			   "Changes between ready and not ready since the agent started."},
	fam_xids =
		{P "xid_errors_total", PROM_COUNTER,
		 "Xid errors the driver reported since the agent started, by GPU (PCI address as the driver prints it), Xid and class: fatal (needs a GPU reset or a reboot: readiness withdrawn), application, other."},
	fam_xids_dropped = {P "xid_series_dropped_total", PROM_COUNTER,
			    "Xids not counted by series: more than " STR(
				    HEALTH_MAX_XID_SERIES) " GPU and Xid pairs."};

static void render_xids(const struct health *h, FILE *f)
{
	prom_head(f, &fam_xids);
	for (size_t i = 0; i < h->n_xids; i++) {
		char code[16];

		snprintf(code, sizeof(code), "%u", h->xids[i].code);
		prom_sample(f, &fam_xids,
			    (const struct prom_label[]){
				    {"gpu", h->xids[i].bdf},
				    {"xid", code},
				    {"class", xid_class_name(xid_classify(h->xids[i].code))}},
			    3, (double)h->xids[i].count);
	}
	prom_single(f, &fam_xids_dropped, (double)h->xids_dropped);
}

char *health_render(const struct health *h, const char *version)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	if (!f)
		return NULL;
	prom_head(f, &fam_ready);
	prom_sample(f, &fam_ready, &(struct prom_label){"version", version}, 1,
		    h->reason == HEALTH_READY);
	prom_head(f, &fam_not_ready);
	for (int r = HEALTH_NOT_INSTALLED; r < HEALTH_N_REASONS; r++)
		prom_sample(f, &fam_not_ready, &(struct prom_label){"reason", reason_names[r]}, 1,
			    h->reason == (enum health_reason)r);
	if (h->ever_ready)
		prom_single(f, &fam_time_to_ready, h->time_to_ready_s);
	prom_single(f, &fam_transitions, (double)h->transitions);
	render_xids(h, f);
	if (fclose(f) != 0) {
		free(s);
		return NULL;
	}
	return s;
}
