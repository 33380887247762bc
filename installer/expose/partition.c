// SPDX-License-Identifier: Apache-2.0
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "expose/partition.h"
#include "kernel/kernel.h"
#include "util/cleanup.h"
#include "util/dlbind.h"
#include "util/log.h"
#include "util/str.h"

/*
 * The slice of nvml.h's MIG interface we call, declared here (the layouts of NVML 12.2's
 * header, the 535 driver's; unchanged since). Profiles are asked for by index
 * (NVML_GPU_INSTANCE_PROFILE_*, NVML_COMPUTE_INSTANCE_PROFILE_*); instances are made and
 * listed by the id the profile's information gives, which is not the index.
 */
typedef int nvml_ret;
typedef void *nvml_device;
typedef void *nvml_gi;
typedef void *nvml_ci;

enum {
	NVML_OK = 0,
	NVML_NOT_SUPPORTED = 3,
	NVML_RESET_REQUIRED = 16,
	NVML_IN_USE = 19,
};

struct gi_profile_info {
	unsigned id, p2p, slices, count, sms, copy, decoders, encoders, jpegs, ofas;
	unsigned long long memory_mb;
};

struct ci_profile_info {
	unsigned id, slices, count, sms, copy, decoders, encoders, jpegs, ofas;
};

struct gi_info {
	nvml_device device;
	unsigned id, profile_id, start, size;
};

struct device_attributes {
	unsigned sms, copy, decoders, encoders, jpegs, ofas, gi_slices, ci_slices;
	unsigned long long memory_mb;
};

struct nvml_memory {
	unsigned long long total, free, used;
};

/* NVML_GPU_INSTANCE_PROFILE_* up to NVML 13's (0x11), and the suffix go-nvlib gives each. */
#define GI_PROFILES 18
#define CI_PROFILES 9
#define MAX_INSTANCES 8
#define PART_MAX_GPUS 16 /* nvml.h's NVML_MAX_GPUS */

static const char *gi_suffix(unsigned index)
{
	switch (index) {
	case 7: /* 1_SLICE_REV1 */
	case 8: /* 2_SLICE_REV1 */
		return "+me";
	case 10: /* 1_SLICE_GFX */
	case 11: /* 2_SLICE_GFX */
	case 12: /* 4_SLICE_GFX */
		return "+gfx";
	case 13: /* 1_SLICE_NO_ME */
	case 14: /* 2_SLICE_NO_ME */
		return "-me";
	case 15: /* 1_SLICE_ALL_ME */
	case 16: /* 2_SLICE_ALL_ME */
		return "+me.all";
	default:
		return "";
	}
}

struct part_api {
	nvml_ret (*mig_mode)(nvml_device, unsigned *, unsigned *);
	nvml_ret (*set_mig_mode)(nvml_device, unsigned, nvml_ret *);
	nvml_ret (*gi_profile)(nvml_device, unsigned, struct gi_profile_info *);
	nvml_ret (*gis)(nvml_device, unsigned, nvml_gi *, unsigned *);
	nvml_ret (*create_gi)(nvml_device, unsigned, nvml_gi *);
	nvml_ret (*destroy_gi)(nvml_gi);
	nvml_ret (*gi_get_info)(nvml_gi, struct gi_info *);
	nvml_ret (*gi_by_id)(nvml_device, unsigned, nvml_gi *);
	nvml_ret (*ci_profile)(nvml_gi, unsigned, unsigned, struct ci_profile_info *);
	nvml_ret (*create_ci)(nvml_gi, unsigned, nvml_ci *);
	nvml_ret (*cis)(nvml_gi, unsigned, nvml_ci *, unsigned *);
	nvml_ret (*destroy_ci)(nvml_ci);
	nvml_ret (*max_migs)(nvml_device, unsigned *);
	nvml_ret (*mig_by_index)(nvml_device, unsigned, nvml_device *);
	nvml_ret (*gi_id)(nvml_device, unsigned *);
	nvml_ret (*ci_id)(nvml_device, unsigned *);
	nvml_ret (*attributes)(nvml_device, struct device_attributes *);
	nvml_ret (*uuid)(nvml_device, char *, unsigned);
	nvml_ret (*memory)(nvml_device, struct nvml_memory *);
	nvml_ret (*count)(unsigned *);
	nvml_ret (*by_index)(unsigned, nvml_device *);
	nvml_ret (*name)(nvml_device, char *, unsigned);
	nvml_ret (*init)(void);
	nvml_ret (*shutdown)(void);
	const char *(*error_string)(nvml_ret);
};

struct part_api *partition_bind(void *h)
{
	static const struct dlbind_sym syms[] = {
		{"nvmlDeviceGetMigMode", offsetof(struct part_api, mig_mode)},
		{"nvmlDeviceSetMigMode", offsetof(struct part_api, set_mig_mode)},
		{"nvmlDeviceGetGpuInstanceProfileInfo", offsetof(struct part_api, gi_profile)},
		{"nvmlDeviceGetGpuInstances", offsetof(struct part_api, gis)},
		{"nvmlDeviceCreateGpuInstance", offsetof(struct part_api, create_gi)},
		{"nvmlGpuInstanceDestroy", offsetof(struct part_api, destroy_gi)},
		{"nvmlGpuInstanceGetInfo", offsetof(struct part_api, gi_get_info)},
		{"nvmlDeviceGetGpuInstanceById", offsetof(struct part_api, gi_by_id)},
		{"nvmlGpuInstanceGetComputeInstanceProfileInfo",
		 offsetof(struct part_api, ci_profile)},
		{"nvmlGpuInstanceCreateComputeInstance", offsetof(struct part_api, create_ci)},
		{"nvmlGpuInstanceGetComputeInstances", offsetof(struct part_api, cis)},
		{"nvmlComputeInstanceDestroy", offsetof(struct part_api, destroy_ci)},
		{"nvmlDeviceGetMaxMigDeviceCount", offsetof(struct part_api, max_migs)},
		{"nvmlDeviceGetMigDeviceHandleByIndex", offsetof(struct part_api, mig_by_index)},
		{"nvmlDeviceGetGpuInstanceId", offsetof(struct part_api, gi_id)},
		{"nvmlDeviceGetComputeInstanceId", offsetof(struct part_api, ci_id)},
		{"nvmlDeviceGetAttributes_v2", offsetof(struct part_api, attributes)},
		{"nvmlDeviceGetUUID", offsetof(struct part_api, uuid)},
		{"nvmlDeviceGetMemoryInfo", offsetof(struct part_api, memory)},
		{"nvmlDeviceGetCount_v2", offsetof(struct part_api, count)},
		{"nvmlDeviceGetHandleByIndex_v2", offsetof(struct part_api, by_index)},
		{"nvmlDeviceGetName", offsetof(struct part_api, name)},
		{"nvmlInit_v2", offsetof(struct part_api, init)},
		{"nvmlShutdown", offsetof(struct part_api, shutdown)},
		{"nvmlErrorString", offsetof(struct part_api, error_string)},
	};
	struct part_api *p = calloc(1, sizeof(*p));

	/* A library without MIG (older than R450) has no MIG devices to tell of. */
	if (p && dlbind(h, syms, ARRAY_SIZE(syms), p)) {
		free(p);
		return NULL;
	}
	return p;
}

void partition_profile_name(const struct part_shape *s, char *buf, size_t size)
{
	const uint64_t gib = 1ull << 30;
	/* In integers: eighths rounded up, then the nearest whole GB (halves up, as Go's). */
	uint64_t eighths = s->total_bytes ? (s->mem_mib * 8 * (1ull << 20) + s->total_bytes - 1) /
						    s->total_bytes
					  : 0;
	uint64_t total_gb = (s->total_bytes + gib - 1) / gib;
	unsigned long long gb = (unsigned long long)((eighths * total_gb + 4) / 8);

	if (s->ci_slices == s->gi_slices)
		snprintf(buf, size, "%ug.%llugb%s", s->gi_slices, gb, s->suffix);
	else
		snprintf(buf, size, "%uc.%ug.%llugb%s", s->ci_slices, s->gi_slices, gb, s->suffix);
}

/* ---- what a GPU has ---------------------------------------------------------------- */

struct gpu_ctx {
	const struct part_api *p;
	nvml_device dev;
	unsigned index;
	char name[96];
	uint64_t total_bytes;
};

/* The name of GPU-instance profile INDEX on G (with a full compute instance), or "". */
static bool gi_profile_named(const struct gpu_ctx *g, unsigned index, struct gi_profile_info *info,
			     char *buf, size_t size)
{
	buf[0] = '\0';
	memset(info, 0, sizeof(*info));
	if (g->p->gi_profile(g->dev, index, info) != NVML_OK || !info->count)
		return false;
	partition_profile_name(&(struct part_shape){.ci_slices = info->slices,
						    .gi_slices = info->slices,
						    .mem_mib = info->memory_mb,
						    .total_bytes = g->total_bytes,
						    .suffix = gi_suffix(index)},
			       buf, size);
	return true;
}

/* Finds PROFILE among G's; else E (EXIT_USAGE) lists the ones G has. Returns 0 or -1. */
static int find_profile(const struct gpu_ctx *g, const char *profile, struct gi_profile_info *ret,
			struct err *e)
{
	char names[512] = "", name[MIG_SIZE_MAX];
	size_t len = 0;

	for (unsigned i = 0; i < GI_PROFILES; i++) {
		if (!gi_profile_named(g, i, ret, name, sizeof(name)))
			continue;
		if (strcmp(name, profile) == 0)
			return 0;
		if (len < sizeof(names))
			len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s",
						len ? ", " : "", name);
	}
	err_set(e, EXIT_USAGE, "GPU %u (%s) has no MIG profile %s; it has %s", g->index, g->name,
		profile, names[0] ? names : "none");
	err_hint(
		e,
		"ask for one of its profiles (--mig-layout all-PROFILE, or the node pool's partition size)");
	return -1;
}

/* The GPU instances of G, each with the index of its profile. Returns how many. */
static unsigned list_gis(const struct gpu_ctx *g, nvml_gi *gis, unsigned *profile_index,
			 unsigned max)
{
	unsigned n = 0;

	for (unsigned i = 0; i < GI_PROFILES && n < max; i++) {
		struct gi_profile_info info;
		nvml_gi found[MAX_INSTANCES];
		unsigned count = MAX_INSTANCES;

		if (g->p->gi_profile(g->dev, i, &info) != NVML_OK ||
		    g->p->gis(g->dev, info.id, found, &count) != NVML_OK)
			continue;
		for (unsigned j = 0; j < count && j < MAX_INSTANCES && n < max; j++) {
			profile_index[n] = i;
			gis[n++] = found[j];
		}
	}
	return n;
}

/* GI's compute instances; FULL set to how many have all of its SLICES. Returns how many. */
static unsigned count_cis(const struct part_api *p, nvml_gi gi, unsigned slices, unsigned *full,
			  nvml_ci *out, unsigned max)
{
	unsigned n = 0;

	*full = 0;
	for (unsigned i = 0; i < CI_PROFILES; i++) {
		struct ci_profile_info info;
		nvml_ci found[MAX_INSTANCES];
		unsigned count = MAX_INSTANCES;

		if (p->ci_profile(gi, i, 0, &info) != NVML_OK ||
		    p->cis(gi, info.id, found, &count) != NVML_OK)
			continue;
		for (unsigned j = 0; j < count && j < MAX_INSTANCES; j++) {
			if (out && n < max)
				out[n] = found[j];
			n++;
			*full += info.slices == slices;
		}
	}
	return n;
}

/* Whether G holds exactly INFO.count instances of INFO, each one whole compute instance. */
static bool layout_matches(const struct gpu_ctx *g, const struct gi_profile_info *want)
{
	nvml_gi gis[MAX_INSTANCES];
	unsigned idx[MAX_INSTANCES], n = list_gis(g, gis, idx, MAX_INSTANCES);

	if (n != want->count)
		return false;
	for (unsigned i = 0; i < n; i++) {
		struct gi_info info;
		unsigned full;

		if (g->p->gi_get_info(gis[i], &info) != NVML_OK || info.profile_id != want->id ||
		    count_cis(g->p, gis[i], want->slices, &full, NULL, 0) != 1 || full != 1)
			return false;
	}
	return true;
}

/* ---- changing it --------------------------------------------------------------------- */

static int nvml_failed(const struct gpu_ctx *g, nvml_ret r, const char *what, struct err *e)
{
	err_set(e, r == NVML_IN_USE ? EXIT_IN_USE : EXIT_DRIVER_CHECK,
		"GPU %u (%s): NVML %s failed: %s (%d)", g->index, g->name, what,
		g->p->error_string(r), r);
	err_hint(
		e,
		r == NVML_IN_USE
			? "drain the node (stop GPU workloads) and run again"
			: "see dmesg for NVRM errors; nvidia-smi mig -lgi shows the GPU's instances");
	return -1;
}

/* Destroys every compute and GPU instance of G. Returns 0 or -1. */
static int destroy_all(const struct gpu_ctx *g, struct err *e)
{
	nvml_gi gis[MAX_INSTANCES];
	unsigned idx[MAX_INSTANCES], n = list_gis(g, gis, idx, MAX_INSTANCES);
	nvml_ret r;

	for (unsigned i = 0; i < n; i++) {
		nvml_ci cis[MAX_INSTANCES];
		unsigned full, nc = count_cis(g->p, gis[i], 0, &full, cis, MAX_INSTANCES);

		for (unsigned j = 0; j < nc && j < MAX_INSTANCES; j++)
			if ((r = g->p->destroy_ci(cis[j])) != NVML_OK)
				return nvml_failed(g, r, "nvmlComputeInstanceDestroy", e);
		if ((r = g->p->destroy_gi(gis[i])) != NVML_OK)
			return nvml_failed(g, r, "nvmlGpuInstanceDestroy", e);
	}
	return 0;
}

/* One GPU instance of INFO with one compute instance of all its slices. Returns 0 or -1. */
static int create_one(const struct gpu_ctx *g, const struct gi_profile_info *info, struct err *e)
{
	nvml_gi gi;
	nvml_ci ci;
	nvml_ret r = g->p->create_gi(g->dev, info->id, &gi);

	if (r != NVML_OK)
		return nvml_failed(g, r, "nvmlDeviceCreateGpuInstance", e);
	for (unsigned i = 0; i < CI_PROFILES; i++) {
		struct ci_profile_info ci_info;

		if (g->p->ci_profile(gi, i, 0, &ci_info) != NVML_OK ||
		    ci_info.slices != info->slices)
			continue;
		if ((r = g->p->create_ci(gi, ci_info.id, &ci)) != NVML_OK)
			return nvml_failed(g, r, "nvmlGpuInstanceCreateComputeInstance", e);
		return 0;
	}
	err_set(e, EXIT_DRIVER_CHECK, "GPU %u (%s): no compute-instance profile of %u slices",
		g->index, g->name, info->slices);
	return -1;
}

/* Fills G with INFO's instances; on failure, what this made goes again. Returns 0 or -1. */
static int fill(const struct gpu_ctx *g, const struct gi_profile_info *info, struct err *e)
{
	for (unsigned i = 0; i < info->count; i++) {
		if (create_one(g, info, e) < 0) {
			struct err undo;

			if (destroy_all(g, &undo) < 0)
				log_kv(LOG_WARN, "partition", "could not undo a partial layout",
				       "error", undo.msg, LOG_END);
			return -1;
		}
	}
	return 0;
}

/*
 * Sets G's MIG mode to MODE. Returns 0, 1 when the change waits for a GPU reset (NVML's
 * activation status, or a pending mode still unlike the current one), or -1.
 */
static int set_mode(const struct gpu_ctx *g, unsigned mode, struct err *e)
{
	unsigned cur, pend;
	nvml_ret status = NVML_OK, r = g->p->set_mig_mode(g->dev, mode, &status);

	if (r != NVML_OK)
		return nvml_failed(g, r, "nvmlDeviceSetMigMode", e);
	if (status == NVML_RESET_REQUIRED)
		return 1;
	if (status != NVML_OK)
		return nvml_failed(g, status, "MIG mode activation", e);
	if ((r = g->p->mig_mode(g->dev, &cur, &pend)) != NVML_OK)
		return nvml_failed(g, r, "nvmlDeviceGetMigMode", e);
	return cur != mode ? 1 : 0;
}

/* ---- a layout for the node ---------------------------------------------------------- */

enum action { ACT_NONE, ACT_DISABLE, ACT_ENABLE, ACT_FILL };

struct gpu_plan {
	struct gpu_ctx g;
	struct part_one want;
	unsigned cur, pend;
	enum action act;
};

/*
 * What GPU G needs for its layout.
 * Returns 0, or -1 (EXIT_USAGE) for MIG asked of a GPU without it.
 */
static int plan_gpu(struct gpu_plan *pl, struct err *e)
{
	const struct gpu_ctx *g = &pl->g;
	const struct part_one *l = &pl->want;
	struct gi_profile_info want;
	nvml_ret r = g->p->mig_mode(g->dev, &pl->cur, &pl->pend);

	pl->act = ACT_NONE;
	if (r == NVML_NOT_SUPPORTED) {
		if (l->kind == PART_DISABLED || l->kind == PART_KEEP)
			return 0;
		err_set(e, EXIT_USAGE, "GPU %u (%s) has no MIG mode: it can only be served whole",
			g->index, g->name);
		err_hint(
			e,
			"--mig-layout none (or all-disabled) for this node's GPUs, or a node pool without a partition size");
		return -1;
	}
	if (r != NVML_OK)
		return nvml_failed(g, r, "nvmlDeviceGetMigMode", e);
	switch (l->kind) {
	case PART_KEEP:
		break;
	case PART_DISABLED:
		pl->act = pl->cur || pl->pend ? ACT_DISABLE : ACT_NONE;
		break;
	case PART_ENABLED:
		pl->act = pl->cur && pl->pend ? ACT_NONE : ACT_ENABLE;
		break;
	case PART_PROFILE:
		if (!pl->cur || !pl->pend)
			pl->act = ACT_FILL;
		else if (find_profile(g, l->profile, &want, e) < 0)
			return -1;
		else
			pl->act = layout_matches(g, &want) ? ACT_NONE : ACT_FILL;
		break;
	}
	return 0;
}

/* Carries out PL. Returns 0 done, 1 waiting for a reset, or -1. */
static int apply_gpu(const struct gpu_plan *pl, struct err *e)
{
	const struct gpu_ctx *g = &pl->g;
	const struct part_one *l = &pl->want;
	struct gi_profile_info want;
	int m;

	switch (pl->act) {
	case ACT_NONE:
		return 0;
	case ACT_DISABLE:
		return destroy_all(g, e) < 0 ? -1 : set_mode(g, 0, e);
	case ACT_ENABLE:
		return set_mode(g, 1, e);
	case ACT_FILL:
		break;
	}
	m = pl->cur && pl->pend ? 0 : set_mode(g, 1, e);
	if (m != 0)
		return m;
	if (find_profile(g, l->profile, &want, e) < 0) {
		struct err back;

		/* MIG mode this run turned on for a profile the GPU lacks goes off again. */
		if (!pl->cur && set_mode(g, 0, &back) < 0)
			log_kv(LOG_WARN, "partition", "could not turn MIG mode off again", "error",
			       back.msg, LOG_END);
		return -1;
	}
	if (destroy_all(g, e) < 0 || fill(g, &want, e) < 0)
		return -1;
	return 0;
}

static const char *action_name(enum action a)
{
	switch (a) {
	case ACT_DISABLE:
		return "MIG mode off";
	case ACT_ENABLE:
		return "MIG mode on";
	case ACT_FILL:
		return "instances made";
	case ACT_NONE:
		break;
	}
	return "unchanged";
}

/* Refuses a change while a process other than ours holds a GPU. Returns 0 or -1. */
static int refuse_busy(const struct part_apply *a, struct err *e)
{
	char why[1024] = "";

	if (!kmods_open_users(a->root_fd, a->ours, a->n_ours, why, sizeof(why)))
		return 0;
	err_set(e, EXIT_IN_USE, "GPU partitioning refused: the GPUs are in use: %s", why);
	err_hint(
		e,
		"drain the node (stop GPU workloads and nvidia-persistenced) and run again; nothing was changed");
	return -1;
}

static int gpu_ctx_of(const struct part_api *p, unsigned i, struct gpu_ctx *g, struct err *e)
{
	struct nvml_memory mem = {0};
	nvml_ret r;

	memset(g, 0, sizeof(*g));
	g->p = p;
	g->index = i;
	if ((r = p->by_index(i, &g->dev)) != NVML_OK)
		return nvml_failed(g, r, "nvmlDeviceGetHandleByIndex", e);
	if ((r = p->name(g->dev, g->name, sizeof(g->name))) != NVML_OK ||
	    (r = p->memory(g->dev, &mem)) != NVML_OK)
		return nvml_failed(g, r, "device query", e);
	g->total_bytes = mem.total;
	return 0;
}

static int apply_all(const struct part_api *p, const struct part_apply *a,
		     const struct part_layout *l, struct part_result *res, struct err *e)
{
	struct gpu_plan plans[PART_MAX_GPUS];
	unsigned n = 0;
	bool change = false;
	nvml_ret r;

	if ((r = p->count(&n)) != NVML_OK)
		return err_set(e, EXIT_DRIVER_CHECK, "NVML nvmlDeviceGetCount failed: %s (%d)",
			       p->error_string(r), r);
	n = n > PART_MAX_GPUS ? PART_MAX_GPUS : n;
	for (unsigned i = 0; i < n; i++) {
		plans[i].want = part_layout_for(l, i);
		if (gpu_ctx_of(p, i, &plans[i].g, e) < 0 || plan_gpu(&plans[i], e) < 0)
			return -1;
		change |= plans[i].act != ACT_NONE;
	}
	if (change && a->before_busy_check && a->before_busy_check(a->before_busy_arg, e) < 0)
		return -1;
	if (change && refuse_busy(a, e) < 0)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		int rc = apply_gpu(&plans[i], e);
		size_t len = strlen(res->pending);

		if (rc < 0)
			return -1;
		if (plans[i].act == ACT_NONE)
			res->unchanged++;
		else
			res->changed++;
		if (rc == 1) {
			res->reset_pending++;
			snprintf(res->pending + len, sizeof(res->pending) - len, "%s%u (%s)",
				 len ? ", " : "", i, plans[i].g.name);
		}
		log_kv(LOG_INFO, "partition",
		       rc == 1 ? "MIG mode waits for a GPU reset" : action_name(plans[i].act),
		       U64("gpu", i), "name", plans[i].g.name, LOG_END);
	}
	return 0;
}

int partition_apply(const struct part_apply *a, const struct part_layout *l,
		    struct part_result *res, struct err *e)
{
	_cleanup_free_ struct part_api *p = NULL;
	void *h;
	nvml_ret r;
	int rc;

	memset(res, 0, sizeof(*res));
	if (part_layout_keeps(l))
		return 0;
	h = dlopen(a->lib, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return err_set(e, EXIT_DRIVER_CHECK, "cannot load %s: %s", a->lib, dlerror());
	p = partition_bind(h);
	if (!p) {
		dlclose(h);
		return err_set(e, EXIT_DRIVER_CHECK, "%s has no MIG calls (NVML older than R450)",
			       a->lib);
	}
	if ((r = p->init()) != NVML_OK) {
		err_set(e, EXIT_DRIVER_CHECK, "NVML initialisation failed: %s (%d)",
			p->error_string(r), r);
		dlclose(h);
		return -1;
	}
	rc = apply_all(p, a, l, res, e);
	p->shutdown();
	dlclose(h);
	return rc;
}

/* ---- MIG devices, for nvml_query --------------------------------------------------- */

/* A GPU's GPU-instance profiles: each id with its suffix, asked once per GPU. */
struct gpu_profiles {
	unsigned n;
	struct {
		unsigned id;
		const char *suffix;
	} p[GI_PROFILES];
};

static void profiles_of(const struct gpu_ctx *g, struct gpu_profiles *ret)
{
	ret->n = 0;
	for (unsigned i = 0; i < GI_PROFILES; i++) {
		struct gi_profile_info pi;

		if (g->p->gi_profile(g->dev, i, &pi) != NVML_OK)
			continue;
		ret->p[ret->n].id = pi.id;
		ret->p[ret->n++].suffix = gi_suffix(i);
	}
}

/* The suffix of the profile of GPU instance GI_ID ("+me"), or "". */
static const char *mig_suffix(const struct gpu_ctx *g, const struct gpu_profiles *ps,
			      unsigned gi_id)
{
	struct gi_info info;
	nvml_gi gi;

	if (g->p->gi_by_id(g->dev, gi_id, &gi) != NVML_OK ||
	    g->p->gi_get_info(gi, &info) != NVML_OK)
		return "";
	for (unsigned i = 0; i < ps->n; i++)
		if (ps->p[i].id == info.profile_id)
			return ps->p[i].suffix;
	return "";
}

static bool query_mig(const struct gpu_ctx *g, const struct gpu_profiles *ps, nvml_device dev,
		      struct part_mig *m)
{
	struct device_attributes at;

	if (g->p->uuid(dev, m->uuid, sizeof(m->uuid)) != NVML_OK ||
	    g->p->gi_id(dev, &m->gi) != NVML_OK || g->p->ci_id(dev, &m->ci) != NVML_OK ||
	    g->p->attributes(dev, &at) != NVML_OK)
		return false;
	m->memory_mib = at.memory_mb;
	m->sms = at.sms;
	m->gi_slices = at.gi_slices;
	m->ci_slices = at.ci_slices;
	m->copy = at.copy;
	m->decoders = at.decoders;
	m->encoders = at.encoders;
	m->jpegs = at.jpegs;
	m->ofas = at.ofas;
	partition_profile_name(&(struct part_shape){.ci_slices = at.ci_slices,
						    .gi_slices = at.gi_slices,
						    .mem_mib = at.memory_mb,
						    .total_bytes = g->total_bytes,
						    .suffix = mig_suffix(g, ps, m->gi)},
			       m->profile, sizeof(m->profile));
	return true;
}

void partition_query_gpu(const struct part_api *p, void *dev, unsigned index, struct part_gpu *ret)
{
	struct gpu_ctx g = {.p = p, .dev = dev, .index = index, .total_bytes = ret->total_bytes};
	struct gpu_profiles ps;
	unsigned cur, pend, max = 0;

	ret->mode = ret->pending = -1;
	if (!p || p->mig_mode(dev, &cur, &pend) != NVML_OK)
		return;
	ret->mode = (int)cur;
	ret->pending = (int)pend;
	if (!cur || p->max_migs(dev, &max) != NVML_OK)
		return;
	profiles_of(&g, &ps);
	for (unsigned j = 0; j < max && ret->n < ret->max; j++) {
		struct part_mig *m = &ret->migs[ret->n];
		nvml_device mig;

		/* An index without an instance answers an error (NOT_FOUND): skipped. */
		if (p->mig_by_index(dev, j, &mig) != NVML_OK)
			continue;
		memset(m, 0, sizeof(*m));
		m->gpu = index;
		m->index = j;
		if (query_mig(&g, &ps, mig, m))
			ret->n++;
	}
}

size_t partition_profiles(const struct part_mig *migs, unsigned n, struct part_profile_count *ret,
			  size_t max)
{
	size_t k = 0;

	for (unsigned i = 0; i < n; i++) {
		size_t j = 0;

		while (j < k && strcmp(ret[j].first->profile, migs[i].profile) != 0)
			j++;
		if (j == k && k < max)
			ret[k++] = (struct part_profile_count){.first = &migs[i], .count = 0};
		if (j < k)
			ret[j].count++;
	}
	return k;
}

/* ---- asking for a layout ------------------------------------------------------------ */

/* A profile name as go-nvlib spells them: [Cc.]Gg.MEMgb, then an optional +/- suffix. */
static bool profile_name_is_valid(const char *s)
{
	unsigned a, b, c;
	int n = 0;

	if (strlen(s) >= MIG_SIZE_MAX)
		return false;
	if (sscanf(s, "%uc.%ug.%ugb%n", &a, &b, &c, &n) == 3 && n > 0)
		s += n;
	else if (n = 0, sscanf(s, "%ug.%ugb%n", &a, &b, &n) == 2 && n > 0)
		s += n;
	else
		return false;
	for (; *s; s++)
		if (!strchr("+-.abcdefghijklmnopqrstuvwxyz", *s))
			return false;
	return true;
}

/* One layout: "none", "all-disabled", "all-enabled", "all-PROFILE". Returns 0 or -1. */
static int one_parse(const char *spec, struct part_one *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (strcmp(spec, "none") == 0)
		return 0;
	if (strcmp(spec, "all-disabled") == 0)
		ret->kind = PART_DISABLED;
	else if (strcmp(spec, "all-enabled") == 0)
		ret->kind = PART_ENABLED;
	else if (strncmp(spec, "all-", 4) == 0 && profile_name_is_valid(spec + 4))
		ret->kind = PART_PROFILE;
	else
		return -1;
	if (ret->kind == PART_PROFILE)
		snprintf(ret->profile, sizeof(ret->profile), "%s", spec + 4);
	return 0;
}

/* An item of a list: "N=LAYOUT" for GPU N, or LAYOUT for the others. Returns 0 or -1. */
static int item_parse(char *item, struct part_layout *l, bool *have_default)
{
	struct part_one one;
	char *eq = strchr(item, '=');
	unsigned long n;
	char *end;

	if (!eq) {
		if (*have_default || one_parse(item, &one) < 0)
			return -1;
		*have_default = true;
		l->kind = one.kind;
		memcpy(l->profile, one.profile, sizeof(l->profile));
		return 0;
	}
	*eq = '\0';
	/* An index in decimal digits, without a sign, blanks or a leading zero. */
	if (item[0] < '0' || item[0] > '9' || (item[0] == '0' && item[1]))
		return -1;
	n = strtoul(item, &end, 10);
	if (*end || n >= PART_LAYOUT_GPUS || l->named[n] || one_parse(eq + 1, &l->gpu[n]) < 0)
		return -1;
	l->named[n] = true;
	return 0;
}

static int list_parse(const char *spec, struct part_layout *l, struct err *e)
{
	char buf[PART_LAYOUT_NAME_MAX], *save = NULL;
	bool have_default = false;

	if (strlen(spec) >= sizeof(buf))
		goto bad;
	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *it = strtok_r(buf, ",", &save); it; it = strtok_r(NULL, ",", &save))
		if (item_parse(it, l, &have_default) < 0)
			goto bad;
	if (spec[0] && spec[strlen(spec) - 1] != ',' && !strstr(spec, ",,") && spec[0] != ',')
		return 0;
bad:
	err_set(e, EXIT_USAGE, "--mig-layout '%s': not a layout", spec);
	err_hint(
		e,
		"gke, none, all-disabled, all-enabled, all-PROFILE (all-1g.10gb), or per GPU: all-disabled,0=all-1g.10gb");
	return -1;
}

int part_layout_parse(const char *spec, int root_fd, struct part_layout *ret, struct err *e)
{
	struct mig_request req;
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->source = "--mig-layout";
	if (!spec || !*spec)
		return 0;
	if (strcmp(spec, "gke") != 0)
		return list_parse(spec, ret, e);
	r = mig_read_gke_config(root_fd, &req, e);
	if (r < 0)
		return err_wrap(e, "%s", MIG_GKE_CONFIG);
	if (r == 0)
		part_layout_of_gke(&req, ret);
	ret->source = MIG_GKE_CONFIG;
	return 0;
}

void part_layout_of_gke(const struct mig_request *req, struct part_layout *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->source = MIG_GKE_CONFIG;
	if (req->partition_size[0]) {
		ret->kind = PART_PROFILE;
		snprintf(ret->profile, sizeof(ret->profile), "%s", req->partition_size);
	}
}

static void one_name(const struct part_one *o, char *buf, size_t size)
{
	switch (o->kind) {
	case PART_KEEP:
		snprintf(buf, size, "none");
		break;
	case PART_DISABLED:
		snprintf(buf, size, "all-disabled");
		break;
	case PART_ENABLED:
		snprintf(buf, size, "all-enabled");
		break;
	case PART_PROFILE:
		snprintf(buf, size, "all-%s", o->profile);
		break;
	}
}

void part_layout_name(const struct part_layout *l, char *buf, size_t size)
{
	struct part_one all = {.kind = l->kind};
	size_t len = 0;
	bool any = false;
	char one[MIG_SIZE_MAX + 8];

	memcpy(all.profile, l->profile, sizeof(all.profile));
	for (unsigned i = 0; i < PART_LAYOUT_GPUS; i++)
		any |= l->named[i];
	buf[0] = '\0';
	if (l->kind != PART_KEEP || !any) {
		one_name(&all, one, sizeof(one));
		len = (size_t)snprintf(buf, size, "%s", one);
	}
	for (unsigned i = 0; i < PART_LAYOUT_GPUS && len < size; i++) {
		if (!l->named[i])
			continue;
		one_name(&l->gpu[i], one, sizeof(one));
		len += (size_t)snprintf(buf + len, size - len, "%s%u=%s", len ? "," : "", i, one);
	}
}

struct part_one part_layout_for(const struct part_layout *l, unsigned index)
{
	struct part_one o = {.kind = l->kind};

	if (index < PART_LAYOUT_GPUS && l->named[index])
		return l->gpu[index];
	memcpy(o.profile, l->profile, sizeof(o.profile));
	return o;
}

bool part_layout_keeps(const struct part_layout *l)
{
	for (unsigned i = 0; i < PART_LAYOUT_GPUS; i++)
		if (l->named[i] && l->gpu[i].kind != PART_KEEP)
			return false;
	return l->kind == PART_KEEP;
}
