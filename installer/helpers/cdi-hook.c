// SPDX-License-Identifier: Apache-2.0
/*
 * nvidia-cdi-hook: the createContainer hook our CDI spec names. The runtime runs
 * it on the host, with the container's state (OCI runtime spec, "State") on
 * stdin, after the container's mounts are made and before it pivots into its
 * root; it adds FOLDER (the driver's lib64 as the container sees it) to the
 * container's ld cache, so that dlopen("libcuda.so.1") works without touching
 * the workload's LD_LIBRARY_PATH.
 *
 *   nvidia-cdi-hook update-ldcache --folder /usr/local/nvidia/lib64
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
 * Exit status: 0 done; 2 usage; 1 anything else, with one line on stderr naming
 * it (the runtime then refuses to start the container): the state or the root
 * cannot be read, FOLDER is not in the container (the runtime made the spec's
 * mounts in another namespace), the cache cannot be written.
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
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define CONF_DIR "/etc/ld.so.conf.d"
#define CONF_FILE CONF_DIR "/00-nvidia-driver.conf"
#define TOP_CONF "/etc/ld.so.conf"
#define MAX_JSON (4u << 20)

static _Noreturn void die(const char *fmt, ...)
{
	va_list ap;

	fputs("nvidia-cdi-hook: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
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

/* Whether the image's ld.so.conf includes ld.so.conf.d (0), or there is none (1), or not (-1). */
static int top_conf_state(void)
{
	int fd = open(TOP_CONF, O_RDONLY | O_CLOEXEC);
	char *text = fd >= 0 ? read_all(fd, 1 << 20) : NULL;
	int r = -1;

	if (fd < 0)
		return errno == ENOENT ? 1 : -1;
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

static int update_ldcache(const char *folder)
{
	int root_fd = open_container_root(), ldconfig_fd, status;
	char self[PATH_MAX], *slash, conf[PATH_MAX + 2];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 16);
	pid_t pid;

	if (n < 0 || !(self[n] = '\0', slash = strrchr(self, '/')))
		die("where am I: %s", strerror(errno));
	strcpy(slash + 1, "ldconfig");
	ldconfig_fd = open(self, O_RDONLY | O_CLOEXEC);
	if (ldconfig_fd < 0)
		die("%s: %s (it is shipped beside the hook)", self, strerror(errno));
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
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

		execveat(ldconfig_fd, "", args, env, AT_EMPTY_PATH);
		die("run ldconfig: %s", strerror(errno));
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("wait: %s", strerror(errno));
	if (WIFEXITED(status))
		return WEXITSTATUS(status) == 0 ? 0 : 1;
	die("ldconfig was killed by signal %d", WTERMSIG(status));
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "update-ldcache") == 0 &&
	    strcmp(argv[2], "--folder") == 0 && argv[3][0] == '/')
		return update_ldcache(argv[3]);
	fprintf(stderr,
		"usage: nvidia-cdi-hook update-ldcache --folder ABSOLUTE-DIR  (a createContainer hook: the container's state on stdin)\n");
	return 2;
}
