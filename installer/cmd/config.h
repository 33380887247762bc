/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The installer's configuration: defaults, then environment (how DaemonSets
 * configure it), then the command line. One table, config_options[], describes
 * every option: its long name, its environment variable, its kind and limits,
 * its field, the commands that take it, its help and its default. The command
 * line parser (main.c), the environment reader, `config --json`, config_done(),
 * `--help` and `--help-options` (which tests/tools/options-doc.py holds the docs
 * against) all read it. Environment variables are read here and nowhere else;
 * docs/configuration.md lists them.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"
#include "util/log.h"
#include "util/str.h"

/* Defaults: config_options[] applies them and documents them (--help, the docs). */
#define DEFAULT_INSTALL_DIR "/home/kubernetes/bin/nvidia"
#define DEFAULT_CONTAINER_DIR "/usr/local/nvidia"
#define DEFAULT_CACHE_DIR "/var/cache/nvidia-driver-installer"
#define DEFAULT_CDI_DIR "/var/run/cdi"
/* --index-max-age unset: the repository's "max_age" decides (docs/repository-format.md). */
#define INDEX_MAX_AGE_REPO UINT_MAX

struct config {
	/* global */
	char *root;
	enum log_format log_format;
	enum log_level log_level;

	/* install and the commands that read a repository */
	struct strv repos;
	struct strv repo_keys;
	struct strv module_certs; /* certificates kernel modules must be signed with */
	struct strv modules;	  /* the set to load; empty: the default set */
	struct strv module_args;  /* MODULE.KEY=VALUE */
	char *kernel_keyring_cert;
	bool no_unload_conflicts;
	bool imex_channel0; /* make /dev/nvidia-caps-imex-channels/channel0 after the load */
	char *rdma;	    /* --rdma: off, auto, peermem, dmabuf */
	char *when_busy;    /* defer or fail: a new driver while the loaded one is busy */
	/* install: wait for a package of this node's kernel (cmd/install_wait.c) */
	bool wait_for_package;
	unsigned wait_max_s;	  /* give up after this long (exit 3); 0: never */
	unsigned wait_interval_s; /* the backoff's cap between two checks */
	char *cdi_dir;
	char *cdi_kind;		   /* the CDI kind our spec declares */
	char *mig_layout;	   /* --mig-layout: "gke", "none", "all-1g.10gb", ... */
	bool cdi_replace;	   /* set aside another producer's spec of that kind */
	char *metrics_file;	   /* host path of a Prometheus textfile, or NULL */
	char *agent_listen;	   /* agent: HOST:PORT of its HTTP endpoint, or NULL */
	char *agent_metrics_file;  /* agent: host path of its Prometheus textfile, or NULL */
	unsigned agent_interval_s; /* agent: seconds between two looks at the node */
	unsigned cuda_interval_s;  /* agent: seconds between two CUDA checks while ready */
	/* agent: its word on the Node (agent/nodecond.c) */
	unsigned condition_heartbeat_s; /* the condition written at least this often */
	char *startup_taint;		/* a taint key to take off once ready, or "none" */
	char *health_taint; /* KEY:EFFECT while a fatal Xid or fabric holds, or "none" */
	/* agent: driver upgrades it carries out (agent/upgrade.h, agent/upgrader.c) */
	char *upgrades;		     /* auto (in a cluster, with a node name) or off */
	char *node_name;	     /* this node's name (the downward API's spec.nodeName) */
	bool node_condition;	     /* write the Node's condition (kube/node.c) */
	char *kube_sa_dir;	     /* the pod's service account: token, ca.crt, namespace */
	char *upgrade_limit;	     /* N or P% of the DaemonSet's nodes upgrading at once */
	char *upgrade_daemonset;     /* the DaemonSet P% counts the nodes of */
	char *upgrade_cordon;	     /* yes or no */
	unsigned upgrade_deadline_s; /* how long GPU pods may run on before on_deadline */
	char *upgrade_on_deadline;   /* wait or evict */
	unsigned upgrade_validate_s; /* how long the new version may take to be ready */
	struct strv host_mounts;     /* more host paths to bind the install dir onto */

	/* agent: the upgrade controls NVIDIA's upgrade policy has (k8s-operator-libs) */
	char *upgrade_wait_for;		  /* a label selector of pods waited for first, or NULL */
	unsigned upgrade_wait_timeout_s;  /* how long they are waited for; 0: no end */
	char *upgrade_evict_force;	  /* yes or no: a GPU pod with no controller */
	char *upgrade_evict_emptydir;	  /* yes or no: a GPU pod with an emptyDir volume */
	char *upgrade_drain;		  /* yes or no: the node's other pods evicted */
	char *upgrade_drain_selector;	  /* which of them, or NULL: all */
	char *upgrade_drain_force;	  /* yes or no */
	char *upgrade_drain_emptydir;	  /* yes or no */
	unsigned upgrade_drain_timeout_s; /* past it with pods left, failed; 0: no end */
	char *upgrade_max_unavailable;	  /* N or P% of the DaemonSet's nodes, or "none" */
	char *upgrade_dra_drivers;	  /* DRA drivers whose claims hold GPUs, or "none" */

	/* agent: NVIDIA's DRA kubelet plugin restarted after a switch (agent/draplugin.c) */
	char *dra_plugin_selector; /* a label selector of its pods; "" or "none": off */

	bool skip_verify;
	struct strv env_used;	 /* the environment variables that were set and read */
	struct strv env_unknown; /* NVIDIA_* variables set that the installer does not know */
	/* Inherited, not options: what the hand-over (install -- CMD) prepends to. */
	char *inherited_path;
	char *inherited_ld_library_path;
	/* Not options either: the variables among a container's signals (host/runenv.c). */
	char *env_container;
	char *env_k8s_service_host;
	bool root_given; /* --root or ROOT_MOUNT_DIR was given, even as "/" */

	/* mirror */
	char *mirror_to;
	struct strv mirror_kernels;
	struct strv mirror_versions;

	/* coverage: the node image asked about (--os, --os-build, --kernel, --arch, --gpu) */
	char *image_os;
	char *image_os_build;
	char *image_kernel;
	char *image_arch;
	struct strv image_gpus;
	char *image_fleet; /* coverage --fleet FILE */

	/* install: run this after a successful install (argv after "--") */
	struct strv exec_argv;
	struct strv files; /* positional arguments (verify-module) */
	char *driver_version;
	char *kernel_module_type;  /* auto, open or proprietary (repo_kmt_policy_parse) */
	char *driver_capabilities; /* compute,utility,video,graphics or all (repo_caps_parse) */
	char *install_dir;
	char *container_dir;
	char *cache_dir;
	char *kernel_release; /* NULL: the running kernel */
	bool skip_modules;
	bool dry_run;
	unsigned fetch_timeout_s;
	unsigned fetch_retries;
	unsigned speed_floor_bytes, speed_floor_s;
	char *ca_file;		   /* more CAs to trust for https:// */
	struct strv registry_auth; /* Docker config.json files for oci:// (none: the default) */
	char *registry_hosts;	   /* containerd's hosts.toml directory, or NULL */
	char *registry_gce;	   /* "auto", "yes" or "no" */
	bool allow_index_rollback; /* accept an index older than one accepted before */
	unsigned index_max_age_s;  /* reuse a cached index this young; INDEX_MAX_AGE_REPO */

	/* output */
	bool json;
};

/* The commands an option applies to (struct config_option.cmds). */
enum config_cmd {
	CFG_INSTALL = 1 << 0, /* install, and config (which checks install's configuration) */
	CFG_LIST = 1 << 1,
	CFG_STATUS = 1 << 2,
	CFG_UNINSTALL = 1 << 3,
	CFG_VERIFY = 1 << 4,
	CFG_DOCTOR = 1 << 5,
	CFG_MIRROR = 1 << 6,
	CFG_GLOBAL = 1 << 7, /* accepted before the command too */
	CFG_COVERAGE = 1 << 8,
	CFG_PAUSE = 1 << 9,
	CFG_AGENT = 1 << 10,
	CFG_ALL = CFG_INSTALL | CFG_LIST | CFG_STATUS | CFG_UNINSTALL | CFG_VERIFY | CFG_DOCTOR |
		  CFG_MIRROR | CFG_GLOBAL | CFG_COVERAGE | CFG_PAUSE | CFG_AGENT,
};

enum config_kind {
	CONFIG_STRING,	    /* char *; an empty variable is unset unless CONFIG_NONEMPTY */
	CONFIG_LIST,	    /* struct strv; comma or white-space separated, here and on the line */
	CONFIG_BOOL,	    /* bool; a flag, or a variable spelt 1/0, true/false, yes/no */
	CONFIG_UINT,	    /* unsigned within [min, max] */
	CONFIG_MAX_AGE,	    /* CONFIG_UINT, INDEX_MAX_AGE_REPO when unset */
	CONFIG_LOG_FORMAT,  /* enum log_format */
	CONFIG_SPEED_FLOOR, /* "BYTES:SECONDS": speed_floor_bytes and speed_floor_s */
	CONFIG_COUNT,	    /* -v: enum log_level, one step per use */
	CONFIG_HELP,	    /* -h: handled by the parser */
	CONFIG_VERSION,	    /* --version: handled by the parser */
};

/* Per-command wordings a row may carry (struct config_option.help_for). */
#define CONFIG_HELP_FOR_MAX 7

/*
 * An empty value of the variable is refused; without the flag it is as if unset
 * (env_apply, the one place the rule is applied). Set where the value names a place the
 * installer writes on the host, or the CDI kind it publishes under: a default standing in
 * for a value emptied by mistake would put the driver somewhere the operator did not choose.
 */
#define CONFIG_NONEMPTY (1u << 0)

struct config_option {
	const char *name; /* long option, without "--" */
	int short_name;	  /* 'v', 'h', or 0 */
	const char *env;  /* its environment variable, or NULL */
	enum config_kind kind;
	size_t offset; /* of its field in struct config */
	unsigned min, max;
	unsigned cmds; /* enum config_cmd */
	unsigned flags;
	const char *arg;   /* the argument's name in --help, or NULL for a flag */
	const char *value; /* the default config_init applies, as a command line value, or NULL */
	const char *def;   /* the default in words (markdown) where it is not `value`, or NULL */
	const char *json;  /* its key in `config --json`, or NULL */
	const char *help;
	/*
	 * Where the option means something else to a command: that command's --help shows
	 * the first entry whose cmds include the command's (config_option_help).
	 */
	struct {
		unsigned cmds;
		const char *help;
	} help_for[CONFIG_HELP_FOR_MAX];
};

extern const struct config_option config_options[];
extern const size_t config_n_options;

/* O's help as COMMAND's --help words it (enum config_cmd: one bit); never NULL. */
const char *config_option_help(const struct config_option *o, unsigned cmd);

/* The row of --NAME that COMMAND (enum config_cmd) takes, or NULL. */
const struct config_option *config_option_find(const char *name, unsigned cmd);

/*
 * Applies an option's value as given on the command line (VALUE NULL for a flag).
 * A list option's first use on the command line replaces the environment's list;
 * CLEARED (one bool per row of config_options) remembers which were replaced.
 * Returns 0, or -1 (EXIT_USAGE naming the option).
 */
int config_apply_arg(struct config *c, const struct config_option *o, const char *value,
		     bool *cleared, struct err *e);

/* "BYTES:SECONDS" into the speed floor. 0, or -1 (EXIT_USAGE). */
_must_check_ int config_set_speed_floor(struct config *c, const char *name, const char *value,
					struct err *e);

/*
 * Fills defaults, then applies the environment, and records the variables read
 * (env_used) and the NVIDIA_* variables not known (env_unknown; the container
 * toolkit's own are left alone). Returns 0, or -1 (EXIT_USAGE naming the variable).
 */
_must_check_ int config_init(struct config *c, struct err *e);
void config_done(struct config *c);

/*
 * Whether NAME, an NVIDIA_* variable not known, is a near miss of one that is
 * (at most two edits or transpositions away). Returns the known name, or NULL.
 */
const char *config_near_miss(const char *name);

/* Replaces a string setting. Returns 0, or -1 on ENOMEM. */
_must_check_ int config_set(char **field, const char *value, struct err *e);
/* Parses a decimal setting within [min, max]. Returns 0, or -1 (EXIT_USAGE). */
_must_check_ int config_set_uint(unsigned *field, const char *name, const char *value, unsigned min,
				 unsigned max, struct err *e);
_must_check_ int config_set_log_format(struct config *c, const char *value, struct err *e);
/* Parses a boolean variable: 1/0, true/false, yes/no (any case). Returns 0, or -1 (EXIT_USAGE). */
_must_check_ int config_set_bool(bool *field, const char *name, const char *value, struct err *e);

/* The default as the docs write it: def, else `value`, else "off" (a flag) or "none". */
const char *config_option_default(const struct config_option *o, char *buf, size_t size);

/*
 * Logs (WARN) each unknown NVIDIA_* variable; with REFUSE_NEAR_MISS, a near miss of a
 * known one is refused instead. Returns 0, or -1 (EXIT_USAGE naming the variable).
 */
_must_check_ int config_check_env(const struct config *c, bool refuse_near_miss, struct err *e);
