/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node's health as the agent judges it, from what it observed: whether a CUDA job can
 * run now, and if not the first reason why; the Xids seen; and the metrics that say so.
 * Pure: the agent gathers the observations (agent/look.c), this decides and renders.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/xid.h"

/* Why the node is not ready, first cause first; each is the metric's reason label. */
enum health_reason {
	HEALTH_READY,
	HEALTH_NOT_INSTALLED, /* no driver installed */
	HEALTH_NOT_LOADED,    /* no nvidia module loaded */
	HEALTH_OTHER_LOADED,  /* a module of another version than the installed one */
	HEALTH_NVML,	      /* NVML does not answer as the installed driver should */
	HEALTH_XID,	      /* a GPU reported an Xid that needs a reset or a reboot */
	HEALTH_FABRIC,	      /* an NVSwitch system without Fabric Manager running */
	HEALTH_CDI,	      /* two CDI specs define our kind's devices: none resolves */
	HEALTH_CUDA,	      /* CUDA does not initialise or take a context on every GPU */
	HEALTH_N_REASONS,
};

const char *health_reason_name(enum health_reason r);

/* What the agent observed in one look at the node; a string is "" when not known. */
struct health_input {
	const char *installed;	  /* the installed version, or NULL */
	const char *loaded;	  /* the live nvidia module's version, or "" */
	const char *nvml_error;	  /* NULL when NVML answered as it should */
	const char *fatal_xid;	  /* the fatal Xid in effect ("Xid 79 on 0000:3b:00"), or NULL */
	const char *fabric_error; /* NVSwitches and no Fabric Manager running: why, or NULL */
	const char *cdi_error;	  /* why the node's CDI devices cannot be resolved, or NULL */
	const char *cuda_error;	  /* NULL when CUDA answered (or was not asked this time) */
};

/* Judges IN: HEALTH_READY, or the first reason it is not, with the cause into CAUSE. */
enum health_reason health_judge(const struct health_input *in, char *cause, size_t size);

#define HEALTH_MAX_XID_SERIES 64

/* The state the agent publishes, and its history. */
struct health {
	enum health_reason reason; /* now */
	char cause[512];
	bool ever_ready;
	double time_to_ready_s; /* from the agent's start to its first ready, once ready */
	uint64_t transitions;	/* ready <-> not ready, after the first judgement */
	bool judged;
	struct {
		char bdf[XID_BDF_SIZE];
		unsigned code;
		uint64_t count;
	} xids[HEALTH_MAX_XID_SERIES];
	size_t n_xids;
	uint64_t xids_dropped; /* Xids of series beyond HEALTH_MAX_XID_SERIES */
};

/*
 * Records a judgement at NOW_S seconds since the agent started. Returns true when the
 * readiness changed (or this is the first judgement).
 */
bool health_update(struct health *h, enum health_reason r, const char *cause, double now_s);

/* Counts an Xid. */
void health_count_xid(struct health *h, const struct xid_event *ev);

/* The agent's Prometheus text (docs/metrics.md, "The node agent"), malloc'd, or NULL. */
char *health_render(const struct health *h, const char *version);
