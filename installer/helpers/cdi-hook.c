// SPDX-License-Identifier: Apache-2.0
/*
 * nvidia-cdi-hook: the createContainer hook our CDI spec names. The runtime runs
 * it on the host, with the container's state (OCI runtime spec, "State") on
 * stdin, after the container's mounts are made and before it pivots into its
 * root; it adds FOLDER (the driver's lib64 as the container sees it) to the
 * container's ld cache, so that dlopen("libcuda.so.1") works without touching
 * the workload's LD_LIBRARY_PATH.
 *
 *   nvidia-cdi-hook update-ldcache --folder /usr/local/nvidia/lib64 [--timeout SECONDS]
 *
 * It runs on the host's OS, whatever that is (COS has none of the image's
 * libraries): it is linked statically, and so is the ldconfig beside it in the
 * install dir (Debian's), which it runs on the container's root:
 *   1. the root from the bundle's config.json ("root.path"), never the host's /;
 *   2. in a child: chroot into it, drop every capability but CAP_DAC_OVERRIDE
 *      and set no_new_privs (the container's files are not trusted: a chrooted
 *      process without CAP_SYS_CHROOT cannot leave the chroot), write
 *      /etc/ld.so.conf.d/00-nvidia-driver.conf naming FOLDER (and
 *      /etc/ld.so.conf with its include when the image has none), then run the
 *      ldconfig, opened before the chroot, with -X (no links made in the image).
 * The image's own libraries stay found: its configuration is read as before,
 * and a directory its loader searches by default (not in any configuration)
 * is still searched after the cache.
 *
 * The image's files are hostile input, and the runtime waits for this hook before
 * the container can start: the image's /etc/ld.so.conf is read only when it is a
 * regular file of at most CONF_MAX bytes (a FIFO would block the read, a link to
 * /dev/zero would never end), and the child runs under limits of heap, CPU time
 * and file size, killed with the hook if the runtime kills it, and killed by the
 * hook at its deadline (--timeout, LDCONFIG_TIMEOUT_S without it): what ldconfig
 * itself reads, the files ld.so.conf includes, may be any of those too. The spec
 * gives the runtime a longer timeout for the hook, so that this error comes first.
 *
 * Exit status: 0 done; 2 usage; 1 anything else, with one line on stderr naming
 * it (the runtime then refuses to start the container): the state or the root
 * cannot be read, FOLDER is not in the container (the runtime made the spec's
 * mounts in another namespace), the image's ld.so.conf is no regular file or too
 * big, ldconfig fails, runs past a limit or its deadline, the cache cannot be written.
 */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <linux/capability.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CONF_DIR "/etc/ld.so.conf.d"
#define CONF_FILE CONF_DIR "/00-nvidia-driver.conf"
#define TOP_CONF "/etc/ld.so.conf"
#define MAX_JSON (4u << 20)
/* An ld.so.conf is a few lines; a bigger one is no configuration. */
#define CONF_MAX (64u << 10)
/* The child's deadline without --timeout: below the hook timeout the spec gives (cdi.c). */
#define LDCONFIG_TIMEOUT_S 20
#define LDCONFIG_MAX_TIMEOUT_S 600
/*
 * ldconfig's heap (RLIMIT_DATA): a few MiB serve a large image. Not its address space:
 * it maps each library whole to read its header (readlib.c), and a CUDA image's
 * libraries run to hundreds of MiB. The cache it writes is smaller than the file limit.
 */
#define LDCONFIG_MEMORY (256ul << 20)
#define LDCONFIG_FILE_SIZE (64ul << 20)
/* The child's exit status when it fails before running ldconfig (it said why): env(1)'s. */
#define CHILD_SETUP_FAILED 125

static int die_status = 1;

static _Noreturn void die(const char *fmt, ...)
{
	va_list ap;

	fputs("nvidia-cdi-hook: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(die_status);
}

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

/* The container's root directory, opened (O_PATH) from the state on stdin. */
static int open_container_root(void)
{
	char *state_text = read_all(STDIN_FILENO, MAX_JSON), *config_text;
	json_object *state = state_text ? json_tokener_parse(state_text) : NULL, *config;
	const char *bundle = state ? string_at(state, "bundle", NULL) : NULL, *root;
	int bundle_fd, config_fd, root_fd;
	struct stat st, host;

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
	/* A relative root is the bundle's (OCI runtime spec, "Root"). */
	root_fd = openat(bundle_fd, root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0)
		die("container root %s: %s", root, strerror(errno));
	if (fstat(root_fd, &st) < 0 || stat("/", &host) < 0 ||
	    (st.st_dev == host.st_dev && st.st_ino == host.st_ino))
		die("the container's root is the host's /: refusing to touch the host's ld cache");
	close(config_fd);
	close(bundle_fd);
	json_object_put(config);
	json_object_put(state);
	free(config_text);
	free(state_text);
	return root_fd;
}

/*
 * One capability left, for this process and what it runs: CAP_DAC_OVERRIDE, to
 * write the image's /etc whoever owns it (a user namespace's root may not). Not
 * one that leaves a chroot (CAP_SYS_CHROOT, CAP_SYS_ADMIN, CAP_DAC_READ_SEARCH's
 * open_by_handle_at, CAP_SYS_PTRACE, CAP_MKNOD).
 */
static void drop_privileges(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {{0}};

	d[0].effective = d[0].permitted = 1u << CAP_DAC_OVERRIDE;
	for (int cap = 0; cap <= 63; cap++)
		if (cap != CAP_DAC_OVERRIDE && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 &&
		    errno != EINVAL)
			die("drop capability %d: %s", cap, strerror(errno));
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (syscall(SYS_capset, &h, d) < 0)
		die("capset: %s", strerror(errno));
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die("no_new_privs: %s", strerror(errno));
}

static void write_file(const char *path, const char *text)
{
	char tmp[PATH_MAX];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp-nvidia-cdi-hook", path);
	(void)unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
	    fchmod(fd, 0644) < 0 || close(fd) < 0 || rename(tmp, path) < 0)
		die("write %s in the container: %s", path, strerror(errno));
}

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
	for (char *line = text ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n")) {
		while (*line == ' ' || *line == '\t')
			line++;
		if (strncmp(line, "include", 7) == 0 && strstr(line, CONF_DIR "/"))
			r = 0;
	}
	free(text);
	close(fd);
	return r;
}

/*
 * The child's limits, before it reads anything of the image: heap and file size
 * (ldconfig's read of a file without end fails, at a bounded size, instead of growing
 * until the node runs out of memory), CPU time (SIGXCPU, then SIGKILL),
 * no core dump; and death with the hook, whoever kills it (the runtime at the hook's
 * timeout). A FIFO that blocks uses no CPU: the hook's deadline ends that.
 */
static void limit_child(pid_t hook, unsigned timeout_s)
{
	const struct {
		int resource;
		rlim_t soft, hard;
	} limits[] = {
		{RLIMIT_DATA, LDCONFIG_MEMORY, LDCONFIG_MEMORY},
		{RLIMIT_FSIZE, LDCONFIG_FILE_SIZE, LDCONFIG_FILE_SIZE},
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
		die("the hook ended before its ldconfig started");
}

/* The child: into the container's root, the configuration written, then ldconfig. */
static _Noreturn void run_child(int root_fd, int ldconfig_fd, const char *folder)
{
	char conf[PATH_MAX + 2];
	struct stat st;
	int top;

	if (fchdir(root_fd) < 0 || chroot(".") < 0 || chdir("/") < 0)
		die("chroot into the container: %s", strerror(errno));
	drop_privileges();
	if (stat(folder, &st) < 0 || !S_ISDIR(st.st_mode))
		die("%s is not in the container: the runtime did not make the CDI spec's mounts before this hook",
		    folder);
	if (mkdir("/etc", 0755) < 0 && errno != EEXIST)
		die("mkdir /etc: %s", strerror(errno));
	if (mkdir(CONF_DIR, 0755) < 0 && errno != EEXIST)
		die("mkdir %s: %s", CONF_DIR, strerror(errno));
	snprintf(conf, sizeof(conf), "%s\n", folder);
	write_file(CONF_FILE, conf);
	top = top_conf_state();
	if (top == 1)
		write_file(TOP_CONF, "include " CONF_DIR "/*.conf\n");
	/* An ld.so.conf that does not read ld.so.conf.d: FOLDER on the command line. */
	char name[] = "ldconfig", no_links[] = "-X";
	char *args[] = {name, no_links, top < 0 ? (char *)folder : NULL, NULL};
	char *env[] = {NULL};
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execveat(ldconfig_fd, "", args, env, AT_EMPTY_PATH);
	die("run ldconfig: %s", strerror(errno));
}

/*
 * Waits for PID until TIMEOUT_S seconds have passed (SIGCHLD blocked in BLOCKED), then
 * kills it. Returns its wait status.
 */
static int wait_deadline(pid_t pid, const sigset_t *blocked, unsigned timeout_s)
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
	die("ldconfig did not finish within %u s, killed: the image's ld configuration names a file that blocks or never ends (a FIFO, a device); the container's ld cache is not updated",
	    timeout_s);
}

static int update_ldcache(const char *folder, unsigned timeout_s)
{
	int root_fd = open_container_root(), ldconfig_fd, status;
	char self[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 16);
	pid_t pid, hook = getpid();
	sigset_t chld;

	if (n < 0 || !(self[n] = '\0', slash = strrchr(self, '/')))
		die("where am I: %s", strerror(errno));
	strcpy(slash + 1, "ldconfig");
	ldconfig_fd = open(self, O_RDONLY | O_CLOEXEC);
	if (ldconfig_fd < 0)
		die("%s: %s (it is shipped beside the hook)", self, strerror(errno));
	/* Blocked before the fork, so that the child's end cannot be missed. */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		die_status = CHILD_SETUP_FAILED;
		limit_child(hook, timeout_s);
		run_child(root_fd, ldconfig_fd, folder);
	}
	status = wait_deadline(pid, &chld, timeout_s);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == CHILD_SETUP_FAILED)
		return 1; /* the child said why */
	if (WIFEXITED(status))
		die("ldconfig failed with exit status %d (its message above): the container's ld cache is not updated",
		    WEXITSTATUS(status));
	if (WTERMSIG(status) == SIGXCPU)
		die("ldconfig ran past its CPU time limit (%u s), killed: the image's ld configuration names a file that never ends (a device); the container's ld cache is not updated",
		    timeout_s);
	die("ldconfig was killed by signal %d: the container's ld cache is not updated",
	    WTERMSIG(status));
}

/* SECONDS for --timeout: 1 to LDCONFIG_MAX_TIMEOUT_S. Returns it, or 0. */
static unsigned parse_timeout(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	return errno == 0 && end != s && !*end && s[0] != '-' && v >= 1 &&
			       v <= LDCONFIG_MAX_TIMEOUT_S
		       ? (unsigned)v
		       : 0;
}

int main(int argc, char **argv)
{
	unsigned timeout_s = LDCONFIG_TIMEOUT_S;

	if (argc == 6 && strcmp(argv[4], "--timeout") == 0)
		timeout_s = parse_timeout(argv[5]);
	if ((argc == 4 || argc == 6) && timeout_s && strcmp(argv[1], "update-ldcache") == 0 &&
	    strcmp(argv[2], "--folder") == 0 && argv[3][0] == '/')
		return update_ldcache(argv[3], timeout_s);
	fprintf(stderr,
		"usage: nvidia-cdi-hook update-ldcache --folder ABSOLUTE-DIR [--timeout SECONDS (1-600, default 20)]  (a createContainer hook: the container's state on stdin)\n");
	return 2;
}
