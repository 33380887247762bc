// SPDX-License-Identifier: Apache-2.0
/*
 * nvidia-driver-installer: command line parsing and dispatch, nothing else.
 *
 *   nvidia-driver-installer [--root DIR] [--log-format text|json] [-v] COMMAND [options]
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/config.h"
#include "cmd/cmd.h"
#include "cmd/mirror.h"
#include "repo.h"
#include "util/err.h"
#include "util/log.h"

#ifndef INSTALLER_VERSION
#define INSTALLER_VERSION "dev"
#endif

#define PROG "nvidia-driver-installer"

enum cmd_bit {
	C_INSTALL = 1 << 0,
	C_LIST = 1 << 1,
	C_STATUS = 1 << 2,
	C_UNINSTALL = 1 << 3,
	C_VERIFY = 1 << 4,
	C_DOCTOR = 1 << 5,
	C_MIRROR = 1 << 6,
	C_GLOBAL = 1 << 7, /* accepted before the command too */
	C_ALL = C_INSTALL | C_LIST | C_STATUS | C_UNINSTALL | C_VERIFY | C_DOCTOR | C_MIRROR |
		C_GLOBAL,
};

enum opt_id {
	O_ROOT = 256,
	O_LOG_FORMAT,
	O_REPO,
	O_REPO_KEY,
	O_DRIVER_VERSION,
	O_INSTALL_DIR,
	O_CONTAINER_DIR,
	O_CACHE_DIR,
	O_KERNEL_RELEASE,
	O_SKIP_MODULES,
	O_DRY_RUN,
	O_FETCH_TIMEOUT,
	O_FETCH_RETRIES,
	O_SPEED_FLOOR,
	O_CA_FILE,
	O_ALLOW_ROLLBACK,
	O_INDEX_MAX_AGE,
	O_JSON,
	O_VERSION,
	O_MODULE_CERT,
	O_MODULES,
	O_MODULE_ARG,
	O_NO_UNLOAD_CONFLICTS,
	O_KEYRING_CERT,
	O_CDI_DIR,
	O_CDI_KIND,
	O_CDI_REPLACE,
	O_METRICS_FILE,
	O_HOST_MOUNT,
	O_SKIP_VERIFY,
	O_TO,
	O_KERNEL,
};

struct opt {
	struct option o;
	unsigned cmds;
	const char *arg;
	const char *help;
};

static const struct opt opts[] = {
	{{"root", required_argument, NULL, O_ROOT},
	 C_ALL,
	 "DIR",
	 "host root file system (ROOT_MOUNT_DIR, default /)"},
	{{"log-format", required_argument, NULL, O_LOG_FORMAT},
	 C_ALL,
	 "FMT",
	 "text or json (NVIDIA_INSTALLER_LOG_FORMAT)"},
	{{"verbose", no_argument, NULL, 'v'}, C_ALL, NULL, "more detail; twice for libcurl's"},
	{{"help", no_argument, NULL, 'h'}, C_ALL, NULL, "show this help"},
	{{"version", no_argument, NULL, O_VERSION}, C_GLOBAL, NULL, "print the version"},
	{{"repo", required_argument, NULL, O_REPO},
	 C_INSTALL | C_LIST | C_DOCTOR | C_MIRROR,
	 "URL",
	 "repository base URL, repeatable (NVIDIA_DRIVER_REPO, comma-separated)"},
	{{"repo-key", required_argument, NULL, O_REPO_KEY},
	 C_INSTALL | C_LIST | C_DOCTOR | C_MIRROR,
	 "FILE",
	 "trusted index signing key, repeatable (NVIDIA_DRIVER_REPO_KEY)"},
	{{"driver-version", required_argument, NULL, O_DRIVER_VERSION},
	 C_INSTALL | C_DOCTOR | C_MIRROR,
	 "V",
	 "default, latest, 550.90.07 or 550 (NVIDIA_DRIVER_VERSION)"},
	{{"install-dir", required_argument, NULL, O_INSTALL_DIR},
	 C_INSTALL | C_STATUS | C_UNINSTALL | C_DOCTOR,
	 "PATH",
	 "host install dir (NVIDIA_INSTALL_DIR_HOST)"},
	{{"container-dir", required_argument, NULL, O_CONTAINER_DIR},
	 C_INSTALL | C_STATUS | C_DOCTOR,
	 "PATH",
	 "where workloads see it (NVIDIA_INSTALL_DIR_CONTAINER)"},
	{{"cache-dir", required_argument, NULL, O_CACHE_DIR},
	 C_INSTALL | C_LIST | C_STATUS | C_DOCTOR,
	 "PATH",
	 "host package cache (NVIDIA_CACHE_DIR)"},
	{{"kernel-release", required_argument, NULL, O_KERNEL_RELEASE},
	 C_INSTALL | C_LIST | C_STATUS | C_VERIFY | C_UNINSTALL | C_DOCTOR,
	 "R",
	 "target kernel (NVIDIA_KERNEL_RELEASE; default uname -r)"},
	{{"module-cert", required_argument, NULL, O_MODULE_CERT},
	 C_INSTALL | C_VERIFY,
	 "FILE",
	 "certificate modules must be signed with, repeatable (NVIDIA_MODULE_CERT)"},
	{{"modules", required_argument, NULL, O_MODULES},
	 C_INSTALL,
	 "LIST",
	 "modules to load (NVIDIA_MODULES; default nvidia,nvidia-modeset,nvidia-drm,nvidia-uvm)"},
	{{"module-arg", required_argument, NULL, O_MODULE_ARG},
	 C_INSTALL,
	 "M.K=V",
	 "module parameter, repeatable (NVIDIA_MODULE_ARGS)"},
	{{"no-unload-conflicts", no_argument, NULL, O_NO_UNLOAD_CONFLICTS},
	 C_INSTALL,
	 NULL,
	 "refuse instead of unloading nouveau (NVIDIA_NO_UNLOAD_CONFLICTS=1)"},
	{{"cdi-dir", required_argument, NULL, O_CDI_DIR},
	 C_INSTALL | C_STATUS | C_UNINSTALL | C_DOCTOR,
	 "PATH",
	 "host dir of the CDI spec (NVIDIA_CDI_DIR, default /var/run/cdi)"},
	{{"cdi-kind", required_argument, NULL, O_CDI_KIND},
	 C_INSTALL | C_STATUS | C_DOCTOR,
	 "KIND",
	 "the spec's CDI kind (NVIDIA_CDI_KIND, default nvidia.com/gpu)"},
	{{"cdi-replace", no_argument, NULL, O_CDI_REPLACE},
	 C_INSTALL,
	 NULL,
	 "set aside another producer's spec of that kind (NVIDIA_CDI_REPLACE=1)"},
	{{"host-mount", required_argument, NULL, O_HOST_MOUNT},
	 C_INSTALL,
	 "PATH",
	 "also bind the install dir here, repeatable (NVIDIA_HOST_MOUNT)"},
	{{"metrics-file", required_argument, NULL, O_METRICS_FILE},
	 C_INSTALL,
	 "PATH",
	 "write a Prometheus textfile (NVIDIA_METRICS_FILE)"},
	{{"skip-verify", no_argument, NULL, O_SKIP_VERIFY},
	 C_INSTALL,
	 NULL,
	 "no NVML check: hosts without a GPU only (NVIDIA_SKIP_VERIFY=1)"},
	{{"kernel-keyring-cert", required_argument, NULL, O_KEYRING_CERT},
	 C_INSTALL,
	 "FILE",
	 "add to .secondary_trusted_keys first (NVIDIA_KERNEL_KEYRING_CERT)"},
	{{"skip-modules", no_argument, NULL, O_SKIP_MODULES},
	 C_INSTALL | C_UNINSTALL,
	 NULL,
	 "install user space only; the kernel is not touched (NVIDIA_SKIP_MODULES=1)"},
	{{"dry-run", no_argument, NULL, O_DRY_RUN},
	 C_INSTALL,
	 NULL,
	 "resolve and print the plan; change nothing"},
	{{"fetch-timeout", required_argument, NULL, O_FETCH_TIMEOUT},
	 C_INSTALL | C_LIST | C_DOCTOR | C_MIRROR,
	 "SEC",
	 "time budget for all downloads (NVIDIA_FETCH_TIMEOUT, default 600)"},
	{{"fetch-retries", required_argument, NULL, O_FETCH_RETRIES},
	 C_INSTALL | C_LIST | C_DOCTOR | C_MIRROR,
	 "N",
	 "retry rounds over the mirrors (NVIDIA_FETCH_RETRIES, default 5)"},
	{{"fetch-speed-floor", required_argument, NULL, O_SPEED_FLOOR},
	 C_INSTALL | C_LIST | C_DOCTOR | C_MIRROR,
	 "B:S",
	 "a transfer under B bytes/s for S s is retried (NVIDIA_FETCH_SPEED_FLOOR, 1024:30)"},
	{{"ca-file", required_argument, NULL, O_CA_FILE},
	 C_INSTALL | C_LIST | C_DOCTOR | C_MIRROR,
	 "FILE",
	 "also trust these CA certificates for https:// (NVIDIA_CA_FILE)"},
	{{"index-max-age", required_argument, NULL, O_INDEX_MAX_AGE},
	 C_INSTALL,
	 "SEC",
	 "reuse a cached index fetched less than SEC ago; 0: always ask (NVIDIA_INDEX_MAX_AGE, default: the repository's max_age)"},
	{{"allow-index-rollback", no_argument, NULL, O_ALLOW_ROLLBACK},
	 C_INSTALL | C_LIST | C_DOCTOR | C_MIRROR,
	 NULL,
	 "accept an index older than one accepted before (NVIDIA_ALLOW_INDEX_ROLLBACK=1)"},
	{{"to", required_argument, NULL, O_TO}, C_MIRROR, "DIR", "the mirror's directory"},
	{{"kernel", required_argument, NULL, O_KERNEL},
	 C_MIRROR,
	 "R",
	 "only packages for this kernel, repeatable (default: all)"},
	{{"json", no_argument, NULL, O_JSON},
	 C_INSTALL | C_LIST | C_STATUS | C_VERIFY | C_DOCTOR | C_MIRROR,
	 NULL,
	 "machine-readable output on stdout (docs/json.md); install: with --dry-run"},
};

struct command {
	const char *name;
	unsigned bit;
	bool takes_files; /* positional FILE arguments */
	int (*run)(const struct config *c, struct err *e);
	const char *summary;
};

static const struct command commands[] = {
	{"install", C_INSTALL, false, install_run, "install the driver this host needs"},
	{"list-versions", C_LIST, false, list_versions_run,
	 "show the versions this host could install"},
	{"status", C_STATUS, false, status_run, "show what is installed"},
	{"uninstall", C_UNINSTALL, false, uninstall_run,
	 "remove the installed driver (cache kept)"},
	{"doctor", C_DOCTOR, false, doctor_run, "check this node and say how to fix what is wrong"},
	{"mirror", C_MIRROR, false, mirror_run,
	 "copy the signed index and the packages some kernels and versions need, for air gaps"},
	{"config", C_INSTALL, false, config_run,
	 "print the configuration install would use, from flags and environment, and check it"},
	{"verify-module", C_VERIFY, true, verify_module_run,
	 "check kernel modules' signatures and vermagic as the kernel would"},
};

static void usage(FILE *f, const struct command *cmd)
{
	unsigned bit = cmd ? cmd->bit : C_GLOBAL;

	if (cmd) {
		fprintf(f, "Usage: %s [global options] %s [options]%s\n\n%s.\n\nOptions:\n", PROG,
			cmd->name, cmd->takes_files ? " FILE..." : "", cmd->summary);
	} else {
		fprintf(f,
			"Usage: %s [--root DIR] [--log-format text|json] [-v] COMMAND [options]\n\n"
			"Installs precompiled NVIDIA drivers from a signed repository.\n\n"
			"Commands:\n",
			PROG);
		for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
			fprintf(f, "  %-15s %s\n", commands[i].name, commands[i].summary);
		fprintf(f, "\nGlobal options:\n");
	}
	for (size_t i = 0; i < ARRAY_SIZE(opts); i++) {
		char left[64];

		if (!(opts[i].cmds & bit))
			continue;
		snprintf(left, sizeof(left), "%s--%s%s%s", opts[i].o.val == 'v' ? "-v, " : "",
			 opts[i].o.name, opts[i].arg ? " " : "", opts[i].arg ? opts[i].arg : "");
		fprintf(f, "  %-26s %s\n", left, opts[i].help);
	}
	fprintf(f,
		"\nExit codes: 0 ok, 1 unexpected, 2 usage, 3 no match, 4 unreachable, 5 verification failed, 6 kernel refused the module, 7 driver in use, 8 driver check (NVML) failed, 9 doctor found problems (docs/exit-codes.md).\n");
}

/*
 * Usage errors are reported in the log format asked for: the environment's (config_init),
 * then the last --log-format on the command line, wherever it stands, so that an error met
 * before getopt reaches it is JSON too. An invalid value leaves the format as it was.
 */
static enum log_format error_format = LOG_FORMAT_TEXT;

static void find_log_format(int argc, char **argv, enum log_format env_format)
{
	error_format = env_format;
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		const char *v = NULL;

		if (strcmp(argv[i], "--log-format") == 0 && i + 1 < argc)
			v = argv[++i];
		else if (strncmp(argv[i], "--log-format=", 13) == 0)
			v = argv[i] + 13;
		if (v && strcmp(v, "json") == 0)
			error_format = LOG_FORMAT_JSON;
		else if (v && strcmp(v, "text") == 0)
			error_format = LOG_FORMAT_TEXT;
	}
}

static int usage_error(const struct command *cmd, const char *fmt, ...) _printf_(2, 3);
static int usage_error(const struct command *cmd, const char *fmt, ...)
{
	char msg[ERR_MSG_MAX], fix[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(fix, sizeof(fix), "try '%s%s%s --help'", PROG, cmd ? " " : "",
		 cmd ? cmd->name : "");
	if (error_format == LOG_FORMAT_JSON) {
		log_setup(LOG_FORMAT_JSON, LOG_ERROR);
		log_kv(LOG_ERROR, cmd ? cmd->name : "usage", msg, "fix", fix,
		       U64("exit_code", EXIT_USAGE), LOG_END);
		return EXIT_USAGE;
	}
	fprintf(stderr, "%s: %s%s%s\nT%s.\n", PROG, cmd ? cmd->name : "", cmd ? ": " : "", msg,
		fix + 1);
	return EXIT_USAGE;
}

static int apply(struct config *c, int id, const char *arg, struct err *e)
{
	switch (id) {
	case O_ROOT:
		return config_set(&c->root, arg, e);
	case O_LOG_FORMAT:
		return config_set_log_format(c, arg, e);
	case 'v':
		c->log_level = c->log_level < LOG_DEBUG ? c->log_level + 1 : LOG_DEBUG;
		return 0;
	case O_REPO:
		return strv_push(&c->repos, arg) < 0 ? err_set(e, EXIT_UNEXPECTED, "out of memory")
						     : 0;
	case O_REPO_KEY:
		return strv_push(&c->repo_keys, arg) < 0
			       ? err_set(e, EXIT_UNEXPECTED, "out of memory")
			       : 0;
	case O_MODULE_CERT:
		return strv_push(&c->module_certs, arg) < 0
			       ? err_set(e, EXIT_UNEXPECTED, "out of memory")
			       : 0;
	case O_MODULES:
		strv_clear(&c->modules);
		return strv_push_split(&c->modules, arg) < 0
			       ? err_set(e, EXIT_UNEXPECTED, "out of memory")
			       : 0;
	case O_MODULE_ARG:
		return strv_push(&c->module_args, arg) < 0
			       ? err_set(e, EXIT_UNEXPECTED, "out of memory")
			       : 0;
	case O_NO_UNLOAD_CONFLICTS:
		c->no_unload_conflicts = true;
		return 0;
	case O_KEYRING_CERT:
		return config_set(&c->kernel_keyring_cert, arg, e);
	case O_CDI_DIR:
		return config_set(&c->cdi_dir, arg, e);
	case O_CDI_KIND:
		return config_set(&c->cdi_kind, arg, e);
	case O_CDI_REPLACE:
		c->cdi_replace = true;
		return 0;
	case O_METRICS_FILE:
		return config_set(&c->metrics_file, arg, e);
	case O_HOST_MOUNT:
		return strv_push(&c->host_mounts, arg) < 0
			       ? err_set(e, EXIT_UNEXPECTED, "out of memory")
			       : 0;
	case O_SKIP_VERIFY:
		c->skip_verify = true;
		return 0;
	case O_DRIVER_VERSION:
		/* mirror takes several; install the last one. */
		if (strv_push(&c->mirror_versions, arg) < 0)
			return err_set(e, EXIT_UNEXPECTED, "out of memory");
		return config_set(&c->driver_version, arg, e);
	case O_TO:
		return config_set(&c->mirror_to, arg, e);
	case O_KERNEL:
		return strv_push(&c->mirror_kernels, arg) < 0
			       ? err_set(e, EXIT_UNEXPECTED, "out of memory")
			       : 0;
	case O_INSTALL_DIR:
		return config_set(&c->install_dir, arg, e);
	case O_CONTAINER_DIR:
		return config_set(&c->container_dir, arg, e);
	case O_CACHE_DIR:
		return config_set(&c->cache_dir, arg, e);
	case O_KERNEL_RELEASE:
		return config_set(&c->kernel_release, arg, e);
	case O_SKIP_MODULES:
		c->skip_modules = true;
		return 0;
	case O_DRY_RUN:
		c->dry_run = true;
		return 0;
	case O_FETCH_TIMEOUT:
		return config_set_uint(&c->fetch_timeout_s, "--fetch-timeout", arg, 1, 86400, e);
	case O_FETCH_RETRIES:
		return config_set_uint(&c->fetch_retries, "--fetch-retries", arg, 0, 100, e);
	case O_SPEED_FLOOR:
		return config_set_speed_floor(c, "--fetch-speed-floor", arg, e);
	case O_CA_FILE:
		return config_set(&c->ca_file, arg, e);
	case O_ALLOW_ROLLBACK:
		c->allow_index_rollback = true;
		return 0;
	case O_INDEX_MAX_AGE:
		return config_set_uint(&c->index_max_age_s, "--index-max-age", arg, 0,
				       REPO_MAX_AGE_LIMIT, e);
	case O_JSON:
		c->json = true;
		return 0;
	default:
		return err_set(e, EXIT_UNEXPECTED, "option %d not handled", id);
	}
}

/*
 * Parses argv for CMD (NULL: the global options before the command).
 * Repeatable list options given on the command line replace the environment's.
 * Returns -1 to go on, else an exit code.
 */
static int parse(int argc, char **argv, const struct command *cmd, struct config *c)
{
	struct option table[ARRAY_SIZE(opts) + 1];
	unsigned bit = cmd ? cmd->bit : C_GLOBAL;
	bool repos_cleared = false, keys_cleared = false, certs_cleared = false,
	     args_cleared = false;
	size_t n = 0;
	int id;

	for (size_t i = 0; i < ARRAY_SIZE(opts); i++) {
		if (opts[i].cmds & bit)
			table[n++] = opts[i].o;
	}
	memset(&table[n], 0, sizeof(table[n]));
	opterr = 0;
	optind = 0; /* glibc: a full reset, as this runs once per argv slice */
	/* Commands with FILE arguments take options after them too (GNU permutation). */
	while ((id = getopt_long(argc, argv, cmd && cmd->takes_files ? "vh" : "+vh", table,
				 NULL)) != -1) {
		struct err e;

		err_clear(&e);
		if (id == 'h') {
			usage(stdout, cmd);
			return EXIT_OK;
		}
		if (id == O_VERSION) {
			printf("%s %s\n", PROG, INSTALLER_VERSION);
			return EXIT_OK;
		}
		if (id == '?')
			return usage_error(cmd, "unrecognized or incomplete option '%s'",
					   argv[optind - 1]);
		if (id == O_REPO && !repos_cleared) {
			strv_clear(&c->repos);
			repos_cleared = true;
		}
		if (id == O_REPO_KEY && !keys_cleared) {
			strv_clear(&c->repo_keys);
			keys_cleared = true;
		}
		if (id == O_MODULE_CERT && !certs_cleared) {
			strv_clear(&c->module_certs);
			certs_cleared = true;
		}
		if (id == O_MODULE_ARG && !args_cleared) {
			strv_clear(&c->module_args);
			args_cleared = true;
		}
		if (apply(c, id, optarg, &e) < 0)
			return usage_error(cmd, "%s", e.msg);
	}
	return -1;
}

static int report(const struct command *cmd, const struct err *e)
{
	if (log_get_format() == LOG_FORMAT_JSON) {
		log_kv(LOG_ERROR, cmd->name, e->msg, "fix", e->hint, U64("exit_code", e->code),
		       LOG_END);
	} else {
		fprintf(stderr, "ERROR %s: %s", cmd->name, e->msg);
		if (e->hint[0])
			fprintf(stderr, "; fix: %s", e->hint);
		fprintf(stderr, " (exit %d)\n", e->code);
	}
	return e->code ? e->code : EXIT_UNEXPECTED;
}

int main(int argc, char **argv)
{
	const struct command *cmd = NULL;
	struct config cfg;
	struct err e;
	int r;

	err_clear(&e);
	/*
	 * What is published is read by workloads of any uid: directories 0755, files the
	 * package's normalised modes, whatever umask the caller runs us with (077 would
	 * publish 0700 directories, and non-root workloads could not load libcuda).
	 */
	umask(022);
	if (config_init(&cfg, &e) < 0) {
		find_log_format(argc, argv, cfg.log_format);
		r = usage_error(NULL, "%s", e.msg);
		config_done(&cfg);
		return r;
	}
	find_log_format(argc, argv, cfg.log_format);
	r = parse(argc, argv, NULL, &cfg);
	if (r >= 0)
		goto out;
	if (optind >= argc) {
		r = usage_error(NULL, "missing COMMAND");
		goto out;
	}
	for (size_t i = 0; i < ARRAY_SIZE(commands) && !cmd; i++) {
		if (strcmp(argv[optind], commands[i].name) == 0)
			cmd = &commands[i];
	}
	if (!cmd) {
		r = usage_error(NULL, "unknown command '%s'", argv[optind]);
		goto out;
	}
	argc -= optind;
	argv += optind;
	r = parse(argc, argv, cmd, &cfg);
	if (r >= 0)
		goto out;
	/* install ... -- CMD [ARGS]: CMD runs after a successful install. */
	if (cmd->bit == C_INSTALL && optind < argc && optind > 1 &&
	    strcmp(argv[optind - 1], "--") == 0) {
		for (; optind < argc; optind++) {
			if (strv_push(&cfg.exec_argv, argv[optind]) < 0) {
				r = usage_error(cmd, "out of memory");
				goto out;
			}
		}
	}
	for (; optind < argc && cmd->takes_files; optind++) {
		if (strv_push(&cfg.files, argv[optind]) < 0) {
			r = usage_error(cmd, "out of memory");
			goto out;
		}
	}
	if (optind < argc) {
		r = usage_error(cmd, "unexpected argument '%s'", argv[optind]);
		goto out;
	}
	if (cmd->takes_files && cfg.files.n == 0) {
		r = usage_error(cmd, "missing FILE arguments");
		goto out;
	}
	log_setup(cfg.log_format, cfg.log_level);
	if (config_validate(&cfg, &e) < 0) {
		r = usage_error(cmd, "%s", e.msg);
		goto out;
	}
	r = cmd->run(&cfg, &e) < 0 ? report(cmd, &e) : EXIT_OK;
out:
	config_done(&cfg);
	return r;
}
