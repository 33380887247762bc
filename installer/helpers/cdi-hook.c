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
#include <ctype.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CONF_DIR "/etc/ld.so.conf.d"
#define CONF_FILE CONF_DIR "/00-nvidia-driver.conf"
/* Sorts before ours and after a CUDA image's 00-cuda-compat.conf, as NVIDIA's 00-compat-*. */
#define COMPAT_CONF_FILE CONF_DIR "/00-compat-nvidia-driver.conf"
#define TOP_CONF "/etc/ld.so.conf"
#define PROFILE_DIR "/etc/nvidia/nvidia-application-profiles-rc.d"
#define PROFILE_FILE PROFILE_DIR "/10-container.conf"
#define PARAMS "/proc/driver/nvidia/params"
#define MAX_JSON (4u << 20)
/* An ld.so.conf is a few lines; a bigger one is no configuration. */
#define CONF_MAX (64u << 10)
/* The params file is a few hundred bytes. */
#define PARAMS_MAX (64u << 10)
/* The child's deadline without --timeout: below the hook timeout the spec gives (cdi.c). */
#define LDCONFIG_TIMEOUT_S 20
#define LDCONFIG_MAX_TIMEOUT_S 600
/*
 * The child's heap (RLIMIT_DATA): a few MiB serve ldconfig on a large image. Not its address
 * space: ldconfig maps each library whole to read its header (readlib.c), and a CUDA
 * image's libraries run to hundreds of MiB. The cache it writes is smaller than the file
 * limit.
 */
#define CHILD_MEMORY (256ul << 20)
#define CHILD_FILE_SIZE (64ul << 20)
/* The child's exit status when it fails before running ldconfig (it said why): env(1)'s. */
#define CHILD_SETUP_FAILED 125
/* Repeated flags: more than any spec carries (a real one: a few dozen links). */
#define MAX_VALUES 1024
/* The ELF note NVIDIA puts in a forward-compatible libcuda, and what it reads of it. */
#define FWD_NOTE ".note.cuda.fwd_compatibility"
#define ELF_MAX_SECTIONS 4096u
#define NOTE_MAX (64u << 10)

static int die_status = 1;

/* One line on stderr, "nvidia-cdi-hook: " and FMT. */
static void say(const char *fmt, va_list ap)
{
	fputs("nvidia-cdi-hook: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static _Noreturn void die(const char *fmt, ...)
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

struct values {
	const char *v[MAX_VALUES];
	size_t n;
};

struct opts {
	struct values folder, link, path;
	const char *mode, *ldconfig_path, *timeout, *spec;
	const char *host_driver, *host_cuda, *compat_root;
};

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

static char *read_all(int fd, size_t max)
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

static const char *string_at(json_object *o, const char *a, const char *b)
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
static int open_container_root(const char *spec)
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
static void write_file(const char *path, const char *text, mode_t mode)
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
static void make_dirs(const char *path, mode_t mode)
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

/* ---- update-ldcache ------------------------------------------------------- */

/*
 * Whether the image's ld.so.conf includes ld.so.conf.d (0), or there is none (1), or not
 * (-1). What is not a regular file of at most CONF_MAX bytes is refused: ldconfig reads
 * it next, and would wait on a FIFO forever or read a device without end.
 */
static int top_conf_state(void)
{
	/* O_NONBLOCK: opening a FIFO does not wait for a writer. A link is the image's own. */
	int fd = open(TOP_CONF, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	char *text;
	int r = -1;

	if (fd < 0)
		return errno == ENOENT ? 1 : -1;
	if (fstat(fd, &st) < 0)
		die("stat %s in the container: %s", TOP_CONF, strerror(errno));
	if (!S_ISREG(st.st_mode))
		die("the image's %s is not a regular file (mode %o): refusing to run ldconfig on it; the image must hold a regular file there, or none",
		    TOP_CONF, (unsigned)(st.st_mode & S_IFMT));
	if (st.st_size > (off_t)CONF_MAX)
		die("the image's %s holds %lld bytes, more than the %u an ld configuration may: refusing to run ldconfig on it",
		    TOP_CONF, (long long)st.st_size, CONF_MAX);
	text = read_all(fd, CONF_MAX);
	if (!text)
		die("read %s in the container: %s", TOP_CONF, strerror(errno ? errno : EFBIG));
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		while (*line == ' ' || *line == '\t')
			line++;
		if (strncmp(line, "include", 7) == 0 && strstr(line, CONF_DIR "/"))
			r = 0;
	}
	free(text);
	close(fd);
	return r;
}

static void soname_links(const char *folder);

/*
 * In the chroot: the folders that exist (NVIDIA's specs name every folder they mount into;
 * one missing is said and skipped, none at all is an error) into CONF_FILE, the soname
 * links of their libraries beside them, then ldconfig -X for the cache.
 */
static void ldcache_child(const struct opts *o, int ldconfig_fd)
{
	static char conf[MAX_VALUES * 64];
	char *args[MAX_VALUES + 3], name[] = "ldconfig", no_links[] = "-X";
	char *env[] = {NULL};
	size_t len = 0, n = 0, present = 0;
	sigset_t none;
	int top;

	args[n++] = name;
	args[n++] = no_links;
	for (size_t i = 0; i < o->folder.n; i++) {
		const char *f = o->folder.v[i];
		struct stat st;
		int w;

		if (stat(f, &st) < 0 || !S_ISDIR(st.st_mode)) {
			fprintf(stderr,
				"nvidia-cdi-hook: %s is not a directory in the container: not added to its ld cache\n",
				f);
			continue;
		}
		w = snprintf(conf + len, sizeof(conf) - len, "%s\n", f);
		if (w < 0 || (size_t)w >= sizeof(conf) - len)
			die("the folders do not fit in one ld configuration file");
		len += (size_t)w;
		present++;
	}
	if (!present)
		die("%s%s not in the container: the runtime did not make the CDI spec's mounts before this hook",
		    o->folder.v[0], o->folder.n > 1 ? " and the other folders are" : " is");
	for (size_t i = 0; i < o->folder.n; i++)
		soname_links(o->folder.v[i]);
	make_dirs(CONF_DIR, 0755);
	write_file(CONF_FILE, conf, 0644);
	top = top_conf_state();
	if (top == 1)
		write_file(TOP_CONF, "include " CONF_DIR "/*.conf\n", 0644);
	/* An ld.so.conf that does not read ld.so.conf.d: the folders on the command line. */
	for (size_t i = 0; top < 0 && i < o->folder.n; i++)
		args[n++] = (char *)o->folder.v[i];
	args[n] = NULL;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execveat(ldconfig_fd, "", args, env, AT_EMPTY_PATH);
	die("run ldconfig: %s", strerror(errno));
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
static void in_root(const struct opts *o, uint32_t caps, const char *what,
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

static int update_ldcache(const struct opts *o)
{
	char self[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 16);
	int ldconfig_fd;

	if (n < 0 || !(self[n] = '\0', slash = strrchr(self, '/')))
		die("where am I: %s", strerror(errno));
	strcpy(slash + 1, "ldconfig");
	ldconfig_fd = open(self, O_RDONLY | O_CLOEXEC);
	if (ldconfig_fd < 0)
		die("%s: %s (it is shipped beside the hook)", self, strerror(errno));
	in_root(o, 1u << CAP_DAC_OVERRIDE, "ldconfig", ldcache_child, ldconfig_fd);
	return 0;
}

/* ---- create-symlinks, chmod ----------------------------------------------- */

static void symlinks_child(const struct opts *o, int unused)
{
	(void)unused;
	for (size_t i = 0; i < o->link.n; i++) {
		const char *spec = o->link.v[i], *sep = strstr(spec, "::");
		char target[PATH_MAX], link[PATH_MAX], cur[PATH_MAX], tmp[PATH_MAX + 32], *slash;
		ssize_t len;

		snprintf(target, sizeof(target), "%.*s", (int)(sep - spec), spec);
		snprintf(link, sizeof(link), "%s", sep + 2);
		len = readlink(link, cur, sizeof(cur) - 1);
		if (len >= 0 && (cur[len] = '\0', strcmp(cur, target) == 0))
			continue;
		slash = strrchr(link, '/');
		if (slash > link) {
			*slash = '\0';
			make_dirs(link, 0755);
			*slash = '/';
		}
		snprintf(tmp, sizeof(tmp), "%s.tmp-nvidia-cdi-hook", link);
		(void)unlink(tmp);
		if (symlink(target, tmp) < 0 || rename(tmp, link) < 0)
			die("link %s -> %s in the container: %s", link, target, strerror(errno));
	}
}

static void chmod_child(const struct opts *o, int unused)
{
	mode_t mode = (mode_t)strtoul(o->mode, NULL, 8);

	(void)unused;
	for (size_t i = 0; i < o->path.n; i++) {
		struct stat st;

		if (stat(o->path.v[i], &st) < 0 || (st.st_mode & 07777) == mode)
			continue;
		if (chmod(o->path.v[i], mode) < 0 && errno != EPERM && errno != EACCES)
			die("chmod %s in the container: %s", o->path.v[i], strerror(errno));
	}
}

/* ---- enable-cuda-compat --------------------------------------------------- */

/* A version "A.B.C" (fewer parts read as 0) into V; false when it is none. */
static bool parse_version(const char *s, unsigned long v[3])
{
	char *end;

	v[0] = v[1] = v[2] = 0;
	for (int i = 0; s && i < 3; i++) {
		if (!isdigit((unsigned char)*s))
			return false;
		v[i] = strtoul(s, &end, 10);
		if (*end == '\0')
			return true;
		if (*end != '.')
			return false;
		s = end + 1;
	}
	return s && *s == '\0';
}

static int compare_versions(const unsigned long a[3], const unsigned long b[3])
{
	for (int i = 0; i < 3; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

static uint64_t get(const unsigned char *p, unsigned size, bool big)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < size; i++)
		v |= (uint64_t)p[big ? i : size - 1 - i] << (8 * (size - 1 - i));
	return v;
}

static bool pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	return off <= (uint64_t)INT64_MAX && pread(fd, buf, len, (off_t)off) == (ssize_t)len;
}

/*
 * The JSON of FD's ELF note FWD_NOTE (owner "NVIDIA Corporation"), or NULL where it has
 * none: the section headers, the section names, the note's header and its description,
 * each read within the file and its bounds.
 */
static char *read_fwd_note(int fd)
{
	unsigned char h[sizeof(Elf64_Ehdr)], sh[sizeof(Elf64_Shdr)], nh[12];
	uint64_t shoff, shentsize, shnum, shstrndx, str_off, str_size;
	bool big, is64;
	char *desc;

	if (!pread_all(fd, h, sizeof(Elf32_Ehdr), 0) || memcmp(h, ELFMAG, SELFMAG) != 0)
		return NULL;
	is64 = h[EI_CLASS] == ELFCLASS64;
	big = h[EI_DATA] == ELFDATA2MSB;
	if (is64 && !pread_all(fd, h, sizeof(Elf64_Ehdr), 0))
		return NULL;
	shoff = is64 ? get(h + 40, 8, big) : get(h + 32, 4, big);
	shentsize = get(h + (is64 ? 58 : 46), 2, big);
	shnum = get(h + (is64 ? 60 : 48), 2, big);
	shstrndx = get(h + (is64 ? 62 : 50), 2, big);
	if (shnum == 0 || shnum > ELF_MAX_SECTIONS || shstrndx >= shnum ||
	    shentsize < (is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr)))
		return NULL;
/* A field of the section header in sh: its offset and size in ELF64, then in ELF32. */
#define SH_FIELD(off64, off32) (is64 ? get(sh + (off64), 8, big) : get(sh + (off32), 4, big))
	if (!pread_all(fd, sh, is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr),
		       shoff + shstrndx * shentsize))
		return NULL;
	str_off = SH_FIELD(24, 16);
	str_size = SH_FIELD(32, 20);
	for (uint64_t i = 0; i < shnum; i++) {
		char name[sizeof(FWD_NOTE)];
		uint64_t name_off, off, size, align, namesz, descsz, desc_off;

		if (!pread_all(fd, sh, is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr),
			       shoff + i * shentsize))
			return NULL;
		if (get(sh + 4, 4, big) != SHT_NOTE)
			continue;
		name_off = get(sh, 4, big);
		if (name_off + sizeof(name) > str_size ||
		    !pread_all(fd, name, sizeof(name), str_off + name_off) ||
		    memcmp(name, FWD_NOTE, sizeof(name)) != 0)
			continue;
		off = SH_FIELD(24, 16);
		size = SH_FIELD(32, 20);
		align = SH_FIELD(48, 32);
		align = align ? align : 1;
		if (size < sizeof(nh) || size > NOTE_MAX || !pread_all(fd, nh, sizeof(nh), off))
			return NULL;
		namesz = get(nh, 4, big);
		descsz = get(nh + 4, 4, big);
		/* The owner's name, padded to the section's alignment (NVIDIA's reader does so). */
		desc_off = sizeof(nh) + ((namesz + align - 1) & ~(align - 1));
		if (namesz != sizeof("NVIDIA Corporation") || descsz == 0 ||
		    desc_off + descsz > size)
			return NULL;
		char owner[sizeof("NVIDIA Corporation")];

		if (!pread_all(fd, owner, sizeof(owner), off + sizeof(nh)) ||
		    memcmp(owner, "NVIDIA Corporation", sizeof(owner)) != 0)
			return NULL;
		desc = calloc(1, descsz + 1);
		if (!desc || !pread_all(fd, desc, descsz, off + desc_off)) {
			free(desc);
			return NULL;
		}
		return desc;
	}
#undef SH_FIELD
	return NULL;
}

/*
 * NVIDIA's rule (cudacompat.go, useCompatLibraries; cuda-elf-header.go, UseCompat): with the
 * note, the compat library serves when the host driver's major version is among its
 * "Driver" list and it is newer than the host driver, or, without a host driver version,
 * when its "CUDA Version" is newer than the host's; without the note, only with a host
 * driver version and no host CUDA version, and when its major version is the higher.
 */
static bool use_compat(int fd, const char *compat_version, const char *host_driver,
		       const char *host_cuda)
{
	unsigned long compat[3], host[3], cuda[3], note_cuda[3];
	bool have_compat = parse_version(compat_version, compat);
	bool have_host = host_driver && *host_driver && parse_version(host_driver, host);
	bool have_cuda = host_cuda && *host_cuda && parse_version(host_cuda, cuda);
	char *text = read_fwd_note(fd);
	json_object *note = text ? json_tokener_parse(text) : NULL, *drivers;
	bool r = false;

	free(text);
	if (note) {
		const char *cv = string_at(note, "CUDA Version", NULL);

		if (!have_compat || !have_host) {
			r = have_cuda && cv && parse_version(cv, note_cuda) &&
			    compare_versions(note_cuda, cuda) > 0;
		} else if (json_object_object_get_ex(note, "Driver", &drivers) &&
			   json_object_is_type(drivers, json_type_array)) {
			for (size_t i = 0; i < json_object_array_length(drivers); i++) {
				json_object *d = json_object_array_get_idx(drivers, i);

				if (json_object_is_type(d, json_type_int) &&
				    (unsigned long)json_object_get_int64(d) == host[0])
					r = compare_versions(compat, host) > 0;
			}
		}
		json_object_put(note);
		return r;
	}
	if (host_cuda && *host_cuda)
		return false;
	return have_compat && have_host && host[0] < compat[0];
}

static void compat_child(const struct opts *o, int unused)
{
	const char *dir = o->compat_root ? o->compat_root : "/usr/local/cuda/compat";
	char found[NAME_MAX + 1] = "", conf[PATH_MAX + 2];
	DIR *d = opendir(dir);
	struct dirent *de;
	unsigned n = 0;
	int fd;

	(void)unused;
	if (!d)
		return; /* no compat libraries in this image */
	while ((de = readdir(d))) {
		const char *v = de->d_name + strlen("libcuda.so.");
		struct stat st;

		/* libcuda.so.*.*: a version with a dot, a regular file. */
		if (strncmp(de->d_name, "libcuda.so.", 11) != 0 || !strchr(v, '.') ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (++n == 1)
			snprintf(found, sizeof(found), "%s", de->d_name);
	}
	if (n != 1) {
		if (n > 1)
			fprintf(stderr,
				"nvidia-cdi-hook: %u libcuda.so.*.* in %s, expected one: compat libraries not used\n",
				n, dir);
		closedir(d);
		return;
	}
	fd = openat(dirfd(d), found, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		die("open %s/%s in the container: %s", dir, found, strerror(errno));
	if (!use_compat(fd, found + strlen("libcuda.so."), o->host_driver, o->host_cuda)) {
		close(fd);
		closedir(d);
		return;
	}
	close(fd);
	closedir(d);
	make_dirs(CONF_DIR, 0755);
	snprintf(conf, sizeof(conf), "%s\n", dir);
	write_file(COMPAT_CONF_FILE, conf, 0644);
}

/* ---- update-ldcache's soname links ------------------------------------------ */

/*
 * The ELF program header field at OFF64 (ELF64) or OFF32 (ELF32) of the header in P: its
 * offset, virtual address and size in the file.
 */
#define PH_FIELD(p, off64, off32) (is64 ? get((p) + (off64), 8, big) : get((p) + (off32), 4, big))

/* The file offset of the virtual address VADDR, through the PT_LOAD segment holding it. */
static bool vaddr_offset(int fd, const unsigned char *h, bool is64, bool big, uint64_t vaddr,
			 uint64_t *ret)
{
	uint64_t phoff = is64 ? get(h + 32, 8, big) : get(h + 28, 4, big);
	uint64_t phentsize = get(h + (is64 ? 54 : 42), 2, big),
		 phnum = get(h + (is64 ? 56 : 44), 2, big);
	unsigned char ph[sizeof(Elf64_Phdr)];

	for (uint64_t i = 0; i < phnum && i < ELF_MAX_SECTIONS; i++) {
		uint64_t off, addr, size;

		if (!pread_all(fd, ph, is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr),
			       phoff + i * phentsize))
			return false;
		if (get(ph, 4, big) != PT_LOAD)
			continue;
		off = PH_FIELD(ph, 8, 4);
		addr = PH_FIELD(ph, 16, 8);
		size = PH_FIELD(ph, 32, 16);
		if (vaddr >= addr && vaddr - addr < size) {
			*ret = off + (vaddr - addr);
			return true;
		}
	}
	return false;
}

/*
 * The soname (DT_SONAME) of the ELF shared object FD into RET (SIZE bytes), read where
 * ldconfig reads it (glibc's elf/readelflib.c, process_elf_file): the PT_DYNAMIC segment,
 * its string table found through DT_STRTAB's address. False where it has none, or one
 * that is not a plain file name: a soname with a '/' (or "." or "..") would put the link
 * somewhere else than beside the library.
 */
static bool read_soname(int fd, char *ret, size_t size)
{
	unsigned char h[sizeof(Elf64_Ehdr)], ph[sizeof(Elf64_Phdr)], dyn[16];
	uint64_t phoff, phentsize, phnum, dyn_off = 0, dyn_size = 0, strtab = 0, strsz = 0;
	uint64_t soname = UINT64_MAX, str_off;
	bool big, is64, found = false;
	size_t ent;
	ssize_t got;

	if (!pread_all(fd, h, sizeof(Elf32_Ehdr), 0) || memcmp(h, ELFMAG, SELFMAG) != 0)
		return false;
	is64 = h[EI_CLASS] == ELFCLASS64;
	big = h[EI_DATA] == ELFDATA2MSB;
	if ((is64 && !pread_all(fd, h, sizeof(Elf64_Ehdr), 0)) || get(h + 16, 2, big) != ET_DYN)
		return false;
	phoff = is64 ? get(h + 32, 8, big) : get(h + 28, 4, big);
	phentsize = get(h + (is64 ? 54 : 42), 2, big);
	phnum = get(h + (is64 ? 56 : 44), 2, big);
	if (phnum == 0 || phnum > ELF_MAX_SECTIONS ||
	    phentsize < (is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr)))
		return false;
	for (uint64_t i = 0; i < phnum && !found; i++) {
		if (!pread_all(fd, ph, is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr),
			       phoff + i * phentsize))
			return false;
		if ((found = get(ph, 4, big) == PT_DYNAMIC)) {
			dyn_off = PH_FIELD(ph, 8, 4);
			dyn_size = PH_FIELD(ph, 32, 16);
		}
	}
	ent = is64 ? 16 : 8;
	for (uint64_t at = 0; found && at + ent <= dyn_size && at < NOTE_MAX; at += ent) {
		uint64_t tag, val;

		if (!pread_all(fd, dyn, ent, dyn_off + at))
			return false;
		tag = get(dyn, (unsigned)ent / 2, big);
		val = get(dyn + ent / 2, (unsigned)ent / 2, big);
		if (tag == DT_NULL)
			break;
		if (tag == DT_SONAME)
			soname = val;
		else if (tag == DT_STRTAB)
			strtab = val;
		else if (tag == DT_STRSZ)
			strsz = val;
	}
	if (soname == UINT64_MAX || soname >= strsz ||
	    !vaddr_offset(fd, h, is64, big, strtab, &str_off))
		return false;
	if (str_off > (uint64_t)INT64_MAX - soname)
		return false;
	memset(ret, 0, size);
	got = pread(fd, ret, size - 1, (off_t)(str_off + soname));
	/* Its end inside what was read and inside the string table. */
	return got > 0 && ret[0] && strlen(ret) < (size_t)got && strlen(ret) < strsz - soname &&
	       !strchr(ret, '/') && strcmp(ret, ".") != 0 && strcmp(ret, "..") != 0;
}
#undef PH_FIELD

/*
 * ldconfig's order of two library names (glibc's elf/dl-cache.c, _dl_cache_libcmp): runs
 * of digits compared as numbers, a digit after a non-digit; > 0 when A is the newer.
 */
static int libcmp(const char *a, const char *b)
{
	while (*a) {
		bool da = isdigit((unsigned char)*a), db = isdigit((unsigned char)*b);

		if (da && db) {
			char *ea, *eb;
			unsigned long long na = strtoull(a, &ea, 10), nb = strtoull(b, &eb, 10);

			if (na != nb)
				return na < nb ? -1 : 1;
			a = ea;
			b = eb;
		} else if (da || db) {
			return da ? 1 : -1;
		} else if (*a != *b) {
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		} else {
			a++;
			b++;
		}
	}
	return *b ? -1 : 0;
}

struct soname_link {
	char soname[NAME_MAX + 1], file[NAME_MAX + 1];
};

/*
 * The libraries of the directory DFD (regular files named lib*.so* or ld-*.so*, as
 * ldconfig takes them, opened without following a link or waiting on a FIFO) whose soname
 * is not their name, into RET (at most MAX); of two with one soname, the newer (libcmp).
 * Returns how many.
 */
static size_t soname_list(int dfd, struct soname_link *ret, size_t max)
{
	DIR *d = fdopendir(dup(dfd));
	struct dirent *de;
	size_t n = 0;

	while (d && (de = readdir(d))) {
		char soname[NAME_MAX + 1];
		struct stat st;
		size_t k;
		int fd;

		if ((strncmp(de->d_name, "lib", 3) != 0 && strncmp(de->d_name, "ld-", 3) != 0) ||
		    !strstr(de->d_name, ".so") ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		fd = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
		    !read_soname(fd, soname, sizeof(soname)) || strcmp(soname, de->d_name) == 0) {
			close(fd);
			continue;
		}
		close(fd);
		for (k = 0; k < n && strcmp(ret[k].soname, soname) != 0; k++)
			;
		if (k == n && n == max)
			continue;
		if (k < n && libcmp(de->d_name, ret[k].file) <= 0)
			continue;
		snprintf(ret[k].soname, sizeof(ret[k].soname), "%s", soname);
		snprintf(ret[k].file, sizeof(ret[k].file), "%s", de->d_name);
		if (k == n)
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

/*
 * In the chroot: the soname links of the libraries in FOLDER, beside them, as the ldconfig
 * of NVIDIA's hook makes them (it runs without -X: internal/ldconfig/ldconfig.go,
 * UpdateLDCache, and runLdconfig in cmd/nvidia-cdi-hook/update-ldcache/update-ldcache.go
 * before 1.18), and as the specs of toolkits before 1.18 rely on: they mount only the
 * *.so.VERSION files and ask create-symlinks for libcuda.so alone. Only in the folders the
 * spec names: the cache pass that follows keeps -X, so the image's own directories stay as
 * the image has them. A link of that name to the same file is left, another link replaced
 * (atomically), anything else left as it is (ldconfig's create_links); the link is a plain
 * name in FOLDER and its target a file of FOLDER, so neither leads anywhere else. One that
 * cannot be made (a read-only folder) is said, as ldconfig says it, and the rest go on.
 */
static void soname_links(const char *folder)
{
	static struct soname_link links[MAX_VALUES];
	int dfd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t n = dfd >= 0 ? soname_list(dfd, links, MAX_VALUES) : 0;

	for (size_t i = 0; i < n; i++) {
		const char *so = links[i].soname;
		char tmp[NAME_MAX + 32];
		struct stat st, lib;

		if (fstatat(dfd, so, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			if (!S_ISLNK(st.st_mode))
				continue;
			if (fstatat(dfd, so, &st, 0) == 0 &&
			    fstatat(dfd, links[i].file, &lib, AT_SYMLINK_NOFOLLOW) == 0 &&
			    st.st_dev == lib.st_dev && st.st_ino == lib.st_ino)
				continue;
		}
		snprintf(tmp, sizeof(tmp), ".%.*s.tmp-nvidia-cdi-hook", NAME_MAX - 24, so);
		(void)unlinkat(dfd, tmp, 0);
		if (symlinkat(links[i].file, dfd, tmp) < 0 || renameat(dfd, tmp, dfd, so) < 0) {
			fprintf(stderr,
				"nvidia-cdi-hook: cannot link %s/%s to %s in the container: %s\n",
				folder, so, links[i].file, strerror(errno));
			(void)unlinkat(dfd, tmp, 0);
		}
	}
	if (dfd >= 0)
		close(dfd);
}

/* ---- update-application-profile ------------------------------------------- */

static void profile_child(const struct opts *o, int unused)
{
	DIR *d = opendir("/dev");
	struct dirent *de;
	uint64_t mask = 0;
	char text[256];

	(void)o;
	(void)unused;
	while (d && (de = readdir(d))) {
		const char *s = de->d_name + 6;
		struct stat st;

		if (strncmp(de->d_name, "nvidia", 6) != 0 || !*s)
			continue;
		while (isdigit((unsigned char)*s))
			s++;
		if (*s || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISCHR(st.st_mode) || minor(st.st_rdev) >= 64)
			continue;
		mask |= UINT64_C(1) << minor(st.st_rdev);
	}
	if (d)
		closedir(d);
	if (!mask)
		return;
	make_dirs(PROFILE_DIR, 0555);
	snprintf(
		text, sizeof(text),
		"{\"profiles\":[{\"name\":\"_container_\",\"settings\":[\"EGLVisibleDGPUDevices\",0x%llx]}],\"rules\":[{\"pattern\":[],\"profile\":\"_container_\"}]}",
		(unsigned long long)mask);
	write_file(PROFILE_FILE, text, 0444);
}

/* ---- disable-device-node-modification ------------------------------------- */

/*
 * The host's params with "ModifyDeviceFiles: 1" made 0, into *RET; false when the host's
 * driver does not modify device files (no params, or not 1): nothing to do.
 */
static bool params_without_modify(char **ret)
{
	int fd = open(PARAMS, O_RDONLY | O_CLOEXEC);
	char *text = fd >= 0 ? read_all(fd, PARAMS_MAX) : NULL, *at;

	if (fd >= 0)
		close(fd);
	if (!text)
		return false;
	at = strstr(text, "ModifyDeviceFiles: 1\n");
	if (!at || (at != text && at[-1] != '\n')) {
		free(text);
		return false;
	}
	at[strlen("ModifyDeviceFiles: ")] = '0';
	*ret = text;
	return true;
}

static int resolve_in(int root_fd, const char *path, int flags)
{
	struct open_how how = {.flags = (uint64_t)(unsigned)(flags | O_CLOEXEC),
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};

	return (int)syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
}

/*
 * The copy on a tmpfs of its own at /run/nvidia-cdi-hook-PID in the container, bind-mounted
 * read-only over its /proc/driver/nvidia/params; every path resolved inside the root.
 */
static int disable_device_node_modification(const struct opts *o)
{
	int root_fd = open_container_root(o->spec), run_fd, dir_fd, fs_fd, mnt_fd, file_fd, tree_fd,
	    target_fd;
	struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NODEV |
					    MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC};
	char dir[64], *text;

	if (!params_without_modify(&text))
		return 0;
	target_fd = resolve_in(root_fd, PARAMS + 1, O_PATH | O_NOFOLLOW);
	if (target_fd < 0) {
		if (errno == ENOENT)
			return 0; /* the container has no procfs there: nothing reads it */
		die("%s in the container: %s", PARAMS, strerror(errno));
	}
	run_fd = resolve_in(root_fd, "run", O_PATH | O_DIRECTORY);
	if (run_fd < 0)
		die("/run in the container: %s", strerror(errno));
	snprintf(dir, sizeof(dir), "nvidia-cdi-hook-%d", (int)getpid());
	if (mkdirat(run_fd, dir, 0755) < 0 && errno != EEXIST)
		die("mkdir /run/%s in the container: %s", dir, strerror(errno));
	dir_fd = openat(run_fd, dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	fs_fd = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
	if (dir_fd < 0 || fs_fd < 0 ||
	    syscall(SYS_fsconfig, fs_fd, FSCONFIG_SET_STRING, "size", "64k", 0) < 0 ||
	    syscall(SYS_fsconfig, fs_fd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0 ||
	    (mnt_fd = (int)syscall(SYS_fsmount, fs_fd, FSMOUNT_CLOEXEC, 0)) < 0 ||
	    syscall(SYS_move_mount, mnt_fd, "", dir_fd, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		die("a tmpfs at /run/%s in the container: %s", dir, strerror(errno));
	file_fd = openat(mnt_fd, "params", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	if (file_fd < 0 || write(file_fd, text, strlen(text)) != (ssize_t)strlen(text) ||
	    close(file_fd) < 0)
		die("write the params copy: %s", strerror(errno));
	tree_fd =
		(int)syscall(SYS_open_tree, mnt_fd, "params", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree_fd < 0 ||
	    syscall(SYS_mount_setattr, tree_fd, "", AT_EMPTY_PATH, &ro, sizeof(ro)) < 0 ||
	    syscall(SYS_move_mount, tree_fd, "", target_fd, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		die("mount the params copy over %s in the container: %s", PARAMS, strerror(errno));
	free(text);
	return 0;
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
