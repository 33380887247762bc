// SPDX-License-Identifier: Apache-2.0
/*
 * agent/draplugin: which of the node's pods of NVIDIA's DRA kubelet plugin still hold the
 * files of a version switched out (the selector, the earliest of its running containers,
 * the switch's own second) and which the switch waits for (a pod leaving, a startedAt not a
 * time) or leaves (a container not running: crash-looping), whom the agent asks again (once
 * per UID when evicted, a doubling backoff after a refusal, the oldest forgotten first), its
 * start's refusals, and its series; and its looks against the API server stand-in: the
 * first pod waited for said once, a crash-looping pod said once and not waited for, the
 * upgrade's reason (draplugin_cause), "no plugin pod" and the selector's fix.
 */
#include "cmocka_prelude.h"
#include "kubestub.h"

#include <fcntl.h>
#include <string.h>

#include "agent/draplugin.h"
#include "util/jsonc.h"
#include "util/log.h"

/* 2026-12-07T03:00:00Z */
#define SWITCH 1796612400

/* A pod labelled LABELS (JSON members), with container statuses STATUSES (a JSON array). */
static json_object *pod(const char *labels, const char *extra_meta, const char *statuses)
{
	char text[2048];
	json_object *o;

	snprintf(text, sizeof(text),
		 "{\"metadata\": {\"namespace\": \"dra\", \"name\": \"kp-1\", \"uid\": \"u-1\", "
		 "\"labels\": {%s}%s}, \"status\": {\"phase\": \"Running\", "
		 "\"containerStatuses\": %s}}",
		 labels, extra_meta, statuses);
	o = json_tokener_parse(text);
	assert_non_null(o);
	return o;
}

#define PLUGIN "\"nvidia-dra-driver-gpu-component\": \"kubelet-plugin\""
#define RUNNING(name, at)                                                                          \
	"{\"name\": \"" name "\", \"state\": {\"running\": {\"startedAt\": \"" at "\"}}}"

static enum draplugin_verdict judge(const char *labels, const char *extra, const char *statuses,
				    char *why, size_t size)
{
	struct labelsel sel;
	char err[200];
	json_object *o = pod(labels, extra, statuses);
	enum draplugin_verdict r;

	assert_int_equal(labelsel_parse(DRAPLUGIN_DEFAULT_SELECTOR, &sel, err, sizeof(err)), 0);
	r = draplugin_judge(o, &sel, SWITCH, NULL, why, size);
	labelsel_free(&sel);
	json_object_put(o);
	return r;
}

#define NOW_LEAVING ", \"deletionTimestamp\": \"2026-12-07T03:01:00Z\""

static void test_judge(void **state)
{
	char why[300];

	(void)state;
	/* Started before the switch: stale, the container and both times named. */
	assert_int_equal(judge(PLUGIN, "", "[" RUNNING("gpus", "2026-12-07T02:59:59Z") "]", why,
			       sizeof(why)),
			 DRAPLUGIN_STALE);
	assert_non_null(strstr(why, "gpus started at 2026-12-07T02:59:59Z"));
	assert_non_null(strstr(why, "switch at 2026-12-07T03:00:00Z"));
	/* In the switch's own second: stale (whole seconds: it may have read the old files). */
	assert_int_equal(judge(PLUGIN, "", "[" RUNNING("gpus", "2026-12-07T03:00:00Z") "]", why,
			       sizeof(why)),
			 DRAPLUGIN_STALE);
	/* After it: fresh. */
	assert_int_equal(judge(PLUGIN, "", "[" RUNNING("gpus", "2026-12-07T03:00:01Z") "]", why,
			       sizeof(why)),
			 DRAPLUGIN_FRESH);
	assert_non_null(strstr(why, "after the switch"));
	/* The earliest running container decides: one restarted since does not make it new. */
	assert_int_equal(judge(PLUGIN, "",
			       "[" RUNNING("gpus", "2026-12-07T03:05:00Z") ", " RUNNING(
				       "compute-domains", "2026-12-07T02:00:00Z") "]",
			       why, sizeof(why)),
			 DRAPLUGIN_STALE);
	assert_non_null(strstr(why, "compute-domains started at 2026-12-07T02:00:00Z"));
	/* Old and one container crash-looping: still stale (evicted, not waited for). */
	assert_int_equal(
		judge(PLUGIN, "",
		      "[{\"name\": \"gpus\", \"state\": {\"waiting\": {\"reason\": \"X\"}}}, " RUNNING(
			      "compute-domains", "2026-12-07T02:00:00Z") "]",
		      why, sizeof(why)),
		DRAPLUGIN_STALE);
	/* New but a container not running (crash-looping): not waited for, not fresh either,
	 * the container and its state's reason named. */
	assert_int_equal(
		judge(PLUGIN, "",
		      "[{\"name\": \"gpus\", \"state\": {\"waiting\": {\"reason\": \"X\"}}}, " RUNNING(
			      "compute-domains", "2026-12-07T03:00:02Z") "]",
		      why, sizeof(why)),
		DRAPLUGIN_IDLE);
	assert_string_equal(why, "not running (container gpus, X)");
	assert_int_equal(judge(PLUGIN, "", "[]", why, sizeof(why)), DRAPLUGIN_IDLE);
	assert_string_equal(why, "not running (container none)");
	/* Running with no startedAt: not a time, never taken for 1970 (FRESH before). */
	assert_int_equal(judge(PLUGIN, "", "[{\"name\": \"gpus\", \"state\": {\"running\": {}}}]",
			       why, sizeof(why)),
			 DRAPLUGIN_WAIT);
	assert_string_equal(why, "a container's startedAt is not a time");
	/* Not the plugin's: left. */
	assert_int_equal(judge("\"app\": \"train\"", "",
			       "[" RUNNING("c", "2026-12-07T01:00:00Z") "]", why, sizeof(why)),
			 DRAPLUGIN_OTHER);
	assert_string_equal(why, "not selected");
	assert_int_equal(judge("\"nvidia-dra-driver-gpu-component\": \"controller\"", "",
			       "[" RUNNING("c", "2026-12-07T01:00:00Z") "]", why, sizeof(why)),
			 DRAPLUGIN_OTHER);
	/* The selector labels alone (kubeletplugin.yaml:40) are not the default's: a renamed
	 * chart changes them (_helpers.tpl:78-85), never the label of line 41. */
	assert_int_equal(judge("\"dra-driver-nvidia-gpu-component\": \"kubelet-plugin\"", "",
			       "[" RUNNING("c", "2026-12-07T01:00:00Z") "]", why, sizeof(why)),
			 DRAPLUGIN_OTHER);
	/* Leaving (evicted, its grace period running): waited for, not evicted again, never
	 * taken for settled, whether its containers started before the switch or after. */
	assert_int_equal(judge(PLUGIN, NOW_LEAVING, "[" RUNNING("gpus", "2026-12-07T01:00:00Z") "]",
			       why, sizeof(why)),
			 DRAPLUGIN_WAIT);
	assert_non_null(strstr(why, "leaving: until it is gone"));
	assert_int_equal(judge(PLUGIN, NOW_LEAVING, "[" RUNNING("gpus", "2026-12-07T03:30:00Z") "]",
			       why, sizeof(why)),
			 DRAPLUGIN_WAIT);
	/* A startedAt that is not an API server time is not taken as one: waited for. */
	assert_int_equal(judge(PLUGIN, "", "[" RUNNING("gpus", "yesterday") "]", why, sizeof(why)),
			 DRAPLUGIN_WAIT);
	assert_int_equal(judge(PLUGIN, "", "[" RUNNING("gpus", "2026-12-07T01:00:00+01:00") "]",
			       why, sizeof(why)),
			 DRAPLUGIN_WAIT);
	/* No status at all: not running. */
	assert_int_equal(judge(PLUGIN, "", "null", why, sizeof(why)), DRAPLUGIN_IDLE);
}

/* A container of the spec with no status yet, and a pod that finished. */
static void test_judge_spec_and_phase(void **state)
{
	struct labelsel sel;
	char err[200], why[300];
	json_object *o = json_tokener_parse(
		"{\"metadata\": {\"uid\": \"u-1\", \"labels\": {" PLUGIN "}}, "
		"\"spec\": {\"containers\": [{\"name\": \"gpus\"}, {\"name\": \"cd\"}]}, "
		"\"status\": {\"phase\": \"Pending\", \"containerStatuses\": [" RUNNING(
			"gpus", "2026-12-07T03:00:05Z") "]}}");

	(void)state;
	assert_non_null(o);
	assert_int_equal(labelsel_parse(DRAPLUGIN_DEFAULT_SELECTOR, &sel, err, sizeof(err)), 0);
	assert_int_equal(draplugin_judge(o, &sel, SWITCH, NULL, why, sizeof(why)), DRAPLUGIN_IDLE);
	assert_string_equal(why, "not running (container of the spec without a status)");
	/* Failed (or Succeeded): its containers run no more, it holds no files. */
	json_object_object_add(jsonc_get(o, "status"), "phase", json_object_new_string("Failed"));
	assert_int_equal(draplugin_judge(o, &sel, SWITCH, NULL, why, sizeof(why)), DRAPLUGIN_OTHER);
	assert_string_equal(why, "finished (Failed): no container runs");
	labelsel_free(&sel);
	json_object_put(o);
}

/* The known labels of the plugin's pods: the chart's, and the GPU Operator's alone. */
static void test_known_selector(void **state)
{
	json_object *chart = pod(PLUGIN, "", "[]");
	json_object *gpu_op =
		pod("\"app\": \"nvidia-dra-driver-kubelet-plugin\", "
		    "\"app.kubernetes.io/component\": \"nvidia-dra-driver-kubelet-plugin\"",
		    "", "[]");
	json_object *other = pod("\"app\": \"nvidia-dra-driver-controller\"", "", "[]");
	json_object *bare = json_tokener_parse("{}");

	(void)state;
	assert_string_equal(draplugin_known_selector(chart), DRAPLUGIN_DEFAULT_SELECTOR);
	assert_string_equal(draplugin_known_selector(gpu_op),
			    "app=nvidia-dra-driver-kubelet-plugin");
	assert_null(draplugin_known_selector(other));
	assert_null(draplugin_known_selector(bare));
	json_object_put(chart);
	json_object_put(gpu_op);
	json_object_put(other);
	json_object_put(bare);
}

/*
 * A clock stepped back after the switch dates the DaemonSet's new pod before it: a UID the
 * agent's first list after the switch did not hold is left; one it held is judged by its
 * start; a list too long to remember judges all by their start.
 */
static void test_seen(void **state)
{
	struct draplugin_seen seen = {0};
	struct labelsel sel;
	char err[200], why[300];
	json_object *o = pod(PLUGIN, "", "[" RUNNING("gpus", "2026-12-07T02:00:00Z") "]");

	(void)state;
	assert_int_equal(labelsel_parse(DRAPLUGIN_DEFAULT_SELECTOR, &sel, err, sizeof(err)), 0);
	draplugin_seen_add(&seen, "u-0");
	assert_int_equal(draplugin_judge(o, &sel, SWITCH, &seen, why, sizeof(why)),
			 DRAPLUGIN_FRESH);
	assert_non_null(strstr(why, "made after the agent first listed the pods"));
	draplugin_seen_add(&seen, "u-1");
	assert_int_equal(draplugin_judge(o, &sel, SWITCH, &seen, why, sizeof(why)),
			 DRAPLUGIN_STALE);
	memset(&seen, 0, sizeof(seen));
	for (unsigned i = 0; i <= DRAPLUGIN_MEMORY; i++)
		draplugin_seen_add(&seen, "u-other");
	assert_true(seen.full);
	assert_int_equal(seen.n, DRAPLUGIN_MEMORY);
	assert_int_equal(draplugin_judge(o, &sel, SWITCH, &seen, why, sizeof(why)),
			 DRAPLUGIN_STALE);
	labelsel_free(&sel);
	json_object_put(o);
}

static void test_memory(void **state)
{
	struct draplugin_memory m;
	char uid[16];

	(void)state;
	memset(&m, 0, sizeof(m));
	assert_true(draplugin_may_ask(&m, "u-1", 100));
	/* Evicted: never asked again. */
	draplugin_note(&m, "u-1", 0, 100);
	assert_false(draplugin_may_ask(&m, "u-1", 100));
	assert_false(draplugin_may_ask(&m, "u-1", 100000));
	/* Refused: asked again after 10 s, then 20, 40, ... at most 300. */
	draplugin_note(&m, "u-2", 1, 100);
	assert_false(draplugin_may_ask(&m, "u-2", 109));
	assert_true(draplugin_may_ask(&m, "u-2", 110));
	draplugin_note(&m, "u-2", 1, 110);
	assert_false(draplugin_may_ask(&m, "u-2", 129));
	assert_true(draplugin_may_ask(&m, "u-2", 130));
	for (unsigned i = 0; i < 10; i++)
		draplugin_note(&m, "u-2", -1, 1000);
	assert_false(draplugin_may_ask(&m, "u-2", 1299));
	assert_true(draplugin_may_ask(&m, "u-2", 1300));
	/* Then evicted: done with it. */
	draplugin_note(&m, "u-2", 0, 1300);
	assert_false(draplugin_may_ask(&m, "u-2", 5000));
	/* Full: the oldest entry makes room, the newest are kept. */
	for (unsigned i = 0; i < DRAPLUGIN_MEMORY; i++) {
		snprintf(uid, sizeof(uid), "n-%u", i);
		draplugin_note(&m, uid, 0, 2000);
	}
	assert_int_equal(m.n, DRAPLUGIN_MEMORY);
	assert_true(draplugin_may_ask(&m, "u-1", 2000));
	assert_true(draplugin_may_ask(&m, "u-2", 2000));
	assert_false(draplugin_may_ask(&m, "n-0", 2000));
	snprintf(uid, sizeof(uid), "n-%u", DRAPLUGIN_MEMORY - 1);
	assert_false(draplugin_may_ask(&m, uid, 2000));
}

static void test_start_and_series(void **state)
{
	struct draplugin p;
	struct err e;
	char *text;

	(void)state;
	/* Off: its gauge 0, no counters. */
	assert_int_equal(draplugin_start(&p, NULL, NULL, "n1", &e), 0);
	assert_false(p.on);
	text = draplugin_render(&p);
	assert_non_null(text);
	assert_non_null(
		strstr(text, "nvidia_driver_installer_agent_dra_plugin_restarts_enabled 0\n"));
	assert_null(strstr(text, "evictions_total"));
	free(text);
	draplugin_stop(&p);
	/* No client: off as well. */
	assert_int_equal(draplugin_start(&p, DRAPLUGIN_DEFAULT_SELECTOR, NULL, "n1", &e), 0);
	assert_false(p.on);
	draplugin_stop(&p);
	/* A selector that is not one: refused, whatever the client. */
	assert_int_equal(draplugin_start(&p, "a in (", NULL, "n1", &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "--dra-plugin-selector: 'a in (' is not a label selector"));
	/* On: the counters by answer. */
	memset(&p, 0, sizeof(p));
	p.on = true;
	p.evicted = 2;
	p.refused = 1;
	text = draplugin_render(&p);
	assert_non_null(text);
	assert_non_null(
		strstr(text, "nvidia_driver_installer_agent_dra_plugin_restarts_enabled 1\n"));
	assert_non_null(strstr(
		text,
		"nvidia_driver_installer_agent_dra_plugin_evictions_total{result=\"evicted\"} 2\n"));
	assert_non_null(strstr(
		text,
		"nvidia_driver_installer_agent_dra_plugin_evictions_total{result=\"refused\"} 1\n"));
	assert_non_null(strstr(
		text,
		"nvidia_driver_installer_agent_dra_plugin_evictions_total{result=\"failed\"} 0\n"));
	free(text);
}

/* ---- the looks, against the API server stand-in ------------------------------------- */

/* A plugin pod on n1: NAME, its metadata members EXTRA, its container statuses ST. */
#define LPOD(name, extra, st)                                                                      \
	"{\"metadata\": {\"namespace\": \"dra\", \"name\": \"" name "\", \"uid\": \"u-" name       \
	"\", \"labels\": {" PLUGIN "}" extra "}, \"spec\": {\"nodeName\": \"n1\", "                \
	"\"containers\": [{\"name\": \"gpus\"}]}, \"status\": {\"phase\": \"Running\", "           \
	"\"containerStatuses\": [" st "]}}"
#define CRASHING                                                                                   \
	"{\"name\": \"gpus\", \"state\": {\"waiting\": {\"reason\": \"CrashLoopBackOff\"}}}"
#define LATE RUNNING("gpus", "2099-01-01T00:00:00Z")
#define EARLY RUNNING("gpus", "2020-01-01T00:00:00Z")
#define NODES "\"nodes\": [{\"metadata\": {\"name\": \"n1\"}}]"

/* A crash-looping pod, two leaving, one fresh: waited for (the first leaving one). */
static int setup_waits(void **state)
{
	static const char pods[] =
		"{" NODES ", \"pods\": [" LPOD("a-crash", "", CRASHING) ", " LPOD(
			"b-leave", NOW_LEAVING, LATE) ", " LPOD("c-leave", NOW_LEAVING,
								LATE) ", " LPOD("d-fresh", "",
										LATE) "]}";

	return kubestub_setup(state, "draplugin-waits", "dra", pods);
}

#define CREATING                                                                                   \
	"{\"name\": \"gpus\", \"state\": {\"waiting\": {\"reason\": \"ContainerCreating\"}}}"

/* A crash-looping pod, one started before the switch (no grace period: gone once
 * evicted), one fresh, one starting (the DaemonSet's new pod, its container being made). */
static int setup_settles(void **state)
{
	static const char pods[] =
		"{" NODES ", \"pods\": [" LPOD("a-crash", "", CRASHING) ", " LPOD(
			"b-old", "", EARLY) ", " LPOD("d-fresh", "", LATE) ", " LPOD("e-new", "",
										     CREATING) "]}";

	return kubestub_setup(state, "draplugin-settles", "dra", pods);
}

/* No pod of the default selector's; one with the GPU Operator's label. */
static int setup_none(void **state)
{
	return kubestub_setup(
		state, "draplugin-none", "dra",
		"{" NODES ", \"pods\": [{\"metadata\": {\"namespace\": \"gpu-operator\", "
		"\"name\": \"op-kp\", \"uid\": \"u-op\", \"labels\": {\"app\": "
		"\"nvidia-dra-driver-kubelet-plugin\"}}, \"spec\": {\"nodeName\": \"n1\", "
		"\"containers\": [{\"name\": \"gpus\"}]}, \"status\": {\"phase\": \"Running\", "
		"\"containerStatuses\": [" LATE "]}}]}");
}

/* The fixture's install directory switched now (.current made), the restarts started. */
static int start_look(struct kubestub_fixture *s, struct draplugin *p, struct draplugin_look *l)
{
	char path[200];

	snprintf(path, sizeof(path), "%s/idir", s->f.root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/idir/.current", s->f.root);
	assert_int_equal(symlink(".versions/x", path), 0);
	l->root_fd = open(s->f.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(l->root_fd >= 0);
	l->install_dir = "/idir";
	l->active = true;
	log_setup(LOG_FORMAT_TEXT, LOG_INFO);
	return draplugin_start(p, DRAPLUGIN_DEFAULT_SELECTOR, s->k, "n1", &(struct err){0});
}

/* N looks, their log lines into LOG (a file the test reads after), each look's answer
 * into ANSWERS ('1' true, '0' false). */
static void looks(struct draplugin *p, const struct draplugin_look *l, unsigned n, const char *log,
		  char *answers)
{
	int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), saved = dup(2);

	assert_true(fd >= 0 && saved >= 0);
	assert_true(dup2(fd, 2) >= 0);
	for (unsigned i = 0; i < n; i++)
		answers[i] = draplugin_look(p, l) ? '1' : '0';
	answers[n] = '\0';
	assert_true(dup2(saved, 2) >= 0);
	close(saved);
	close(fd);
}

/* The lines of FILE holding NEEDLE. */
static int lines_with(const char *file, const char *needle)
{
	char line[4096];
	int n = 0;
	FILE *f = fopen(file, "r");

	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return n;
}

/*
 * Two pods leaving: the wait is said for the first, once, not at each look (the two
 * overwrote each other's line before); the crash-looping pod said once as a WARNING, never
 * waited for; the upgrade's reason names the first pod held for and how to see it.
 */
static void test_look_waits(void **state)
{
	struct kubestub_fixture *s = *state;
	struct draplugin p;
	struct draplugin_look l;
	char log[200], answers[8], cause[512];

	assert_int_equal(start_look(s, &p, &l), 0);
	snprintf(log, sizeof(log), "%s/log", s->f.root);
	looks(&p, &l, 3, log, answers);
	assert_string_equal(answers, "000");
	assert_int_equal(lines_with(log, "the switch waits for a pod of it"), 1);
	assert_int_equal(lines_with(log, "pod=b-leave namespace=dra reason=leaving"), 1);
	assert_int_equal(lines_with(log, "pod=c-leave"), 0);
	assert_int_equal(lines_with(log,
				    "WARN  agent: NVIDIA's DRA kubelet plugin: a pod of it has "
				    "a container that does not run; the switch does not wait"),
			 1);
	assert_int_equal(lines_with(log, "pod=a-crash namespace=dra reason=not running (container "
					 "gpus, CrashLoopBackOff) fix=kubectl -n dra describe pod "
					 "a-crash)"),
			 1);
	draplugin_cause(&p, cause, sizeof(cause));
	assert_string_equal(cause,
			    "NVIDIA's DRA kubelet plugin's pod dra/b-leave: leaving, waited for "
			    "until it is gone (see kubectl -n dra describe pod b-leave; "
			    "--dra-plugin-selector none turns the restart off)");
	assert_int_equal(kubestub_logged(&s->ks, "/eviction", NULL), 0);
	/* The list refused (403): the reason says so, not the pod of the look before. */
	assert_int_equal(kubestub_put(s->ks.faults, "{\"faults\": [{\"method\": \"GET\", "
						    "\"path\": \"/api/v1/pods\", \"status\": 403, "
						    "\"times\": 1}]}"),
			 0);
	looks(&p, &l, 1, log, answers);
	assert_string_equal(answers, "0");
	draplugin_cause(&p, cause, sizeof(cause));
	assert_ptr_equal(strstr(cause, "NVIDIA's DRA kubelet plugin's pods not known: listing the "
				       "node's pods: "),
			 cause);
	assert_non_null(strstr(cause, "(--dra-plugin-selector none turns the restart off)"));
	close(l.root_fd);
	draplugin_stop(&p);
}

/* The stale pod evicted, then settled though a pod crash-loops (a crash loop failed a
 * working upgrade before); the crash said once over both looks. */
static void test_look_settles(void **state)
{
	struct kubestub_fixture *s = *state;
	struct draplugin p;
	struct draplugin_look l;
	char log[200], answers[8], cause[512];

	assert_int_equal(start_look(s, &p, &l), 0);
	snprintf(log, sizeof(log), "%s/log", s->f.root);
	looks(&p, &l, 1, log, answers);
	assert_string_equal(answers, "0");
	/* A pod starting is said as one (INFO); one crash-looping as a WARNING. */
	assert_int_equal(lines_with(log,
				    "INFO  agent: NVIDIA's DRA kubelet plugin: a pod of it has "
				    "a container that does not run"),
			 1);
	assert_int_equal(lines_with(log, "pod=e-new namespace=dra reason=not running (container "
					 "gpus, ContainerCreating)"),
			 1);
	assert_int_equal(lines_with(log,
				    "WARN  agent: NVIDIA's DRA kubelet plugin: a pod of it has "
				    "a container that does not run"),
			 1);
	draplugin_cause(&p, cause, sizeof(cause));
	assert_non_null(strstr(cause, "pod dra/b-old: running since before the switch, its "
				      "eviction asked (see kubectl -n dra describe pod b-old;"));
	assert_int_equal(kubestub_logged(&s->ks, "/pods/b-old/eviction", NULL), 1);
	looks(&p, &l, 2, log, answers + 1);
	assert_string_equal(answers, "011");
	assert_int_equal(lines_with(log, "its running pods on the node all started after the "
					 "driver's switch"),
			 1);
	assert_int_equal(lines_with(log, "pods=1 not_running=2)"), 1);
	assert_int_equal(lines_with(log, "pod=a-crash"), 0); /* said in the first look's log */
	close(l.root_fd);
	draplugin_stop(&p);
}

/* No pod of the selector's: "no plugin pod", and the GPU Operator's pod named with the
 * option and variable that select it. */
static void test_look_none(void **state)
{
	struct kubestub_fixture *s = *state;
	struct draplugin p;
	struct draplugin_look l;
	char log[200], answers[8];

	assert_int_equal(start_look(s, &p, &l), 0);
	snprintf(log, sizeof(log), "%s/log", s->f.root);
	looks(&p, &l, 2, log, answers);
	assert_string_equal(answers, "11");
	assert_int_equal(lines_with(log, "no plugin pod on the node after the driver's switch"), 1);
	assert_int_equal(
		lines_with(log,
			   "pod=op-kp namespace=gpu-operator selector=" DRAPLUGIN_DEFAULT_SELECTOR
			   " fix=--dra-plugin-selector app=nvidia-dra-driver-kubelet-plugin "
			   "(NVIDIA_DRA_PLUGIN_SELECTOR=app=nvidia-dra-driver-kubelet-plugin))"),
		1);
	close(l.root_fd);
	draplugin_stop(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_judge),
		cmocka_unit_test(test_judge_spec_and_phase),
		cmocka_unit_test(test_known_selector),
		cmocka_unit_test(test_seen),
		cmocka_unit_test(test_memory),
		cmocka_unit_test(test_start_and_series),
		cmocka_unit_test_setup_teardown(test_look_waits, setup_waits, kubestub_teardown),
		cmocka_unit_test_setup_teardown(test_look_settles, setup_settles,
						kubestub_teardown),
		cmocka_unit_test_setup_teardown(test_look_none, setup_none, kubestub_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
