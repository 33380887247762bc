// SPDX-License-Identifier: Apache-2.0
/*
 * nvidia-cdi-hook: the createContainer hook of our CDI spec, and a drop-in for NVIDIA's
 * (nvidia-cdi-hook, or `nvidia-ctk hook`) in the specs NVIDIA's tools generate: the device
 * plugin, the DRA driver and `nvidia-ctk cdi generate` write hooks with the path their
 * NVIDIA_CDI_HOOK_PATH names, so a node without the toolkit points them here. The runtime
 * runs it on the host, with the container's state (OCI runtime spec, "State") on stdin,
 * after the container's mounts are made and before it pivots into its root.
 *
 *   nvidia-cdi-hook [hook] NAME [FLAG VALUE | FLAG=VALUE]...
 *
 * "hook" first is nvidia-ctk's form (args "nvidia-ctk hook NAME"); --debug, -d and --quiet
 * before NAME are accepted and change nothing. The hooks, each as NVIDIA's contract has it
 * (NVIDIA/nvidia-container-toolkit, cmd/nvidia-cdi-hook/, at v1.20.0; docs/design.md,
 * "Hooks: NVIDIA's contract, our containment" cites each):
 *
 *   update-ldcache --folder DIR...      the folders (repeatable, or comma-separated) into
 *                  [--ldconfig-path P]  the container's ld cache; P (the host's ldconfig for
 *                  [--timeout S]        NVIDIA's hook) is accepted and not used: ours runs
 *                                       the static ldconfig shipped beside it; the soname
 *                                       links of their libraries made in them, as NVIDIA's
 *                                       ldconfig makes them (specs before 1.18 rely on it)
 *   create-symlinks --link T::L...      L (absolute in the container) a link to T, made
 *                                       or replaced; its directory made
 *   chmod --mode OCTAL --path P...      P's mode; one that is missing, or that the hook may
 *                                       not change (EPERM, EACCES), is skipped
 *   enable-cuda-compat                  the image's forward-compatible libcuda
 *     [--host-driver-version V]         (DIR/libcuda.so.*.*, exactly one, DIR
 *     [--host-cuda-version V]           /usr/local/cuda/compat by default) first in its
 *     [--cuda-compat-container-root D]  ld configuration when it is newer than the host's
 *                                       driver and supports it (its ELF note
 *                                       .note.cuda.fwd_compatibility; without one, a newer
 *                                       major version)
 *   disable-device-node-modification    where the host's /proc/driver/nvidia/params has
 *                                       "ModifyDeviceFiles: 1", the container sees a copy
 *                                       saying 0, so that the driver's libraries create no
 *                                       device nodes in it
 *   update-application-profile          EGLVisibleDGPUDevices limited to the container's
 *                                       /dev/nvidiaN (an application profile)
 *   noop                                nothing
 *
 * Every hook takes --container-spec FILE (the state from FILE; "" or "-": stdin). A hook
 * it does not know is what NVIDIA's does with one (commands.go): a warning on stderr, exit 0,
 * nothing changed, so that a spec from a newer toolkit still starts its containers.
 *
 * It runs on the host's OS, whatever that is (COS has none of the image's libraries): it
 * is linked statically, and so is the ldconfig beside it in the install dir (Debian's).
 * The image's files are hostile input, and the runtime waits for this hook before the
 * container can start. So everything that reads or writes the container's files happens
 * in a child that chroots into the container's root (root.path of the bundle's
 * config.json, or the state's "root"; never the host's /), keeps one or two capabilities
 * (CAP_DAC_OVERRIDE, and CAP_FOWNER for chmod; none that leaves a chroot) with
 * no_new_privs, and runs under limits of heap, CPU time and file size, killed with the
 * hook and at its deadline (--timeout, LDCONFIG_TIMEOUT_S without it). The one exception
 * is the mount of disable-device-node-modification, made by the hook itself with file
 * descriptors resolved inside the root (openat2 RESOLVE_IN_ROOT), never by path.
 * update-ldcache reads the image's /etc/ld.so.conf only when it is a regular file of at
 * most CONF_MAX bytes (a FIFO would block the read, a link to /dev/zero would never end).
 *
 * Exit status: 0 done (or nothing to do); 2 usage; 1 anything else, with one line on
 * stderr naming it (the runtime then refuses to start the container).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers/cdi-hook.h"

static int die_status = 1;

/* One line on stderr, "nvidia-cdi-hook: " and FMT. */
static void say(const char *fmt, va_list ap)
{
	fputs("nvidia-cdi-hook: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

_Noreturn void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
	exit(die_status);
}

static _Noreturn void usage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
	fputs("usage: nvidia-cdi-hook [hook] update-ldcache --folder DIR... | create-symlinks "
	      "--link TARGET::LINK... | chmod --mode OCTAL --path PATH... | enable-cuda-compat "
	      "[--host-driver-version V] [--host-cuda-version V] [--cuda-compat-container-root "
	      "DIR] | disable-device-node-modification | update-application-profile | noop "
	      "[--container-spec FILE]  (a createContainer hook: the container's state on "
	      "stdin)\n",
	      stderr);
	exit(2);
}

/* ---- the command line --------------------------------------------------- */

/* What one hook accepts: each flag once unless it is a list. */
struct flag {
	const char *name;
	size_t off;
	bool list;
};

#define F(name, field, list)                                                                       \
	{                                                                                          \
		name, offsetof(struct opts, field), list                                           \
	}

static void add_value(struct values *vs, const char *flag, const char *value)
{
	if (vs->n == MAX_VALUES)
		usage("more than %u values of --%s", MAX_VALUES, flag);
	vs->v[vs->n++] = value;
}

/* The flags after the hook's name, as NVIDIA's parser takes them: --F V and --F=V. */
static void parse_flags(char **argv, int argc, const struct flag *flags, size_t nflags,
			struct opts *o)
{
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i], *eq, *value;
		const struct flag *f = NULL;
		size_t len;

		if (arg[0] != '-' || arg[1] != '-')
			usage("unexpected argument '%s'", arg);
		eq = strchr(arg, '=');
		len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
		for (size_t k = 0; k < nflags; k++)
			if (strlen(flags[k].name) == len &&
			    strncmp(flags[k].name, arg + 2, len) == 0)
				f = &flags[k];
		if (!f)
			usage("unknown flag '%.*s' for this hook", (int)(len + 2), arg);
		if (eq)
			value = eq + 1;
		else if (i + 1 < argc)
			value = argv[++i];
		else
			usage("--%s needs a value", f->name);
		if (f->list)
			add_value((struct values *)((char *)o + f->off), f->name, value);
		else
			*(const char **)((char *)o + f->off) = value;
	}
}

/* --folder a,b --folder c: NVIDIA's flag library splits each value at commas. */
static void split_commas(struct values *vs)
{
	struct values out = {.n = 0};

	for (size_t i = 0; i < vs->n; i++) {
		char *copy = strdup(vs->v[i]), *save = NULL;

		if (!copy)
			die("out of memory");
		for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			add_value(&out, "folder", tok);
	}
	*vs = out;
}

/* ---- the container's state and root -------------------------------------- */

char *read_all(int fd, size_t max)
{
	size_t len = 0, cap = 8192;
	char *buf = malloc(cap + 1);

	while (buf) {
		ssize_t n;

		if (len == cap) {
			char *bigger = cap < max ? realloc(buf, (cap *= 2) + 1) : NULL;

			if (!bigger) {
				free(buf);
				return NULL;
			}
			buf = bigger;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (buf)
		buf[len] = '\0';
	return buf;
}

const char *string_at(json_object *o, const char *a, const char *b)
{
	json_object *v;

	if (!json_object_object_get_ex(o, a, &v))
		return NULL;
	if (b && !json_object_object_get_ex(v, b, &v))
		return NULL;
	return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/*
 * The container's root directory, opened (O_PATH) from the state on stdin or in SPEC:
 * the state's "root" where the runtime puts one (crun), else root.path of the bundle's
 * config.json, relative to the bundle when relative (OCI runtime spec, "Root").
 */
int open_container_root(const char *spec)
{
	int in = spec && *spec && strcmp(spec, "-") != 0 ? open(spec, O_RDONLY | O_CLOEXEC)
							 : STDIN_FILENO;
	char *state_text = in >= 0 ? read_all(in, MAX_JSON) : NULL, *config_text = NULL;
	json_object *state = state_text ? json_tokener_parse(state_text) : NULL, *config = NULL;
	const char *bundle = state ? string_at(state, "bundle", NULL) : NULL;
	const char *root = state ? string_at(state, "root", NULL) : NULL;
	int bundle_fd = -1, config_fd = -1, root_fd;
	struct stat st, host;

	if (in < 0)
		die("container state %s: %s", spec, strerror(errno));
	if (!root || root[0] != '/') {
		if (!bundle || bundle[0] != '/')
			die("no container state with an absolute \"bundle\" on stdin (run by the container runtime as a createContainer hook)");
		bundle_fd = open(bundle, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (bundle_fd < 0)
			die("bundle %s: %s", bundle, strerror(errno));
		config_fd = openat(bundle_fd, "config.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		config_text = config_fd >= 0 ? read_all(config_fd, MAX_JSON) : NULL;
		config = config_text ? json_tokener_parse(config_text) : NULL;
		root = config ? string_at(config, "root", "path") : NULL;
		if (!root)
			die("%s/config.json has no root.path", bundle);
	}
	root_fd = openat(bundle_fd >= 0 ? bundle_fd : AT_FDCWD, root,
			 O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0)
		die("container root %s: %s", root, strerror(errno));
	if (fstat(root_fd, &st) < 0 || stat("/", &host) < 0 ||
	    (st.st_dev == host.st_dev && st.st_ino == host.st_ino))
		die("the container's root is the host's /: refusing to touch the host");
	if (config_fd >= 0)
		close(config_fd);
	if (bundle_fd >= 0)
		close(bundle_fd);
	if (in != STDIN_FILENO)
		close(in);
	json_object_put(config);
	json_object_put(state);
	free(config_text);
	free(state_text);
	return root_fd;
}

/* ---- the child in the container's root ----------------------------------- */

/*
 * The capabilities in KEEP left, for this process and what it runs; never one that leaves
 * a chroot (CAP_SYS_CHROOT, CAP_SYS_ADMIN, CAP_DAC_READ_SEARCH's open_by_handle_at,
 * CAP_SYS_PTRACE, CAP_MKNOD).
 */
static void drop_privileges(uint32_t keep)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {{0}};

	d[0].effective = d[0].permitted = keep;
	for (int cap = 0; cap <= 63; cap++)
		if (!(cap < 32 && (keep & (1u << cap))) &&
		    prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			die("drop capability %d: %s", cap, strerror(errno));
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (syscall(SYS_capset, &h, d) < 0)
		die("capset: %s", strerror(errno));
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die("no_new_privs: %s", strerror(errno));
}

/* PATH (in the chroot) replaced by a file holding TEXT, mode MODE. */
void write_file(const char *path, const char *text, mode_t mode)
{
	char tmp[PATH_MAX];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp-nvidia-cdi-hook", path);
	(void)unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
	    fchmod(fd, mode) < 0 || close(fd) < 0 || rename(tmp, path) < 0)
		die("write %s in the container: %s", path, strerror(errno));
}

/* mkdir -p PATH (absolute, in the chroot), new directories with MODE. */
void make_dirs(const char *path, mode_t mode)
{
	char buf[PATH_MAX];

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		die("%s: path too long", path);
	for (char *p = buf + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;

		*p = '\0';
		if (buf[0] && mkdir(buf, mode) < 0 && errno != EEXIST)
			die("mkdir %s in the container: %s", buf, strerror(errno));
		if (!c)
			break;
		*p = c;
	}
}

/*
 * The child's limits, before it reads anything of the image: heap and file size (a read
 * of a file without end fails, at a bounded size, instead of growing until the node runs
 * out of memory), CPU time (SIGXCPU, then SIGKILL), no core dump; and death with the hook,
 * whoever kills it (the runtime at the hook's timeout). A FIFO that blocks uses no CPU:
 * the hook's deadline ends that.
 */
static void limit_child(pid_t hook, unsigned timeout_s)
{
	const struct {
		int resource;
		rlim_t soft, hard;
	} limits[] = {
		{RLIMIT_DATA, CHILD_MEMORY, CHILD_MEMORY},
		{RLIMIT_FSIZE, CHILD_FILE_SIZE, CHILD_FILE_SIZE},
		{RLIMIT_CPU, timeout_s, timeout_s + 1},
		{RLIMIT_CORE, 0, 0},
	};

	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		struct rlimit rl = {.rlim_cur = limits[i].soft, .rlim_max = limits[i].hard};

		if (setrlimit(limits[i].resource, &rl) < 0)
			die("setrlimit %d: %s", limits[i].resource, strerror(errno));
	}
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		die("PR_SET_PDEATHSIG: %s", strerror(errno));
	if (getppid() != hook)
		die("the hook ended before its child started");
}

/*
 * Waits for PID until TIMEOUT_S seconds have passed (SIGCHLD blocked in BLOCKED), then
 * kills it. Returns its wait status.
 */
static int wait_deadline(pid_t pid, const sigset_t *blocked, unsigned timeout_s, const char *what)
{
	struct timespec now, end;
	int status;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += timeout_s;
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		struct timespec left;

		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR)
			die("wait: %s", strerror(errno));
		clock_gettime(CLOCK_MONOTONIC, &now);
		left.tv_sec = end.tv_sec - now.tv_sec;
		left.tv_nsec = end.tv_nsec - now.tv_nsec;
		if (left.tv_nsec < 0) {
			left.tv_sec--;
			left.tv_nsec += 1000000000L;
		}
		if (left.tv_sec < 0)
			break;
		if (sigtimedwait(blocked, NULL, &left) < 0 && errno != EAGAIN && errno != EINTR)
			die("sigtimedwait: %s", strerror(errno));
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	die("%s did not finish within %u s, killed: the image names a file that blocks or never ends (a FIFO, a device); the container is not changed as the hook asks",
	    what, timeout_s);
}

struct job {
	int root_fd;
	uint32_t caps;
	unsigned timeout_s;
	const char *what; /* for messages: "ldconfig", "create-symlinks", ... */
	void (*run)(const struct opts *, int extra_fd);
	const struct opts *o;
	int extra_fd; /* opened before the chroot (ldconfig), or -1 */
};

/* Runs J->run in a child chrooted into the container's root; returns when it succeeded. */
static void run_in_root(const struct job *j)
{
	pid_t pid, hook = getpid();
	sigset_t chld;
	int status;

	/* Blocked before the fork, so that the child's end cannot be missed. */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		die_status = CHILD_SETUP_FAILED;
		limit_child(hook, j->timeout_s);
		if (fchdir(j->root_fd) < 0 || chroot(".") < 0 || chdir("/") < 0)
			die("chroot into the container: %s", strerror(errno));
		drop_privileges(j->caps);
		j->run(j->o, j->extra_fd);
		_exit(0);
	}
	status = wait_deadline(pid, &chld, j->timeout_s, j->what);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return;
	if (WIFEXITED(status) && WEXITSTATUS(status) == CHILD_SETUP_FAILED)
		exit(1); /* the child said why */
	if (WIFEXITED(status))
		die("%s failed with exit status %d (its message above): the container is not prepared as the hook asks",
		    j->what, WEXITSTATUS(status));
	if (WTERMSIG(status) == SIGXCPU)
		die("%s ran past its CPU time limit (%u s), killed: the image names a file that never ends (a device)",
		    j->what, j->timeout_s);
	die("%s was killed by signal %d", j->what, WTERMSIG(status));
}

/* SECONDS for --timeout: 1 to LDCONFIG_MAX_TIMEOUT_S. */
static unsigned parse_timeout(const char *s)
{
	char *end;
	unsigned long v;

	if (!s)
		return LDCONFIG_TIMEOUT_S;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < 1 || v > LDCONFIG_MAX_TIMEOUT_S)
		usage("--timeout %s: not a number of seconds from 1 to %d", s,
		      LDCONFIG_MAX_TIMEOUT_S);
	return (unsigned)v;
}

/*
 * RUN in a child chrooted into the container's root (the state from O's --container-spec),
 * with the capabilities CAPS, until O's --timeout; EXTRA_FD is passed on, or -1. Returns
 * when it succeeded.
 */
void in_root(const struct opts *o, uint32_t caps, const char *what,
	     void (*run)(const struct opts *, int), int extra_fd)
{
	struct job j = {.caps = caps,
			.timeout_s = parse_timeout(o->timeout),
			.what = what,
			.run = run,
			.o = o,
			.extra_fd = extra_fd};

	j.root_fd = open_container_root(o->spec);
	run_in_root(&j);
}

/* ---- dispatch ------------------------------------------------------------- */

static const struct flag ldcache_flags[] = {
	F("folder", folder, true),
	F("ldconfig-path", ldconfig_path, false),
	F("timeout", timeout, false),
	F("container-spec", spec, false),
};
static const struct flag symlink_flags[] = {
	F("link", link, true),
	F("container-spec", spec, false),
};
static const struct flag chmod_flags[] = {
	F("mode", mode, false),
	F("path", path, true),
	F("container-spec", spec, false),
};
static const struct flag compat_flags[] = {
	F("host-driver-version", host_driver, false),
	F("host-cuda-version", host_cuda, false),
	F("cuda-compat-container-root", compat_root, false),
	F("timeout", timeout, false),
	F("container-spec", spec, false),
};
static const struct flag spec_only[] = {
	F("container-spec", spec, false),
	F("timeout", timeout, false),
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

int main(int argc, char **argv)
{
	static struct opts o;
	const char *hook;
	int i = 1;

	if (i < argc && strcmp(argv[i], "hook") == 0)
		i++;
	while (i < argc && (strcmp(argv[i], "--debug") == 0 || strcmp(argv[i], "-d") == 0 ||
			    strcmp(argv[i], "--quiet") == 0))
		i++;
	if (i >= argc)
		usage("no hook named");
	hook = argv[i++];
	if (strcmp(hook, "update-ldcache") == 0) {
		parse_flags(argv + i, argc - i, ldcache_flags, N(ldcache_flags), &o);
		(void)parse_timeout(o.timeout); /* a bad one is a usage error before any work */
		split_commas(&o.folder);
		if (!o.folder.n)
			usage("update-ldcache needs --folder");
		for (size_t k = 0; k < o.folder.n; k++)
			if (o.folder.v[k][0] != '/')
				usage("--folder %s: not an absolute path", o.folder.v[k]);
		return update_ldcache(&o);
	}
	if (strcmp(hook, "create-symlinks") == 0) {
		parse_flags(argv + i, argc - i, symlink_flags, N(symlink_flags), &o);
		for (size_t k = 0; k < o.link.n; k++) {
			const char *sep = strstr(o.link.v[k], "::");

			if (!sep || sep == o.link.v[k] || sep[2] != '/' || strstr(sep + 2, "::"))
				usage("--link %s: not TARGET::/ABSOLUTE-LINK", o.link.v[k]);
		}
		if (o.link.n)
			in_root(&o, 1u << CAP_DAC_OVERRIDE, "create-symlinks", symlinks_child, -1);
		return 0;
	}
	if (strcmp(hook, "chmod") == 0) {
		char *end;

		parse_flags(argv + i, argc - i, chmod_flags, N(chmod_flags), &o);
		if (!o.mode || !*o.mode || (strtoul(o.mode, &end, 8), *end) ||
		    strtoul(o.mode, NULL, 8) > 07777)
			usage("chmod needs --mode OCTAL");
		if (!o.path.n)
			usage("chmod needs --path");
		in_root(&o, 1u << CAP_DAC_OVERRIDE | 1u << CAP_FOWNER, "chmod", chmod_child, -1);
		return 0;
	}
	if (strcmp(hook, "enable-cuda-compat") == 0) {
		parse_flags(argv + i, argc - i, compat_flags, N(compat_flags), &o);
		if ((!o.host_driver || !*o.host_driver) && (!o.host_cuda || !*o.host_cuda))
			return 0; /* nothing to compare with: NVIDIA's does nothing either */
		if (o.compat_root && o.compat_root[0] != '/')
			usage("--cuda-compat-container-root %s: not an absolute path",
			      o.compat_root);
		in_root(&o, 1u << CAP_DAC_OVERRIDE, "enable-cuda-compat", compat_child, -1);
		return 0;
	}
	if (strcmp(hook, "update-application-profile") == 0) {
		parse_flags(argv + i, argc - i, spec_only, N(spec_only), &o);
		in_root(&o, 1u << CAP_DAC_OVERRIDE, "update-application-profile", profile_child,
			-1);
		return 0;
	}
	if (strcmp(hook, "disable-device-node-modification") == 0) {
		parse_flags(argv + i, argc - i, spec_only, N(spec_only), &o);
		return disable_device_node_modification(&o);
	}
	if (strcmp(hook, "noop") == 0)
		return 0;
	fprintf(stderr,
		"nvidia-cdi-hook: unsupported hook '%s': nothing done, as NVIDIA's hook does with one it does not know\n",
		hook);
	return 0;
}
