// SPDX-License-Identifier: Apache-2.0
/*
 * NVIDIA's DRA kubelet plugin restarted after a driver switch (agent/draplugin.h): which of
 * the node's pods are stale or still leaving (draplugin_judge, pure), whom to ask again
 * (the memory), and the look that lists and evicts.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "agent/draplugin.h"
#include "stage/stage.h"
#include "util/cleanup.h"
#include "util/fs.h"
#include "util/jsonc.h"
#include "util/log.h"
#include "util/prom.h"
#include "util/str.h"

/* The link a switch renames (installer/stage/publish.c, publish_activate). */
#define CURRENT_LINK ".current"

/*
 * The earliest start of POD's running containers into *RET, its container's name into
 * NAME: 0, 1 when none runs, -1 when a startedAt is not a time (or a running container has
 * none: never taken for 1970).
 */
static int earliest_start(json_object *pod, int64_t *ret, char *name, size_t size)
{
	json_object *list = jsonc_get(jsonc_get(pod, "status"), "containerStatuses");
	size_t n = jsonc_array_len(list);
	int found = 1;

	for (size_t i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(list, i);
		json_object *running = jsonc_get(jsonc_get(c, "state"), "running");
		const char *at = jsonc_str(running, "startedAt");
		int64_t t;

		if (!running)
			continue;
		if (!at || waiting_time_parse(at, &t) < 0)
			return -1;
		if (found == 0 && t >= *ret)
			continue;
		*ret = t;
		str_fmt_cut(name, size, "%s", jsonc_str(c, "name") ?: "?");
		found = 0;
	}
	return found;
}

void draplugin_seen_add(struct draplugin_seen *seen, const char *uid)
{
	if (seen->n == DRAPLUGIN_MEMORY) {
		seen->full = true;
		return;
	}
	str_fmt_cut(seen->uid[seen->n++], sizeof(seen->uid[0]), "%s", uid);
}

static bool seen_has(const struct draplugin_seen *seen, const char *uid)
{
	for (size_t i = 0; i < seen->n; i++)
		if (strcmp(seen->uid[i], uid) == 0)
			return true;
	return false;
}

/*
 * A container of POD that does not run into NAME (a status without state.running, with the
 * reason of its state.waiting or state.terminated when there is one: CrashLoopBackOff,
 * ImagePullBackOff; or a container of spec.containers with no status yet): true when there
 * is one.
 */
static bool one_not_running(json_object *pod, char *name, size_t size)
{
	json_object *list = jsonc_get(jsonc_get(pod, "status"), "containerStatuses");
	size_t n = jsonc_array_len(list), running = 0;

	for (size_t i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(list, i);
		json_object *st = jsonc_get(c, "state");
		const char *reason = jsonc_str(jsonc_get(st, "waiting"), "reason")
					     ?: jsonc_str(jsonc_get(st, "terminated"), "reason");

		if (jsonc_get(st, "running")) {
			running++;
			continue;
		}
		if (reason)
			str_fmt_cut(name, size, "%s, %s", jsonc_str(c, "name") ?: "?", reason);
		else
			str_fmt_cut(name, size, "%s", jsonc_str(c, "name") ?: "?");
		return true;
	}
	if (running > 0 &&
	    running >= jsonc_array_len(jsonc_get(jsonc_get(pod, "spec"), "containers")))
		return false;
	str_fmt_cut(name, size, "%s", running ? "of the spec without a status" : "none");
	return true;
}

/* WHY said, V returned (in draplugin_judge). */
#define VERDICT(v, ...) (str_fmt_cut(why, size, __VA_ARGS__), (v))

enum draplugin_verdict draplugin_judge(json_object *pod, const struct labelsel *sel,
				       int64_t activated, const struct draplugin_seen *seen,
				       char *why, size_t size)
{
	json_object *meta = jsonc_get(pod, "metadata");
	const char *phase = jsonc_str(jsonc_get(pod, "status"), "phase");
	char name[128] = "", idle[128] = "", at[STR_UTC_SIZE], was[STR_UTC_SIZE];
	bool is_new = seen && !seen->full && !seen_has(seen, jsonc_str(meta, "uid") ?: "");
	int64_t started = 0;
	int r;

	if (!labelsel_matches(sel, jsonc_get(meta, "labels")))
		return VERDICT(DRAPLUGIN_OTHER, "not selected");
	if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0))
		return VERDICT(DRAPLUGIN_OTHER, "finished (%s): no container runs", phase);
	(void)waiting_time_format(activated, was);
	if (jsonc_get(meta, "deletionTimestamp"))
		return VERDICT(
			DRAPLUGIN_WAIT,
			"leaving: until it is gone its containers may run and prepare claims on the files of before the switch at %s",
			was);
	r = earliest_start(pod, &started, name, sizeof(name));
	if (r < 0)
		return VERDICT(DRAPLUGIN_WAIT, "a container's startedAt is not a time");
	(void)waiting_time_format(started, at);
	if (r == 0 && !is_new && started <= activated)
		return VERDICT(
			DRAPLUGIN_STALE,
			"its container %s started at %s, not after the driver's switch at %s: it holds the replaced version's files",
			name, at, was);
	/* No container of it runs since before the switch, and one does not run: it prepares
	 * no claim, and when that container starts it reads the new files. */
	if (one_not_running(pod, idle, sizeof(idle)))
		return VERDICT(DRAPLUGIN_IDLE, "not running (container %s)", idle);
	if (is_new)
		return VERDICT(
			DRAPLUGIN_FRESH,
			"made after the agent first listed the pods after the switch at %s (its container %s started at %s)",
			was, name, at);
	return VERDICT(DRAPLUGIN_FRESH, "its containers started after the switch at %s", was);
}

const char *draplugin_known_selector(json_object *pod)
{
	static const char *const known[] = {DRAPLUGIN_DEFAULT_SELECTOR,
					    DRAPLUGIN_OPERATOR_SELECTOR};
	json_object *labels = jsonc_get(jsonc_get(pod, "metadata"), "labels");

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		struct labelsel sel;
		char why[128];
		bool match;

		if (labelsel_parse(known[i], &sel, why, sizeof(why)) < 0)
			continue;
		match = labelsel_matches(&sel, labels);
		labelsel_free(&sel);
		if (match)
			return known[i];
	}
	return NULL;
}

/* ---- whom to ask again --------------------------------------------------------------- */

static struct draplugin_asked *find(const struct draplugin_memory *m, const char *uid)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->a[i].uid, uid) == 0)
			return (struct draplugin_asked *)&m->a[i];
	return NULL;
}

bool draplugin_may_ask(const struct draplugin_memory *m, const char *uid, uint64_t now)
{
	const struct draplugin_asked *a = find(m, uid);

	return !a || (!a->evicted && now >= a->next_s);
}

void draplugin_note(struct draplugin_memory *m, const char *uid, int answer, uint64_t now)
{
	struct draplugin_asked *a = find(m, uid);
	uint64_t wait = DRAPLUGIN_BACKOFF_FIRST_S;

	if (!a) {
		if (m->n < DRAPLUGIN_MEMORY) {
			a = &m->a[m->n++];
		} else {
			a = &m->a[m->oldest];
			m->oldest = (m->oldest + 1) % DRAPLUGIN_MEMORY;
		}
		memset(a, 0, sizeof(*a));
		str_fmt_cut(a->uid, sizeof(a->uid), "%s", uid);
	}
	if (answer == 0) {
		a->evicted = true;
		return;
	}
	for (unsigned i = 0; i < a->refusals && wait < DRAPLUGIN_BACKOFF_MAX_S; i++)
		wait *= 2;
	a->refusals++;
	a->next_s = now + (wait < DRAPLUGIN_BACKOFF_MAX_S ? wait : DRAPLUGIN_BACKOFF_MAX_S);
}

/* ---- the agent's side ------------------------------------------------------------------ */

int draplugin_start(struct draplugin *p, const char *selector, struct kube *k, const char *node,
		    struct err *e)
{
	char why[200];

	memset(p, 0, sizeof(*p));
	if (!selector) {
		log_msg(LOG_INFO, "agent",
			"NVIDIA's DRA kubelet plugin is not restarted after a switch "
			"(--dra-plugin-selector none)");
		return 0;
	}
	if (labelsel_parse(selector, &p->sel, why, sizeof(why)) < 0)
		return err_set(e, EXIT_USAGE,
			       "agent: --dra-plugin-selector: '%s' is not a label selector: %s",
			       selector, why);
	if (!k || !node) {
		log_kv(LOG_INFO, "agent",
		       "NVIDIA's DRA kubelet plugin is not restarted after a switch: no API access",
		       "fix", "give the agent a node name and the pod's service account", LOG_END);
		labelsel_free(&p->sel);
		return 0;
	}
	p->on = true;
	p->k = k;
	p->node = node;
	p->selector = selector;
	log_kv(LOG_INFO, "agent", "restarting NVIDIA's DRA kubelet plugin after a switch",
	       "selector", selector, LOG_END);
	return 0;
}

void draplugin_stop(struct draplugin *p)
{
	labelsel_free(&p->sel);
	p->on = false;
	p->k = NULL;
}

static void say_error(struct draplugin *p, const char *what, const char *msg)
{
	char now[sizeof(p->error)];

	str_fmt_cut(now, sizeof(now), "%s: %s", what, msg);
	if (strcmp(now, p->error) == 0)
		return;
	snprintf(p->error, sizeof(p->error), "%s", now);
	log_kv(LOG_WARN, "agent", "NVIDIA's DRA kubelet plugin: not restarted now", "error", now,
	       LOG_END);
}

/* When the installed version was switched in: 0, or -1 when there is none. */
static int switched_at(const struct draplugin_look *l, struct timespec *ret)
{
	struct err e;
	_cleanup_close_ int dir = fs_dir_in_root(l->root_fd, l->install_dir, false, &e);
	struct stat st;

	if (dir < 0 || fstatat(dir, CURRENT_LINK, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISLNK(st.st_mode))
		return -1;
	*ret = st.st_mtim;
	return 0;
}

/* Asks POD to leave, once per UID, with a backoff after a refusal. */
static void evict(struct draplugin *p, json_object *pod, const char *why, uint64_t now)
{
	json_object *meta = jsonc_get(pod, "metadata");
	const char *ns = jsonc_str(meta, "namespace"), *name = jsonc_str(meta, "name"),
		   *uid = jsonc_str(meta, "uid");
	struct err e;
	int r;

	if (!ns || !name || !uid || !draplugin_may_ask(&p->mem, uid, now))
		return;
	err_clear(&e);
	r = kube_evict(p->k, ns, name, &e);
	/* Noted at the answer's second rounded up, asked at NOW's rounded down: the next ask
	 * comes a whole backoff after this one's answer, never a fraction of a second less. */
	draplugin_note(&p->mem, uid, r, (now_ns() + 999999999ull) / 1000000000ull);
	if (r == 0) {
		p->evicted++;
		log_kv(LOG_INFO, "agent",
		       "evicted a pod of NVIDIA's DRA kubelet plugin, for its DaemonSet to start it "
		       "on the new driver's files",
		       "pod", name, "namespace", ns, "reason", why, LOG_END);
	} else if (r == 1) {
		p->refused++;
		log_kv(LOG_WARN, "agent",
		       "a disruption budget refused the eviction of a pod of NVIDIA's DRA kubelet "
		       "plugin: asked again later",
		       "pod", name, "namespace", ns, "reason", why, LOG_END);
	} else {
		p->failed++;
		log_kv(LOG_WARN, "agent",
		       "a pod of NVIDIA's DRA kubelet plugin could not be evicted: asked again later",
		       "pod", name, "namespace", ns, "error", e.msg, LOG_END);
	}
}

/*
 * Says the pod the switch waits for (POD, WHY: the first of a list, in the list's order),
 * once, until another is the first: a second pod waiting behind it is not said at each look.
 */
static void say_waiting(struct draplugin *p, json_object *pod, const char *why)
{
	json_object *meta = jsonc_get(pod, "metadata");
	char now[sizeof(p->waiting)];

	str_fmt_cut(now, sizeof(now), "%s/%s: %s", jsonc_str(meta, "namespace") ?: "?",
		    jsonc_str(meta, "name") ?: "?", why);
	if (strcmp(now, p->waiting) == 0)
		return;
	snprintf(p->waiting, sizeof(p->waiting), "%s", now);
	log_kv(LOG_INFO, "agent",
	       "NVIDIA's DRA kubelet plugin: the switch waits for a pod of it to be gone or to run on the new files",
	       "pod", jsonc_str(meta, "name") ?: "?", "namespace",
	       jsonc_str(meta, "namespace") ?: "?", "reason", why, LOG_END);
}

/*
 * Whether a container of POD fails rather than starts: a state.terminated, or a
 * state.waiting whose reason is not one of a start's (the kubelet's ContainerCreating and
 * PodInitializing, the reasons its status gives a container being made; none given: starting).
 */
static bool failing(json_object *pod)
{
	json_object *list = jsonc_get(jsonc_get(pod, "status"), "containerStatuses");
	size_t n = jsonc_array_len(list);

	for (size_t i = 0; i < n; i++) {
		json_object *st = jsonc_get(json_object_array_get_idx(list, i), "state");
		const char *reason = jsonc_str(jsonc_get(st, "waiting"), "reason");

		if (jsonc_get(st, "terminated"))
			return true;
		if (reason && strcmp(reason, "ContainerCreating") != 0 &&
		    strcmp(reason, "PodInitializing") != 0)
			return true;
	}
	return false;
}

/*
 * Says once a switch, for each pod (its UID), that POD has a container not running (WHY)
 * and that the switch does not wait for it: a crash-looping or unpullable container prepares
 * no claim, and reads the new files when it starts. A WARNING when a container fails
 * (CrashLoopBackOff, ImagePullBackOff), else (the DaemonSet's new pod starting) INFO.
 */
static void say_idle(struct draplugin *p, json_object *pod, const char *why)
{
	json_object *meta = jsonc_get(pod, "metadata");
	const char *uid = jsonc_str(meta, "uid") ?: "", *ns = jsonc_str(meta, "namespace") ?: "?",
		   *name = jsonc_str(meta, "name") ?: "?";
	char fix[256];

	if (seen_has(&p->idle_said, uid) || p->idle_said.full)
		return;
	draplugin_seen_add(&p->idle_said, uid);
	str_fmt_cut(fix, sizeof(fix), "kubectl -n %s describe pod %s", ns, name);
	log_kv(failing(pod) ? LOG_WARN : LOG_INFO, "agent",
	       "NVIDIA's DRA kubelet plugin: a pod of it has a container that does not run; the switch does not wait for it (it prepares no claim, and reads the new files when it starts)",
	       "pod", name, "namespace", ns, "reason", why, "fix", fix, LOG_END);
}

/* Notes POD as the one the switch waits for (the first of the list), WHAT why in short. */
static void hold(struct draplugin *p, json_object *pod, const char *what)
{
	json_object *meta = jsonc_get(pod, "metadata");

	if (p->holding_ns[0] || p->holding_name[0])
		return;
	str_fmt_cut(p->holding_ns, sizeof(p->holding_ns), "%s",
		    jsonc_str(meta, "namespace") ?: "?");
	str_fmt_cut(p->holding_name, sizeof(p->holding_name), "%s", jsonc_str(meta, "name") ?: "?");
	str_fmt_cut(p->holding_why, sizeof(p->holding_why), "%s", what);
}

/* The first list after the switch AT: the UIDs of its plugin pods, those that may hold the
 * old files (draplugin_seen). */
static void first_list(struct draplugin *p, json_object *pods, const struct timespec *at)
{
	size_t n = json_object_array_length(pods);

	if (p->has_seen && p->seen_s == (int64_t)at->tv_sec && p->seen_ns == (int64_t)at->tv_nsec)
		return;
	memset(&p->seen, 0, sizeof(p->seen));
	for (size_t i = 0; i < n; i++) {
		json_object *meta = jsonc_get(json_object_array_get_idx(pods, i), "metadata");

		if (labelsel_matches(&p->sel, jsonc_get(meta, "labels")))
			draplugin_seen_add(&p->seen, jsonc_str(meta, "uid") ?: "");
	}
	p->seen_s = (int64_t)at->tv_sec;
	p->seen_ns = (int64_t)at->tv_nsec;
	p->has_seen = true;
	p->waiting[0] = '\0';
	p->said_unmatched = false;
	memset(&p->idle_said, 0, sizeof(p->idle_said));
}

/*
 * The selector matched no pod of PODS: a pod with a known label of the plugin's (the GPU
 * Operator's, or the chart's under another selector) is one this switch does not restart.
 * Said once a switch, from the list the look has already read.
 */
static void say_unmatched(struct draplugin *p, json_object *pods)
{
	size_t n = json_object_array_length(pods);

	for (size_t i = 0; i < n && !p->said_unmatched; i++) {
		json_object *pod = json_object_array_get_idx(pods, i);
		json_object *meta = jsonc_get(pod, "metadata");
		const char *known = draplugin_known_selector(pod);
		char fix[200];

		if (!known)
			continue;
		p->said_unmatched = true;
		str_fmt_cut(fix, sizeof(fix),
			    "--dra-plugin-selector %s (NVIDIA_DRA_PLUGIN_SELECTOR=%s)", known,
			    known);
		log_kv(LOG_WARN, "agent",
		       "NVIDIA's DRA kubelet plugin: --dra-plugin-selector matches no pod on the node, but a pod carries a label of the plugin's: it is not restarted after the switch and may keep the replaced version's files",
		       "pod", jsonc_str(meta, "name") ?: "?", "namespace",
		       jsonc_str(meta, "namespace") ?: "?", "selector", p->selector, "fix", fix,
		       LOG_END);
	}
}

/*
 * The pods of the plugin listed and the stale ones asked to leave: 0 when every one is
 * FRESH or IDLE (*FRESH, *IDLE: how many), 1 when some were stale or are leaving, -1 when
 * the pods could not be listed. The first pod (in the list's order) that holds the switch
 * is noted (hold) and, when it waits, said (say_waiting).
 */
static int restart_stale(struct draplugin *p, const struct timespec *at, unsigned *fresh,
			 unsigned *idle)
{
	int64_t activated = (int64_t)at->tv_sec;
	_cleanup_(json_object_putp) json_object *pods = NULL;
	json_object *first_wait = NULL;
	uint64_t now = now_ns() / 1000000000ull;
	char why[300], first_why[300] = "";
	size_t n;
	int r = 0;
	bool any = false;
	struct err e;

	*fresh = *idle = 0;
	if (kube_pods_on_node(p->k, p->node, &pods, &e) < 0) {
		say_error(p, "listing the node's pods", e.msg);
		p->list_failed = true;
		return -1;
	}
	p->error[0] = '\0';
	n = json_object_array_length(pods);
	first_list(p, pods, at);
	for (size_t i = 0; i < n; i++) {
		json_object *pod = json_object_array_get_idx(pods, i);

		enum draplugin_verdict v =
			draplugin_judge(pod, &p->sel, activated, &p->seen, why, sizeof(why));

		any = any ||
		      labelsel_matches(&p->sel, jsonc_get(jsonc_get(pod, "metadata"), "labels"));
		switch (v) {
		case DRAPLUGIN_OTHER:
			break;
		case DRAPLUGIN_FRESH:
			(*fresh)++;
			break;
		case DRAPLUGIN_IDLE:
			(*idle)++;
			say_idle(p, pod, why);
			break;
		case DRAPLUGIN_WAIT:
			if (!first_wait) {
				first_wait = pod;
				str_fmt_cut(first_why, sizeof(first_why), "%s", why);
			}
			hold(p, pod,
			     jsonc_get(jsonc_get(pod, "metadata"), "deletionTimestamp")
				     ? "leaving, waited for until it is gone"
				     : "a container's startedAt is not a time");
			r = 1;
			break;
		case DRAPLUGIN_STALE:
			evict(p, pod, why, now);
			hold(p, pod, "running since before the switch, its eviction asked");
			r = 1;
			break;
		}
	}
	if (first_wait)
		say_waiting(p, first_wait, first_why);
	if (!any)
		say_unmatched(p, pods);
	return r;
}

bool draplugin_look(struct draplugin *p, const struct draplugin_look *l)
{
	char was[STR_UTC_SIZE];
	struct timespec at;
	unsigned fresh, idle;

	p->holding_ns[0] = p->holding_name[0] = p->holding_why[0] = '\0';
	p->list_failed = false;
	if (!p->on || switched_at(l, &at) < 0)
		return true;
	if (p->is_settled && p->settled_s == (int64_t)at.tv_sec &&
	    p->settled_ns == (int64_t)at.tv_nsec)
		return true;
	if (!l->active) {
		if (!p->said_waiting)
			log_msg(LOG_DEBUG, "agent",
				"NVIDIA's DRA kubelet plugin: waiting for the switch to end");
		p->said_waiting = true;
		return false;
	}
	p->said_waiting = false;
	p->is_settled = restart_stale(p, &at, &fresh, &idle) == 0;
	p->settled_s = (int64_t)at.tv_sec;
	p->settled_ns = (int64_t)at.tv_nsec;
	if (!p->is_settled)
		return false;
	(void)waiting_time_format((int64_t)at.tv_sec, was);
	if (fresh == 0 && idle == 0)
		log_kv(LOG_INFO, "agent",
		       "NVIDIA's DRA kubelet plugin: no plugin pod on the node after the driver's switch",
		       "switch", was, LOG_END);
	else
		log_kv(LOG_INFO, "agent",
		       "NVIDIA's DRA kubelet plugin: its running pods on the node all started after the driver's switch",
		       "switch", was, U64("pods", fresh), U64("not_running", idle), LOG_END);
	return true;
}

void draplugin_cause(const struct draplugin *p, char *buf, size_t size)
{
	if (p->holding_name[0])
		str_fmt_cut(
			buf, size,
			"NVIDIA's DRA kubelet plugin's pod %s/%s: %s (see kubectl -n %s describe pod %s; --dra-plugin-selector none turns the restart off)",
			p->holding_ns, p->holding_name, p->holding_why, p->holding_ns,
			p->holding_name);
	else if (p->list_failed)
		str_fmt_cut(
			buf, size,
			"NVIDIA's DRA kubelet plugin's pods not known: %s (--dra-plugin-selector none turns the restart off)",
			p->error);
	else
		str_fmt_cut(buf, size,
			    "NVIDIA's DRA kubelet plugin: the driver's switch is not over");
}

/* ---- metrics ------------------------------------------------------------------------------ */

#define P "nvidia_driver_installer_agent_"

static const struct prom_family
	fam_on = {P "dra_plugin_restarts_enabled", PROM_GAUGE,
		  "Whether the agent restarts NVIDIA's DRA kubelet plugin after a driver switch."},
	fam_evictions = {
		P "dra_plugin_evictions_total", PROM_COUNTER,
		"Evictions of NVIDIA's DRA kubelet plugin's pods after a switch, by answer."};

char *draplugin_render(const struct draplugin *p)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	prom_single(f, &fam_on, p->on);
	if (p->on) {
		prom_head(f, &fam_evictions);
		prom_sample(f, &fam_evictions, &(struct prom_label){"result", "evicted"}, 1,
			    (double)p->evicted);
		prom_sample(f, &fam_evictions, &(struct prom_label){"result", "refused"}, 1,
			    (double)p->refused);
		prom_sample(f, &fam_evictions, &(struct prom_label){"result", "failed"}, 1,
			    (double)p->failed);
	}
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
