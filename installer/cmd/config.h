/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The installer's configuration: defaults, then environment (how DaemonSets
 * configure it), then the command line. Environment variables are read here
 * and nowhere else; docs/configuration.md lists them.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"
#include "util/log.h"

#define DEFAULT_INSTALL_DIR "/home/kubernetes/bin/nvidia"
#define DEFAULT_CONTAINER_DIR "/usr/local/nvidia"
#define DEFAULT_CACHE_DIR "/var/cache/nvidia-driver-installer"
#define DEFAULT_FETCH_TIMEOUT_S 600
#define DEFAULT_FETCH_RETRIES 5
/* --index-max-age unset: the repository's "max_age" decides (docs/repository-format.md). */
#define INDEX_MAX_AGE_REPO UINT_MAX
#define DEFAULT_SPEED_FLOOR_BYTES 1024 /* a transfer slower than this ... */
#define DEFAULT_SPEED_FLOOR_SECONDS 30 /* ... for this long is dead */
#define DEFAULT_CDI_DIR "/var/run/cdi"

/* A growable list of owned strings. */
struct strv {
	char **v;
	size_t n;
};

int strv_push(struct strv *s, const char *value);
/* Pushes each non-empty element of LIST, separated by commas or white space. */
int strv_push_split(struct strv *s, const char *list);
void strv_clear(struct strv *s);

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
	char *cdi_dir;
	char *cdi_kind;		 /* the CDI kind our spec declares */
	bool cdi_replace;	 /* set aside another producer's spec of that kind */
	char *metrics_file;	 /* host path of a Prometheus textfile, or NULL */
	struct strv host_mounts; /* more host paths to bind the install dir onto */
	bool skip_verify;
	struct strv env_used; /* the environment variables that were set and read */

	/* mirror */
	char *mirror_to;
	struct strv mirror_kernels;
	struct strv mirror_versions;

	/* install: run this after a successful install (argv after "--") */
	struct strv exec_argv;
	struct strv files; /* positional arguments (verify-module) */
	char *driver_version;
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
	bool allow_index_rollback; /* accept an index older than one accepted before */
	unsigned index_max_age_s;  /* reuse a cached index this young; INDEX_MAX_AGE_REPO */

	/* output */
	bool json;
};

/* "BYTES:SECONDS" into the speed floor. 0, or -1 (EXIT_USAGE). */
_must_check_ int config_set_speed_floor(struct config *c, const char *name, const char *value,
					struct err *e);

/* Fills defaults, then applies the environment. Returns 0, or -1 (EXIT_USAGE). */
_must_check_ int config_init(struct config *c, struct err *e);
void config_done(struct config *c);

/*
 * Lists the NVIDIA_* variables in the environment that the installer does not
 * know (a typo in a DaemonSet), leaving the container toolkit's own alone.
 * Returns 0 or -ENOMEM.
 */
int config_unknown_env(struct strv *ret);

/* Replaces a string setting. Returns 0, or -1 on ENOMEM. */
_must_check_ int config_set(char **field, const char *value, struct err *e);
/* Parses a decimal setting within [min, max]. Returns 0, or -1 (EXIT_USAGE). */
_must_check_ int config_set_uint(unsigned *field, const char *name, const char *value, unsigned min,
				 unsigned max, struct err *e);
_must_check_ int config_set_log_format(struct config *c, const char *value, struct err *e);
/* Checks what the options cannot check one by one. Returns 0, or -1 (EXIT_USAGE). */
_must_check_ int config_validate(const struct config *c, struct err *e);
