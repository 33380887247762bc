// SPDX-License-Identifier: Apache-2.0
/*
 * nvidia-driver-installer: command line parsing and dispatch, nothing else.
 *
 *   nvidia-driver-installer [global options] COMMAND [options]
 *   nvidia-driver-installer [global options] install [options] [-- CMD [ARGS]]
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "build_info.h" /* INSTALLER_VERSION, INSTALLER_COMMIT: the Makefile makes it */
#include "cmd/cmd.h"
#include "cmd/config.h"
#include "cmd/config_check.h"
#include "cmd/mirror.h"
#include "cmd/session.h"
#include "source/source.h"
#include "util/err.h"
#include "util/interrupt.h"
#include "util/log.h"
#include "util/out.h"

#define PROG "nvidia-driver-installer"

struct command {
	const char *name;
	unsigned bit;
	bool takes_files; /* positional FILE arguments */
	bool preflight;	  /* config: checks everything, and refuses every unknown variable */
	int (*run)(const struct config *c, struct err *e);
	const char *summary; /* one line, in the list of commands */
	/* Its --help: what it does, in a sentence or two, and its exit status where special. */
	const char *about;
	enum session_host host; /* how it uses --root (session_check_container) */
	bool hands_over;	/* install ... -- CMD [ARGS]: CMD runs after a success */
	/* SIGTERM and SIGINT stop it at its next safe point (util/interrupt.h), exit 128 + N. */
	bool stops_safely;
};

/*
 * A row: COMMAND("name", .bit = ..., .run = ..., ...), every field by its name as config.c's
 * OPTION rows are; a flag a command does not have is left out (false). Laid out by hand:
 * clang-format joins a row whose summary is longer than a line into one line, and then
 * indents the whole table by another level.
 */
// clang-format off
#define COMMAND(command_name, ...) {.name = (command_name), __VA_ARGS__}

static const struct command commands[] = {
	COMMAND("install", .bit = CFG_INSTALL, .run = install_run,
		.summary = "install the driver this host needs",
		.about = "Installs the driver this host needs from the signed repository: picks the version (--driver-version) for this OS, kernel and GPUs, verifies the package and its modules' signatures, loads the modules and publishes the driver to workloads (install dir, CDI spec, node labels, readiness). Run again with that version in place, it changes nothing. With -- CMD [ARGS], CMD then runs in the installer's place with the driver's bin/ and lib64/ first on PATH and LD_LIBRARY_PATH, and the exit status is CMD's (127 or 126 when it cannot be run).",
		.host = SESSION_HOST_WRITES, .hands_over = true, .stops_safely = true),
	COMMAND("list-versions", .bit = CFG_LIST, .run = list_versions_run,
		.summary = "show the versions this host could install",
		.about = "Lists the driver versions the repository offers for this host's OS and kernel, each with whether it can be installed here and, if not, why. Reads the repository and the host; changes nothing. Exit status 3 when none can be installed here.",
		.host = SESSION_HOST_READS),
	COMMAND("status", .bit = CFG_STATUS, .run = status_run,
		.summary = "show what is installed",
		.about = "Shows the installed driver: its version, whether its modules are loaded, what is published to workloads and whether the node is ready. Exit status 3 when nothing is installed, and 8 when a driver is installed but NVML does not answer where it must.",
		.host = SESSION_HOST_READS),
	COMMAND("uninstall", .bit = CFG_UNINSTALL, .run = uninstall_run,
		.summary = "remove the installed driver (cache kept)",
		.about = "Withdraws the node's readiness, labels and CDI spec, unloads the driver's modules (not with --skip-modules) and removes the installed driver; the package cache stays for a later install. Exit status 7, with nothing removed, when the driver is in use.",
		.host = SESSION_HOST_WRITES),
	COMMAND("doctor", .bit = CFG_DOCTOR, .run = doctor_run,
		.summary = "check this node and say how to fix what is wrong",
		.about = "Checks what an install needs and what it left (the OS, kernel, GPUs and module signing, the repository, the install and what it publishes), one line per check with a fix for each that fails. Changes nothing. Exit status 9 when a check fails.",
		.host = SESSION_HOST_READS),
	COMMAND("coverage", .bit = CFG_COVERAGE, .run = coverage_run,
		.summary = "show what the repository serves, or whether it serves one node image",
		.about = "Without --os and --kernel, lists every package of the repository's verified index by kernel, architecture, OS, OS build and driver version. With them, answers whether the repository serves that node image (--os, --os-build, --kernel, --arch, --gpu) by the selection install makes there: exit status 0 with the version and package install would pick, 3 with install's reason and what is closest. The host root is not read; run it anywhere before upgrading a node pool.",
		.host = SESSION_HOST_NONE),
	COMMAND("mirror", .bit = CFG_MIRROR, .run = mirror_run,
		.summary = "copy the signed index and the packages some kernels and versions need, for air gaps",
		.about = "Copies the repository's signed index and the packages that the kernels (--kernel) and drivers (--driver-version) asked for need into --to (a directory, an OCI image layout or a registry repository), verifying each against the index, for nodes that cannot reach the repository. The host root is not read.",
		.host = SESSION_HOST_NONE, .stops_safely = true),
	COMMAND("config", .bit = CFG_INSTALL, .preflight = true, .run = config_run,
		.summary = "print the configuration install would use, from flags and environment, and check it as install would before it starts",
		.about = "Prints, as JSON, the configuration install would use from the command line and the environment, and checks it as install would before it starts: paths, repository keys, module certificates, module arguments and unknown NVIDIA_* variables. It takes install's options (--dry-run and --json change nothing here). Exit status 2 when a problem is found; each is logged.",
		.host = SESSION_HOST_READS),
	COMMAND("verify-module", .bit = CFG_VERIFY, .takes_files = true, .run = verify_module_run,
		.summary = "check kernel modules' signatures and vermagic as the kernel would",
		.about = "Checks each kernel module FILE as the kernel would before loading it: its signature against the --module-cert certificates and its vermagic against the kernel release. Exit status 5 when a module fails; without --module-cert no signature can be checked, so a signed module fails as not verified.",
		.host = SESSION_HOST_NONE),
	COMMAND("agent", .bit = CFG_AGENT, .run = agent_run,
		.summary = "watch the node after the install and keep its readiness true (the pod's long-running container)",
		.about = "Looks at the node every --interval: the installed and loaded driver, NVML, the kernel log's Xids, and CUDA (a context on every GPU) while the node is not ready or every --cuda-interval. The readiness marker and the driver's node labels are withdrawn while a CUDA job could not run and restored when it could again; another producer's CDI spec of our kind gets the install's rule (--cdi-replace); /metrics, /healthz and /readyz are served over HTTP on --listen, and the metrics also written to --agent-metrics-file. Runs until SIGTERM or SIGINT, then exits 0.",
		.host = SESSION_HOST_WRITES, .stops_safely = true),
	COMMAND("pause", .bit = CFG_PAUSE, .run = pause_run,
		.summary = "wait for SIGTERM or SIGINT, then exit 0 (a pod's holding container)",
		.about = "Does nothing until SIGTERM or SIGINT, then exits 0: the process of the DaemonSets' driver-ready container, whose readiness probe reads the installer's marker. As its container's PID 1 it reaps the processes that end under it. Reads and changes nothing.",
		.host = SESSION_HOST_NONE, .stops_safely = true),
};
// clang-format on

/* "--repo URL", "-v, --verbose". */
static void option_left(const struct config_option *o, char *buf, size_t size)
{
	if (o->short_name)
		snprintf(buf, size, "-%c, --%s%s%s", o->short_name, o->name, o->arg ? " " : "",
			 o->arg ? o->arg : "");
	else
		snprintf(buf, size, "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
}

/*
 * O's help as command BIT words it, then "(VARIABLE, default X)" from the table;
 * backquotes dropped.
 */
static void option_right(const struct config_option *o, unsigned bit, char *buf, size_t size)
{
	char def[160], *w = buf, *end = buf + size - 1;
	const char *d = config_option_default(o, def, sizeof(def));
	bool show_def = *d && strcmp(d, "none") != 0 && strcmp(d, "off") != 0;
	char text[512];

	snprintf(text, sizeof(text), "%s%s%s%s%s%s%s%s", config_option_help(o, bit),
		 o->kind == CONFIG_LIST ? "; repeatable or comma-separated" : "",
		 o->env || show_def ? " (" : "", o->env ? o->env : "",
		 o->env && show_def ? ", " : "", show_def ? "default " : "", show_def ? d : "",
		 o->env || show_def ? ")" : "");
	for (const char *r = text; *r && w < end; r++) {
		if (*r != '`')
			*w++ = *r;
	}
	*w = '\0';
}

/* The rows command BIT takes (CFG_GLOBAL: the global options), with its wording. */
static void print_options(FILE *f, const char *heading, unsigned bit, bool global)
{
	fprintf(f, "\n%s:\n", heading);
	for (size_t i = 0; i < config_n_options; i++) {
		const struct config_option *o = &config_options[i];
		char left[64], right[640];

		if (!(o->cmds & bit) || !(o->cmds & CFG_GLOBAL) != !global)
			continue;
		option_left(o, left, sizeof(left));
		option_right(o, bit, right, sizeof(right));
		fprintf(f, "  %-26s %s\n", left, right);
	}
}

/* TEXT as lines of at most WIDTH columns, broken at spaces. */
static void print_wrapped(FILE *f, const char *text, size_t width)
{
	while (*text) {
		size_t n = strlen(text), cut = n;

		if (n > width) {
			cut = width;
			while (cut > 0 && text[cut] != ' ')
				cut--;
			if (cut == 0)
				cut = strcspn(text, " ");
		}
		fprintf(f, "%.*s\n", (int)cut, text);
		text += cut;
		text += strspn(text, " ");
	}
}

static void usage(FILE *f, const struct command *cmd)
{
	if (cmd) {
		fprintf(f, "Usage: %s [global options] %s [options]%s%s\n\n", PROG, cmd->name,
			cmd->takes_files ? " FILE..." : "",
			cmd->hands_over ? " [-- CMD [ARGS]]" : "");
		print_wrapped(f, cmd->about ? cmd->about : cmd->summary, 79);
		print_options(f, "Options", cmd->bit, false);
		print_options(f, "Global options (before or after the command)", cmd->bit, true);
	} else {
		fprintf(f,
			"Usage: %s [global options] COMMAND [options]\n"
			"       %s [global options] install [options] [-- CMD [ARGS]]\n\n",
			PROG, PROG);
		print_wrapped(
			f,
			"Installs precompiled NVIDIA drivers from a signed repository. With -- CMD [ARGS] after install's options, CMD runs once the install has succeeded, in the installer's place. 'COMMAND --help' says what a command does and what its options mean there.",
			79);
		fprintf(f, "\nCommands:\n");
		for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
			fprintf(f, "  %-15s %s\n", commands[i].name, commands[i].summary);
		print_options(f, "Global options", CFG_GLOBAL, true);
	}
	fprintf(f,
		"\nExit codes: 0 ok, 1 unexpected, 2 usage, 3 no match, 4 unreachable, 5 verification failed, 6 kernel refused the module, 7 driver in use, 8 driver check (NVML) failed, 9 doctor found problems, 10 a GPU reset is required (MIG) (" DOC_DIR
		"/exit-codes.md).\n"
		"Documentation: " DOC_DIR
		"/ (configuration.md, exit-codes.md, json.md, repository-format.md).\n");
}

/*
 * --help-options (not listed): the table as tab-separated lines, one an option, for
 * tests/tools/options-doc.py, which holds docs/configuration.md and docs/command-line.md to it:
 * name, argument, variable, default (as the docs write it), kind, commands, help, and what
 * an empty value of the variable does ("refused", "unset"; "" without a variable).
 */
static void help_options(void)
{
	static const char *const kinds[] = {
		[CONFIG_STRING] = "string",
		[CONFIG_LIST] = "list",
		[CONFIG_BOOL] = "bool",
		[CONFIG_UINT] = "uint",
		[CONFIG_MAX_AGE] = "uint",
		[CONFIG_LOG_FORMAT] = "log-format",
		[CONFIG_SPEED_FLOOR] = "speed-floor",
		[CONFIG_COUNT] = "count",
		[CONFIG_HELP] = "help",
		[CONFIG_VERSION] = "version",
	};

	for (size_t i = 0; i < config_n_options; i++) {
		const struct config_option *o = &config_options[i];
		char def[160], right[640];
		const char *sep = "";

		option_right(o, 0, right, sizeof(right));
		printf("%s\t%s\t%s\t%s\t%s\t", o->name, o->arg ? o->arg : "", o->env ? o->env : "",
		       config_option_default(o, def, sizeof(def)), kinds[o->kind]);
		if (o->cmds & CFG_GLOBAL) {
			printf("global");
			sep = ",";
		}
		for (size_t j = 0; j < ARRAY_SIZE(commands); j++) {
			if (o->cmds & commands[j].bit) {
				printf("%s%s", sep, commands[j].name);
				sep = ",";
			}
		}
		printf("\t%s\t%s\n", right,
		       !o->env			      ? ""
		       : (o->flags & CONFIG_NONEMPTY) ? "refused"
						      : "unset");
	}
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
	out_line(stderr, "%s: %s%s%s", PROG, cmd ? cmd->name : "", cmd ? ": " : "", msg);
	out_line(stderr, "T%s.", fix + 1);
	return EXIT_USAGE;
}

#define OPT_BASE 256 /* getopt's value of row i: OPT_BASE + i */

/*
 * Parses argv for CMD (NULL: the global options before the command), from the table.
 * A list option given on the command line replaces the environment's list (CLEARED, one
 * per row, across both slices). Returns -1 to go on, else an exit code.
 */
static int parse(int argc, char **argv, const struct command *cmd, struct config *c, bool *cleared)
{
	_cleanup_free_ struct option *table = calloc(config_n_options + 2, sizeof(*table));
	unsigned bit = cmd ? cmd->bit : CFG_GLOBAL;
	size_t n = 0;
	int id;

	if (!table)
		return usage_error(cmd, "out of memory");

	for (size_t i = 0; i < config_n_options; i++) {
		const struct config_option *o = &config_options[i];

		if (!(o->cmds & bit))
			continue;
		table[n++] =
			(struct option){o->name, o->arg ? required_argument : no_argument, NULL,
					o->short_name ? o->short_name : OPT_BASE + (int)i};
	}
	if (!cmd)
		table[n++] = (struct option){"help-options", no_argument, NULL, OPT_BASE - 1};
	opterr = 0;
	optind = 0; /* glibc: a full reset, as this runs once per argv slice */
	/* Commands with FILE arguments take options after them too (GNU permutation). */
	while ((id = getopt_long(argc, argv, cmd && cmd->takes_files ? "vh" : "+vh", table,
				 NULL)) != -1) {
		const struct config_option *o = NULL;
		struct err e;

		err_clear(&e);
		if (id == '?')
			return usage_error(cmd, "unrecognized or incomplete option '%s'",
					   argv[optind - 1]);
		if (id == OPT_BASE - 1) {
			help_options();
			return EXIT_OK;
		}
		for (size_t i = 0; i < config_n_options && !o; i++) {
			if ((config_options[i].cmds & bit) &&
			    (id == OPT_BASE + (int)i || id == config_options[i].short_name))
				o = &config_options[i];
		}
		if (o->kind == CONFIG_HELP) {
			usage(stdout, cmd);
			return EXIT_OK;
		}
		if (o->kind == CONFIG_VERSION) {
			printf("%s %s (%s)\n", PROG, INSTALLER_VERSION, INSTALLER_COMMIT);
			return EXIT_OK;
		}
		if (config_apply_arg(c, o, o->arg ? optarg : NULL, cleared, &e) < 0)
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
		out_line(stderr, "ERROR %s: %s%s%s (exit %d)", cmd->name, e->msg,
			 e->hint[0] ? "; fix: " : "", e->hint, e->code);
	}
	return e->code ? e->code : EXIT_UNEXPECTED;
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		if (strcmp(name, commands[i].name) == 0)
			return &commands[i];
	}
	return NULL;
}

/*
 * What follows CMD's options in argv (from optind): install's "-- CMD [ARGS]", a
 * command's FILEs, and nothing else. Returns -1 to go on, else an exit code.
 */
static int take_operands(const struct command *cmd, int argc, char **argv, struct config *c)
{
	/* install ... -- CMD [ARGS]: CMD runs after a successful install. */
	if (cmd->hands_over && optind < argc && optind > 1 && strcmp(argv[optind - 1], "--") == 0) {
		for (; optind < argc; optind++) {
			if (strv_push(&c->exec_argv, argv[optind]) < 0)
				return usage_error(cmd, "out of memory");
		}
	}
	for (; optind < argc && cmd->takes_files; optind++) {
		if (strv_push(&c->files, argv[optind]) < 0)
			return usage_error(cmd, "out of memory");
	}
	if (optind < argc)
		return usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	if (cmd->takes_files && c->files.n == 0)
		return usage_error(cmd, "missing FILE arguments");
	return -1;
}

/* Checks the configuration as CMD needs it, then runs CMD. Returns the exit code. */
static int run_command(const struct command *cmd, struct config *c)
{
	struct err e;
	int r;

	err_clear(&e);
	log_setup(c->log_format, c->log_level);
	/* config checks everything itself, naming each problem; install refuses near misses. */
	if (!cmd->preflight &&
	    (config_validate(c, &e) < 0 || config_check_env(c, cmd->run == install_run, &e) < 0))
		return usage_error(cmd, "%s", e.msg);
	if (session_check_container(c, cmd->name, cmd->host, &e) < 0)
		return report(cmd, &e);
	if (cmd->stops_safely && (r = interrupt_setup()) < 0) {
		err_errno(&e, EXIT_UNEXPECTED, -r, "signal handlers");
		return report(cmd, &e);
	}
	return cmd->run(c, &e) < 0 ? report(cmd, &e) : EXIT_OK;
}

int main(int argc, char **argv)
{
	const struct command *cmd;
	_cleanup_free_ bool *cleared = calloc(config_n_options, sizeof(bool));
	struct config cfg;
	struct err e;
	int r;

	err_clear(&e);
	if (!cleared)
		return EXIT_UNEXPECTED;
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
	r = parse(argc, argv, NULL, &cfg, cleared);
	if (r >= 0)
		goto out;
	if (optind >= argc) {
		r = usage_error(NULL, "missing COMMAND");
		goto out;
	}
	cmd = find_command(argv[optind]);
	if (!cmd) {
		r = usage_error(NULL, "unknown command '%s'", argv[optind]);
		goto out;
	}
	argc -= optind;
	argv += optind;
	r = parse(argc, argv, cmd, &cfg, cleared);
	if (r < 0)
		r = take_operands(cmd, argc, argv, &cfg);
	if (r < 0)
		r = run_command(cmd, &cfg);
out:
	config_done(&cfg);
	return r;
}
