/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The face of agent/, the node agent's room: what cmd/ calls, and nothing more. cmd/agent.c
 * parses the options into struct agent_opts, gives the calls only the program can make
 * (struct agent_calls), and runs the loop and the HTTP routing; agent/ decides what each
 * look does, which daemons run, and each upgrade's step. status and doctor read the node
 * the way the agent looks at it (struct nodestate). The rest of agent/ is in its other
 * headers, which only agent/ and the tests include.
 */
#pragma once

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "expose/expose.h"
#include "host/host.h"
#include "kernel/kernel.h"
#include "stage/stage.h"
#include "util/cleanup.h"
#include "util/err.h"

/* ---- the node, as the agent looks at it and status and doctor report it ------------- */

#define NODESTATE_MAX_NODES 32

/* What a look at the node reads of the configuration: host paths, and the CDI kind. */
struct nodestate_opts {
	const char *kernel_release; /* --kernel-release, or NULL: the running kernel's */
	const char *install_dir;    /* host path */
	const char *cdi_dir;	    /* host path of the CDI spec directory */
	const char *cdi_kind;	    /* the kind our spec declares */
};

struct gpu_binding {
	char bdf[32];
	char driver[32]; /* the PCI driver bound to it, or "" */
};

struct nodestate {
	struct host host;
	bool host_ok;
	struct gpu_binding bindings[16];

	bool installed;
	struct manifest manifest;
	char install_id[256];
	char signer[256];   /* of the installed nvidia.ko, or "" */
	bool signed_module; /* the installed nvidia.ko carries a signature */

	char loaded_version[64]; /* of the live nvidia module, or "" */
	char loaded_type[16];	 /* its flavour, "open" or "proprietary" (its taint), or "" */
	struct ktrust trust;

	bool has_mount;
	struct mount_info mount;
	uint64_t free_mib; /* on the install dir's file system */

	char nodes[NODESTATE_MAX_NODES][48]; /* /dev/nvidia* present */
	size_t n_nodes;
	bool nodes_ok; /* nvidiactl and one node per GPU, as character devices */

	bool firmware_ok; /* the installed version's GSP firmware is reachable by the kernel */
	char firmware_how[128];
	bool ld_ok; /* the host's ld cache lists libcuda.so.1 in the install dir */
	bool cdi_present, labels_present, ready_present;
	char cdi_other[4200]; /* another producer's spec of our CDI kind, or "" */

	bool nvml_ok;
	struct nvml_report nvml;
	char nvml_error[512];
};

/*
 * Gathers the state under ROOT_FD as O says (agent/nodestate.c). Returns 0, or -1 when the
 * root cannot be read at all.
 */
_must_check_ int nodestate_collect(const struct nodestate_opts *o, int root_fd, struct nodestate *s,
				   struct err *e);
void nodestate_done(struct nodestate *s);

/* ---- the agent ------------------------------------------------------------------------ */

/* What the agent reads of the configuration about driver upgrades (agent/upgrader.c). */
struct agent_upgrade_opts {
	bool off;		/* --upgrades off */
	const char *node_name;	/* --node-name; NULL: upgrades off, said */
	const char *sa_dir;	/* the pod's service account: token, ca.crt, namespace */
	const char *limit;	/* "N" or "P%" of the DaemonSet's nodes upgrading at once */
	const char *daemonset;	/* the DaemonSet a P% limit counts the nodes of */
	bool cordon;		/* cordon the node while it upgrades */
	unsigned deadline_s;	/* how long GPU pods may run on before the deadline's policy */
	bool evict_on_deadline; /* past it: evict them (else wait) */
	unsigned validate_s;	/* how long the new version may take to be ready */
	/* The controls NVIDIA's upgrade policy has (k8s-operator-libs upgrade_spec.go). */
	const char *wait_for;	  /* a label selector of pods waited for first, or NULL */
	unsigned wait_timeout_s;  /* how long they are waited for; 0: as long as they run */
	bool evict_force;	  /* an eviction may move a GPU pod with no controller */
	bool evict_emptydir;	  /* ... and one with an emptyDir volume */
	bool drain;		  /* evict the node's other pods before activating */
	const char *drain_select; /* those of them that match this selector, or NULL: all */
	bool drain_force, drain_emptydir;
	unsigned drain_timeout_s;    /* past it with pods left, the upgrade fails; 0: never */
	const char *max_unavailable; /* "N" or "P%" of the DaemonSet's nodes, or NULL */
	const char *dra_drivers;     /* DRA drivers whose claims hold GPUs; NULL: the default */
};

/* What the agent reads of the configuration about its word on the Node (agent/nodecond.c). */
struct agent_condition_opts {
	bool off;		   /* --node-condition no: the condition is not written */
	unsigned heartbeat_s;	   /* --condition-heartbeat: written at least this often */
	const char *startup_taint; /* --startup-taint's key, or NULL (none) */
	const char *health_taint;  /* --health-taint's KEY:EFFECT, or NULL (none) */
};

/* What the agent reads of the configuration, built once by the command (cmd/agent.c). */
/* --rdma for the agent: nvidia-peermem loaded again after the RDMA stack reloads. */
struct agent_rdma_opts {
	enum kernel_rdma mode;
	char *const *module_certs; /* --module-cert: nvidia-peermem verified with them first */
	size_t n_module_certs;
};

struct agent_opts {
	int root_fd;		    /* the host's /, open (--root) */
	struct nodestate_opts node; /* where the install, its CDI spec and kind are */
	bool cdi_replace;	    /* set aside another producer's spec of our kind */
	const char *metrics_file;   /* a host path for the metrics textfile, or NULL */
	unsigned interval_s;	    /* between two looks */
	unsigned cuda_interval_s;   /* between two CUDA checks while ready */
	struct agent_upgrade_opts upgrade;
	struct agent_condition_opts condition; /* the Node's name and account: UPGRADE's */
	/* NVIDIA's DRA kubelet plugin's pods, restarted after a switch; NULL: never. */
	const char *dra_plugin_selector;
	struct agent_rdma_opts rdma;
};

/* installer_argv (cmd/agent.c) fills 31 at most with every option given; room to grow. */
#define AGENT_MAX_ARGV 48

/* The command's own work, which the agent asks for: ARG is the command's. */
struct agent_calls {
	void *arg;
	/* Whether an installer run holds the installer's lock now (the look waits for it). */
	bool (*installer_running)(void *arg);
	/*
	 * The installer's lock held shared (flock LOCK_SH|LOCK_NB), for a step no installer run
	 * may overlap (nvidia-peermem's reload): the fd to close after, or -1 while a run holds
	 * it. NULL: no lock to take.
	 */
	int (*installer_lock_shared)(void *arg);
	/* The version pending on the node: 1 and RET filled, 0 when none. */
	int (*pending)(void *arg, struct pending *ret);
	/* The report of a pending version that failed: 1 and RET filled, 0 when none. */
	int (*pending_failed)(void *arg, struct pending_failure *ret);
	/*
	 * The installer's command line into ARGV (NULL-ended), for VERSION with P's flavour,
	 * module parameters and layout (P NULL: a rollback, VERSION alone): the agent runs it
	 * as its child (/proc/self/exe).
	 */
	void (*installer_argv)(void *arg, const char *version, const struct pending *p,
			       const char *argv[AGENT_MAX_ARGV]);
	/* The look has judged: what HTTP answers is to say so now, while the look goes on. */
	void (*publish)(void *arg);
};

struct agent;

/*
 * The agent, ready to look: a child subreaper (its daemons stay its children), the control
 * socket listening (agent/control.h), upgrades started as O says, the kernel log open (or
 * a warning: Xids are not watched). O and CALLS must outlive it. Returns it, or NULL with E.
 */
_must_check_ struct agent *agent_new(const struct agent_opts *o, const struct agent_calls *calls,
				     struct err *e);
/* Stops the daemons (in order), ends the installers' holds and upgrades, frees A. NULL: none. */
void agent_free(struct agent *a);
DEFINE_POINTER_CLEANUP(struct agent, agent_free)

/* "/dev/kmsg" while the kernel log is read, else "none". */
const char *agent_kernel_log(const struct agent *a);

/* The descriptors the loop waits on for A (POLLIN): at most AGENT_MAX_FDS, into P. */
#define AGENT_MAX_FDS 6
size_t agent_fds(const struct agent *a, struct pollfd *p);
/* Those of agent_fds' descriptors that were ready: the kernel log read, holds taken or ended. */
void agent_events(struct agent *a, const struct pollfd *p, size_t n);
/* SIGCHLD: reaps the children that ended (the daemons, the installer an upgrade runs). */
void agent_reap(struct agent *a);

/*
 * One look at the node: judged, readiness published (the marker, the labels, the textfile),
 * the daemons run or stopped, an upgrade moved on. While an installer run holds its lock,
 * only the kernel log is read and the textfile written: the look waits for the next one.
 */
void agent_look(struct agent *a);
/* Whether the next look is due at once (an upgrade moved on), not after the interval; cleared. */
bool agent_look_soon(struct agent *a);
/*
 * Keeps an upgrade's slot held between looks: the milliseconds until it is due again, or -1
 * when none is held.
 */
int agent_keep_slot(struct agent *a);

/* The agent's Prometheus text (docs/metrics.md, "The node agent"), malloc'd, or NULL. */
char *agent_render(const struct agent *a);
/* Whether the last look judged that a CUDA job can run (what /readyz answers 200 for). */
bool agent_ready(const struct agent *a);
/* Why not, as /readyz says it: "not ready (REASON): CAUSE\n", malloc'd, or NULL without memory. */
char *agent_not_ready(const struct agent *a);

/* ---- the agent's HTTP endpoint (agent/httpd.c) ---------------------------------------- */

/* What a GET of PATH (NULL: of any path no other page has) answers: copied when published. */
struct httpd_page {
	const char *path;
	int status;
	const char *content_type;
	const char *body;
	unsigned wait_ms; /* for the loop's next publish, while it works; 0: never waits */
};

struct httpd_options {
	/* The liveness path: 503 once the loop has been busy (httpd_busy) for over STALL_S. */
	const char *live_path;
	unsigned stall_s;
};

struct httpd;

/*
 * Listens on ADDR ("127.0.0.1:9470", "0.0.0.0:9470", "[::]:9470"; port 0: the kernel
 * picks). Returns the listening fd (non-blocking, close-on-exec) and the port in *PORT,
 * or -1 with EXIT_USAGE for an address that cannot be bound.
 */
_must_check_ int httpd_listen(const char *addr, unsigned *port, struct err *e);

/*
 * Serves LISTEN_FD (from httpd_listen; the caller keeps it) from a thread of its own, which
 * takes no signal, until httpd_free. Until the first httpd_publish every path is 503.
 * Returns the server, or NULL with E set.
 */
_must_check_ struct httpd *httpd_start(int listen_fd, const struct httpd_options *o, struct err *e);

/* The pages served are now copies of PAGES[N]. Returns 0, or -ENOMEM (the old ones stay). */
int httpd_publish(struct httpd *h, const struct httpd_page *pages, size_t n);

/*
 * The loop begins a step (a look, an event), and ends it, its pages published: requests
 * wait for a publish only in between, and the liveness path fails past STALL_S there.
 */
void httpd_busy(struct httpd *h);
void httpd_idle(struct httpd *h);

/* Stops the thread, closes its clients and frees H. httpd_free(NULL) does nothing. */
void httpd_free(struct httpd *h);
DEFINE_POINTER_CLEANUP(struct httpd, httpd_free)

/* ---- the installer's side of the control socket (agent/control.c) -------------------- */

/*
 * Asks the agent under ROOT_FD to hold its daemons, for WHY. Returns the connection (keep it
 * open while the daemons must stay stopped), -2 when no agent listens (nothing to stop), or
 * -1 with EXIT_IN_USE when the agent did not answer in time or refused. *STOPPED: how many
 * daemons it stopped.
 */
int control_hold(int root_fd, const char *why, unsigned *stopped, struct err *e);

/* ---- the taints the agent keeps (agent/nodecond.c), which config checks ------------- */

/*
 * Whether SPEC is a taint's key (a qualified name, as kube-apiserver validates one), or with
 * WITH_EFFECT, KEY:EFFECT with EFFECT NoSchedule, PreferNoSchedule or NoExecute.
 */
bool nodecond_taint_ok(const char *spec, bool with_effect);

/* ---- the fleet's upgrade limit (agent/slots.c), which config checks ----------------- */

/*
 * The limit: "N" nodes, or "P%" of TOTAL (the DaemonSet's nodes), rounded up as Kubernetes
 * scales maxUnavailable, at least 1 and at most SLOTS_MAX (256). 0 and -1 for a malformed SPEC.
 */
int slots_limit(const char *spec, unsigned total, unsigned *ret);

/* ---- what config checks of the upgrade controls (agent/labelsel.c, upgrade.c, claims.c) -- */

/* Whether S is a label selector (agent/labelsel.h): 0, or -1 with WHY saying what is wrong. */
int labelsel_check(const char *s, char *why, size_t why_size);

/*
 * --upgrade-max-unavailable's SPEC as a count of nodes: "N" (at least 1), or "P%" (1 to 100)
 * of TOTAL, the DaemonSet's nodes, rounded up as k8s-operator-libs rounds maxUnavailable
 * (upgrade_inplace.go, line 55: intstr.GetScaledValueFromIntOrPercent, roundUp true).
 * 0, or -1 for a malformed SPEC.
 */
int upgrade_max_unavailable(const char *spec, unsigned total, unsigned *ret);

/*
 * Whether LIST is a driver list --upgrade-dra-drivers takes (agent/claims.c): "" (none), or
 * names separated by commas, each a DNS subdomain of at most 63 characters in lower case, as
 * resource.k8s.io validates a driver's name (k8s.io/api resource/v1 types.go,
 * DriverNameMaxLength and DeviceRequestAllocationResult.Driver). When not, WHY says which.
 */
bool claims_drivers_ok(const char *list, char *why, size_t size);
