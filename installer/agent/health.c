// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/health.h"
#include "expose/expose.h"
#include "util/cleanup.h"

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

/* Appends to a growing string; a failed allocation empties it for good (*S NULL). */
static void add(char **s, size_t *len, const char *fmt, ...) _printf_(3, 4);
static void add(char **s, size_t *len, const char *fmt, ...)
{
	va_list ap;
	char *line = NULL, *grown;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (n < 0 || !*s) {
		free(n < 0 ? NULL : line);
		free(*s);
		*s = NULL;
		return;
	}
	grown = realloc(*s, *len + (size_t)n + 1);
	if (!grown) {
		free(line);
		free(*s);
		*s = NULL;
		return;
	}
	memcpy(grown + *len, line, (size_t)n + 1);
	*len += (size_t)n;
	*s = grown;
	free(line);
}

#define P "nvidia_driver_installer_agent_"

static void render_xids(const struct health *h, char **s, size_t *len)
{
	add(s, len,
	    "# HELP " P
	    "xid_errors_total Xid errors the driver reported since the agent started, by GPU (PCI address as the driver prints it), Xid and class: fatal (needs a GPU reset or a reboot: readiness withdrawn), application, other.\n"
	    "# TYPE " P "xid_errors_total counter\n");
	for (size_t i = 0; i < h->n_xids; i++)
		add(s, len, P "xid_errors_total{gpu=\"%s\",xid=\"%u\",class=\"%s\"} %llu\n",
		    h->xids[i].bdf, h->xids[i].code, xid_class_name(xid_classify(h->xids[i].code)),
		    (unsigned long long)h->xids[i].count);
	add(s, len,
	    "# HELP " P
	    "xid_series_dropped_total Xids not counted by series: more than %d GPU and Xid pairs.\n"
	    "# TYPE " P "xid_series_dropped_total counter\n" P "xid_series_dropped_total %llu\n",
	    HEALTH_MAX_XID_SERIES, (unsigned long long)h->xids_dropped);
}

char *health_render(const struct health *h, const char *version)
{
	char *s = strdup(""), v[256];
	size_t len = 0;

	add(&s, &len,
	    METRICS_MARK
	    "agent_ready Whether a CUDA job can run on this node now, as the node agent last judged it.\n"
	    "# TYPE " P "ready gauge\n" P "ready{version=\"%s\"} %d\n",
	    metrics_label_escape(version, v, sizeof(v)), h->reason == HEALTH_READY);
	add(&s, &len,
	    "# HELP " P
	    "not_ready Why the node is not ready: the first failing check (not_installed, not_loaded, other_version_loaded, nvml, xid, fabric_manager, cdi, cuda); 0 for the others.\n"
	    "# TYPE " P "not_ready gauge\n");
	for (int r = HEALTH_NOT_INSTALLED; r < HEALTH_N_REASONS; r++)
		add(&s, &len, P "not_ready{reason=\"%s\"} %d\n", reason_names[r],
		    h->reason == (enum health_reason)r);
	if (h->ever_ready)
		add(&s, &len,
		    "# HELP " P
		    "time_to_ready_seconds From the agent's start to the node's first ready.\n"
		    "# TYPE " P "time_to_ready_seconds gauge\n" P "time_to_ready_seconds %.3f\n",
		    h->time_to_ready_s);
	add(&s, &len,
	    "# HELP " P
	    "ready_transitions_total Changes between ready and not ready since the agent started.\n"
	    "# TYPE " P "ready_transitions_total counter\n" P "ready_transitions_total %llu\n",
	    (unsigned long long)h->transitions);
	render_xids(h, &s, &len);
	return s;
}
