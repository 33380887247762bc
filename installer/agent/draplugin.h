/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVIDIA's DRA kubelet plugin after a driver switch (docs/design.md, "NVIDIA's DRA driver").
 * Its GPU plugin resolves libnvidia-ml.so.1 under the driver root once, at its start, to the
 * file the link names (k8s-dra-driver-gpu cmd/gpu-kubelet-plugin/nvlib.go:54-75, root.go:
 * 84-110: filepath.EvalSymlinks), and keeps the driver's common CDI edits 5 minutes
 * (cdi.go:112-136); its compute-domain plugin, in the same pod, writes its base spec from the
 * driver's files once, at its start (compute-domain-kubelet-plugin device_state.go:118,
 * cdi.go:142-205). Two values are fixed at the start as well: the compute-domain plugin's
 * IMEX channel device numbers, the major read from /proc/devices once (its nvlib.go:80-94,
 * 370-385), which the driver allocates dynamically (open-gpu-kernel-modules
 * nv-caps-imex.c:185-187: alloc_chrdev_region), so a reload may move it; and the GPU
 * plugin's driverVersion and cudaDriverVersion device attributes (gpu-kubelet-plugin
 * deviceinfo.go:172-177, read at its enumeration, nvlib.go:506-513, 598-610). After a
 * switch all of these name the old version (its files, which the switch removed): only a
 * start reads the new ones. So once the new version is active the agent evicts each of
 * the node's plugin pods (a label selector) whose running containers did not all start
 * after the switch, and waits until those leaving are gone; their DaemonSet makes them
 * again. Claims the plugin
 * prepared survive its restart: it checkpoints them under the kubelet's plugin directory
 * and takes them back at its start (gpu-kubelet-plugin device_state.go:161-218).
 *
 * The switch's time is the mtime of INSTALL_DIR/.current: publish_activate makes a fresh
 * link and renames it over the old one (installer/stage/publish.c), for an upgrade, a
 * rollback, and an install by hand alike; nothing else writes it but ldcache.c's
 * order_after_switch, which only dates it a tick earlier.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "agent/labelsel.h"
#include "kube/kube.h"

/*
 * The plugin's pods, as NVIDIA's chart labels them whatever its name: the fixed label of
 * templates/kubeletplugin.yaml:41, where the selector labels' `<name>-component`
 * (templates/_helpers.tpl:78-85) follows nameOverride and selectorLabelsOverride.
 */
#define DRAPLUGIN_DEFAULT_SELECTOR "nvidia-dra-driver-gpu-component=kubelet-plugin"
/*
 * The GPU Operator's DRA kubelet plugin (its state-dra-driver): its pods carry
 * app=nvidia-dra-driver-kubelet-plugin, the DaemonSet's selector, and not the chart's label
 * (gpu-operator a22dbf6 manifests/state-dra-driver/0500_daemonset.yaml:20-33).
 */
#define DRAPLUGIN_OPERATOR_SELECTOR "app=nvidia-dra-driver-kubelet-plugin"
/* The pods the agent remembers asking: more than a node runs plugin pods of. */
#define DRAPLUGIN_MEMORY 32
/* A refused eviction (a budget) is asked again after this, doubled up to the most. */
#define DRAPLUGIN_BACKOFF_FIRST_S 10
#define DRAPLUGIN_BACKOFF_MAX_S 300

/*
 * The UIDs of the plugin's pods on the node when the agent first listed them after the
 * current switch: a pod made later is the DaemonSet's answer, whatever its startedAt says
 * (a clock stepped back after the switch dates every new pod before it).
 */
struct draplugin_seen {
	char uid[DRAPLUGIN_MEMORY][64];
	size_t n;
	bool full; /* more than fit: every pod judged by its start alone */
};

/* Notes UID among SEEN. */
void draplugin_seen_add(struct draplugin_seen *seen, const char *uid);

/* What a pod is to the plugin's restart after a switch (draplugin_judge). */
enum draplugin_verdict {
	DRAPLUGIN_OTHER, /* not the plugin's (SEL does not match), or finished */
	DRAPLUGIN_FRESH, /* running, every container started after the switch */
	DRAPLUGIN_WAIT,	 /* leaving, or a startedAt not a time: the switch is not settled */
	DRAPLUGIN_IDLE,	 /* a container not running, none since before it: not waited for */
	DRAPLUGIN_STALE, /* a container of it runs since before the switch: to evict */
};

/*
 * What POD (an item of kube_pods_on_node) is to the plugin's restart after a switch at
 * ACTIVATED (Unix seconds, the fraction dropped), when SEL matches its labels and it has not
 * finished (phase Succeeded or Failed). STALE: it was there when the agent first listed the
 * pods after the switch (its UID in SEEN; SEEN NULL or full: not asked), is not leaving (no
 * deletionTimestamp) and a container of it runs since before the switch, or in its very
 * second (startedAt has whole seconds: a pod started in it may have read the old files).
 * WAIT: leaving (a terminating pod's containers still run, and its plugin still prepares
 * claims from the files it cached, until the kubelet has stopped it and the API server
 * removed it), or a startedAt that is not a time (or a running container without one).
 * IDLE: not STALE, and a container of it does not run (crash-looping, its image not pulled,
 * not started yet): a pod whose plugin does not run prepares no claim, and a container that
 * starts reads the new files, so the switch does not wait for it (a crash loop would else
 * fail an upgrade whose driver works); not FRESH either. FRESH: every container runs, each
 * started after the switch or the pod made after the agent's first list. WHY says which
 * container started when, or why the pod waits or is left.
 */
enum draplugin_verdict draplugin_judge(json_object *pod, const struct labelsel *sel,
				       int64_t activated, const struct draplugin_seen *seen,
				       char *why, size_t size);

/*
 * Which of the known selectors of the plugin's pods (DRAPLUGIN_DEFAULT_SELECTOR, the chart's;
 * DRAPLUGIN_OPERATOR_SELECTOR, the GPU Operator's) POD's labels match, or NULL: a pod the
 * configured selector misses may be the plugin's all the same.
 */
const char *draplugin_known_selector(json_object *pod);

/* One pod asked to leave: its UID, the answer, and when it may be asked again. */
struct draplugin_asked {
	char uid[64];
	bool evicted;	   /* evicted (or gone): never asked again */
	unsigned refusals; /* refused or failed, in a row */
	uint64_t next_s;   /* not asked before then (monotonic seconds) */
};

struct draplugin_memory {
	struct draplugin_asked a[DRAPLUGIN_MEMORY];
	size_t n, oldest; /* once full, the oldest entry makes room */
};

/* Whether the pod of UID may be asked to leave at NOW: never once evicted, not in backoff. */
bool draplugin_may_ask(const struct draplugin_memory *m, const char *uid, uint64_t now);

/* Notes the answer to the pod of UID at NOW: kube_evict's 0 (evicted), 1 (refused), -1. */
void draplugin_note(struct draplugin_memory *m, const char *uid, int answer, uint64_t now);

/* The agent's side: the selector, the client, and what was asked. */
struct draplugin {
	bool on;
	struct kube *k;	  /* the upgrader's or the condition's: not freed here */
	const char *node; /* this Node's name */
	const char *selector;
	struct labelsel sel;
	struct draplugin_memory mem;
	/* The switch whose plugin pods were all found started after it: not listed again. */
	int64_t settled_s, settled_ns;
	bool is_settled;
	/* The pods there at the first list after the switch of seen_s/seen_ns. */
	struct draplugin_seen seen;
	int64_t seen_s, seen_ns;
	bool has_seen;
	bool said_waiting; /* "the switch is in progress" said for the current switch */
	char waiting[300]; /* the first pod waited for and why, said once until it changes */
	struct draplugin_seen idle_said; /* the pods said IDLE since the switch */
	/* The look's first pod that holds the switch (WAIT or STALE), and why in short. */
	char holding_ns[64], holding_name[128], holding_why[80];
	bool list_failed;    /* the look's list of the node's pods failed (error says why) */
	bool said_unmatched; /* the selector matched none, a known plugin label some: said */
	char error[256];     /* the last error said, until it changes */
	uint64_t evicted, refused, failed;
};

/*
 * Starts the restarts for the pods SELECTOR (NULL: off) matches on NODE, through client K
 * (NULL: none, off, said once). Returns 0, or -1 with EXIT_USAGE for a selector that does
 * not parse.
 */
_must_check_ int draplugin_start(struct draplugin *p, const char *selector, struct kube *k,
				 const char *node, struct err *e);
void draplugin_stop(struct draplugin *p);

/* What a look tells the restarts. */
struct draplugin_look {
	int root_fd;
	const char *install_dir;
	/* The installed version is loaded and the switch is over (no installer run, no upgrade
	 * activating; one validating is over): its files are the ones a start reads. */
	bool active;
};

/*
 * One look: the plugin pods of a switch not yet settled listed, the stale ones evicted.
 * True when every plugin pod on the node is FRESH or IDLE (or off, or no switch): none is
 * left to evict nor still leaving. The first pod that holds the switch is noted for
 * draplugin_cause; a pod IDLE is said once a switch (a WARNING), the pod waited for once
 * until another is the first, and the end of the switch as "no plugin pod on the node"
 * when none is selected. An upgrade lifts its cordon only then, so that no pod scheduled
 * on the node gets a claim the old plugin prepared (its cached edits name the removed
 * files, and a claim prepared is never prepared again: gpu-kubelet-plugin device_state.go:240-256).
 */
bool draplugin_look(struct draplugin *p, const struct draplugin_look *l);

/*
 * Why the last draplugin_look was false, for the upgrade's reason into BUF: the first pod
 * that holds the switch (NAMESPACE/NAME: why), how to see it (kubectl describe) and the
 * option that turns the restart off; or the list's error; or a switch not over.
 */
void draplugin_cause(const struct draplugin *p, char *buf, size_t size);

/* The series (docs/metrics.md, "NVIDIA's DRA kubelet plugin"), malloc'd, or NULL. */
char *draplugin_render(const struct draplugin *p);
