// SPDX-License-Identifier: Apache-2.0
/*
 * An install run's word on its own Node (cmd/nodeask.h): two annotations, each a JSON
 * object in a string (annotations are strings: Kubernetes API conventions,
 * ObjectMeta.annotations), written with one JSON merge patch each (RFC 7386: null
 * removes), Events on the Node through kube/ (core/v1 Event, as the agent posts its
 * upgrade's), and the Node's condition through its status subresource (kube/node.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/nodeask.h"
#include "cmd/session.h"
#include "kube/kube.h"
#include "util/jsonc.h"
#include "util/interrupt.h"
#include "util/log.h"
#include "util/str.h"

#define COMPONENT "nvidia-driver-installer"
/* A call's retries end within this: an API server that does not answer delays no install long. */
#define NODEASK_DEADLINE_S 10

struct nodeask {
	struct kube *k;
	struct kube_config kc;
	char node[256];
	/* What the Node holds as this run last set it. */
	char image[1024];	 /* the node-image annotation's text, "" when not made */
	bool image_sent;	 /* the Node took it */
	char wants_sent[1024];	 /* the annotation's text, "" when not sent */
	char event_for[1024];	 /* the wants text the Wanted Event was posted for */
	char last_error[256];	 /* the last failure logged, so that a repeat is not */
	bool condition;		 /* --node-condition: the run writes the Node's condition */
	char condition_said[32]; /* the reason this run's last condition write put there */
	bool unreachable;	 /* the last call had no answer (EXIT_UNREACHABLE) */
};

struct nodeask *nodeask_new(const struct config *c, char *why, size_t size)
{
	_cleanup_(nodeask_freep) struct nodeask *a = NULL;
	struct err e;

	err_clear(&e);
	if (!c->node_name || !c->node_name[0]) {
		snprintf(why, size, "no --node-name (NVIDIA_NODE_NAME): not in a pod");
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		snprintf(why, size, "out of memory");
		return NULL;
	}
	snprintf(a->node, sizeof(a->node), "%s", c->node_name);
	a->condition = c->node_condition;
	if (kube_config_in_cluster(c->kube_sa_dir, &a->kc, &e) < 0) {
		snprintf(why, size, "%s", e.msg);
		return NULL;
	}
	a->kc.deadline_s = NODEASK_DEADLINE_S;
	a->k = kube_new(&a->kc, &e);
	if (!a->k) {
		snprintf(why, size, "%s", e.msg);
		return NULL;
	}
	return TAKE_PTR(a);
}

void nodeask_free(struct nodeask *a)
{
	if (!a)
		return;
	kube_free(a->k);
	free(a);
}

/* A failed call: one warning line, SAID, not repeated while the cause stays the same. */
static int failed_as(struct nodeask *a, const char *what, const struct err *e, const char *said)
{
	char cause[sizeof(a->last_error)];

	a->unreachable = e->code == EXIT_UNREACHABLE;
	str_fmt_cut(cause, sizeof(cause), "%s", e->msg);
	if (strcmp(cause, a->last_error) != 0)
		log_kv(LOG_WARN, "node", said, "what", what, "node", a->node, "error", e->msg,
		       LOG_END);
	memcpy(a->last_error, cause, sizeof(cause));
	return -1;
}

static int failed(struct nodeask *a, const char *what, const struct err *e)
{
	return failed_as(
		a, what, e,
		"the Node could not be told: the install goes on; told again at the next check");
}

/* Annotation KEY set to TEXT (NULL: removed) with one merge patch. 0 or -1 (logged). */
static int annotate(struct nodeask *a, const char *key, const char *text)
{
	_cleanup_(json_object_putp) json_object *patch = json_object_new_object();
	json_object *meta = json_object_new_object(), *ann = json_object_new_object();
	struct err e;

	err_clear(&e);
	if (!patch || !meta || !ann) {
		json_object_put(meta);
		json_object_put(ann);
		err_set(&e, EXIT_UNEXPECTED, "out of memory");
		return failed(a, key, &e);
	}
	json_object_object_add(ann, key, text ? json_object_new_string(text) : NULL);
	json_object_object_add(meta, "annotations", ann);
	json_object_object_add(patch, "metadata", meta);
	if (kube_node_patch(a->k, a->node, patch, &e) < 0)
		return failed(a, key, &e);
	a->last_error[0] = '\0';
	a->unreachable = false;
	return 0;
}

/*
 * The Node's condition False with REASON and MESSAGE (kube_node_condition_set: the
 * transition time kept while it stays False). 0 or -1 (logged).
 */
static int condition(struct nodeask *a, const char *reason, const char *message)
{
	const struct kube_condition c = {.type = KUBE_CONDITION_TYPE,
					 .status = "False",
					 .reason = reason,
					 .message = message};
	struct kube_condition_result r;
	struct err e;

	err_clear(&e);
	if (kube_node_condition_set(a->k, a->node, &c, &r, &e) < 0)
		return strcmp(reason, "WaitingForPackage") == 0
			       ? failed(a, KUBE_CONDITION_TYPE, &e)
			       : failed_as(a, KUBE_CONDITION_TYPE, &e,
					   "the Node could not be told: the install goes on");
	a->last_error[0] = '\0';
	a->unreachable = false;
	snprintf(a->condition_said, sizeof(a->condition_said), "%s", reason);
	if (r.changed)
		log_kv(LOG_INFO, "node", "the Node's condition set", "type", KUBE_CONDITION_TYPE,
		       "status", "False", "reason", reason, "was",
		       r.old_reason[0] ? r.old_reason : "none", U64("conflicts", r.conflicts),
		       LOG_END);
	return 0;
}

int nodeask_installing(struct nodeask *a, const char *what)
{
	if (!a || !a->condition || strcmp(a->condition_said, "Installing") == 0)
		return 0;
	if (a->unreachable) /* said once already (failed): no second wait for the same */
		return -1;
	return condition(a, "Installing", what);
}

int nodeask_failed(struct nodeask *a, const struct err *e)
{
	char msg[1024];

	if (!a || !a->condition || a->unreachable || e->code > INTERRUPT_EXIT_BASE)
		return 0;
	str_fmt_cut(msg, sizeof(msg), "%s (exit %d)", e->msg, e->code);
	return condition(a, "InstallFailed", msg);
}

/* O as one line of JSON into BUF; 0, or -1 (too long, out of memory). */
static int compact(json_object *o, char *buf, size_t size)
{
	const char *s = o ? json_object_to_json_string_ext(
				    o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
			  : NULL;

	return s ? str_fmt(buf, size, "%s", s) : -1;
}

int nodeask_image(struct nodeask *a, const struct host *h)
{
	_cleanup_(json_object_putp) json_object *o = json_object_new_object();

	if (!a)
		return 0;
	if (o) {
		json_object_object_add(o, "os", session_json_nonempty(h->os_id));
		json_object_object_add(o, "os_build", session_json_nonempty(h->os_build_id));
		json_object_object_add(o, "kernel", json_object_new_string(h->kernel));
		json_object_object_add(o, "arch", json_object_new_string(h->arch));
	}
	if (compact(o, a->image, sizeof(a->image)) < 0) {
		struct err e;

		a->image[0] = '\0';
		err_set(&e, EXIT_UNEXPECTED, "the node's image is too long to publish");
		return failed(a, NODEASK_IMAGE, &e);
	}
	a->image_sent = annotate(a, NODEASK_IMAGE, a->image) == 0;
	return a->image_sent ? 0 : -1;
}

/* The annotation's text for W (SPEC: kernel, arch, os, os_build, version, flavour, since). */
static int wants_text(const struct waiting *w, char *buf, size_t size)
{
	_cleanup_(json_object_putp) json_object *o = json_object_new_object();
	char since[STR_UTC_SIZE];

	if (!o)
		return -1;
	(void)waiting_time_format(w->since, since);
	json_object_object_add(o, "kernel", json_object_new_string(w->kernel));
	json_object_object_add(o, "arch", json_object_new_string(w->arch));
	json_object_object_add(o, "os", json_object_new_string(w->os));
	json_object_object_add(o, "os_build", session_json_nonempty(w->os_build));
	json_object_object_add(o, "driver_version", json_object_new_string(w->driver_version));
	json_object_object_add(o, "flavour", json_object_new_string(w->flavour));
	json_object_object_add(o, "since", json_object_new_string(since));
	return compact(o, buf, size);
}

static int event(struct nodeask *a, const char *type, const char *reason, const char *msg)
{
	struct err e;

	err_clear(&e);
	if (kube_event(a->k, a->kc.namespace,
		       &(struct kube_event){.node = a->node,
					    .type = type,
					    .reason = reason,
					    .message = msg,
					    .component = COMPONENT,
					    .action = "DriverPackage"},
		       &e) < 0)
		return failed(a, reason, &e);
	return 0;
}

/* What the run waits for, for people: the Event's and the condition's message. */
static void waiting_message(const struct waiting *w, char *buf, size_t size)
{
	str_fmt_cut(buf, size,
		    "waiting for the repository to serve kernel %s (driver %s, %s, %s, os %s%s%s)",
		    w->kernel, w->driver_version, w->flavour, w->arch, w->os,
		    w->os_build[0] ? " build " : "", w->os_build);
}

int nodeask_wants(struct nodeask *a, const struct waiting *w)
{
	char text[1024], msg[1024];

	if (!a)
		return 0;
	/* The image, when the run's first word did not reach the Node. */
	if (a->image[0] && !a->image_sent)
		a->image_sent = annotate(a, NODEASK_IMAGE, a->image) == 0;
	if (wants_text(w, text, sizeof(text)) < 0) {
		struct err e;

		err_set(&e, EXIT_UNEXPECTED, "what the node waits for is too long to publish");
		return failed(a, NODEASK_WANTS, &e);
	}
	if (strcmp(text, a->wants_sent) != 0) {
		if (annotate(a, NODEASK_WANTS, text) < 0)
			return -1;
		snprintf(a->wants_sent, sizeof(a->wants_sent), "%s", text);
	}
	if (strcmp(text, a->event_for) == 0)
		return 0;
	waiting_message(w, msg, sizeof(msg));
	if (event(a, "Warning", "DriverPackageWanted", msg) < 0)
		return -1;
	snprintf(a->event_for, sizeof(a->event_for), "%s", text);
	return 0;
}

int nodeask_waiting(struct nodeask *a, const struct waiting *w)
{
	char msg[1024];

	if (!a || !a->condition)
		return 0;
	waiting_message(w, msg, sizeof(msg));
	return condition(a, "WaitingForPackage", msg);
}

int nodeask_done(struct nodeask *a, const struct waiting *w)
{
	char msg[1024], since[STR_UTC_SIZE];
	int r;

	if (!a)
		return 0;
	r = annotate(a, NODEASK_WANTS, NULL);
	if (r == 0)
		a->wants_sent[0] = '\0';
	if (!w)
		return r;
	(void)waiting_time_format(w->since, since);
	str_fmt_cut(
		msg, sizeof(msg),
		"the repository serves kernel %s (driver %s, %s): installed, after waiting since %s",
		w->kernel, w->driver_version, w->flavour, since);
	return event(a, "Normal", "DriverPackageArrived", msg) < 0 ? -1 : r;
}
