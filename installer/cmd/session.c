// SPDX-License-Identifier: Apache-2.0
/* What every command shares: the host root, the kernel release, the lock (cmd.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "cmd/session.h"
#include "stage/stage.h"
#include "host/host.h"
#include "util/fs.h"
#include "util/interrupt.h"
#include "util/jsonfile.h"
#include "util/log.h"
#include "util/str.h"

#define LOCK_PATH "/run/nvidia-driver-installer.lock"

int session_open_root(const struct config *c, struct err *e)
{
	int fd = open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		err_errno(e, EXIT_USAGE, errno, "host root '%s'", c->root);
		err_hint(
			e,
			"mount the host's / into the container and pass it as --root (ROOT_MOUNT_DIR)");
	}
	return fd;
}

int session_check_container(const struct config *c, const char *name, enum session_host use,
			    struct err *e)
{
	struct runenv_vars vars = {.container = c->env_container,
				   .k8s_service_host = c->env_k8s_service_host};
	char signal[128];

	if (use == SESSION_HOST_NONE || c->root_given ||
	    !runenv_in_container("", &vars, signal, sizeof(signal)))
		return 0;
	if (use == SESSION_HOST_READS) {
		log_kv(LOG_WARN, name,
		       "running in a container without --root: what is shown is the container's, not the host's",
		       "signal", signal, "fix",
		       "mount the host's / and pass it as --root (ROOT_MOUNT_DIR)", LOG_END);
		return 0;
	}
	err_set(e, EXIT_USAGE,
		"running in a container (%s seen) without --root: this would change the container, not the host",
		signal);
	err_hint(
		e,
		"mount the host's / and pass it as --root (ROOT_MOUNT_DIR); --root / if this container's / is the host's");
	return -1;
}

const char *session_release(const struct config *c, struct utsname *u)
{
	if (c->kernel_release)
		return c->kernel_release;
	uname(u);
	return u->release;
}

/*
 * The installer's own processes, which no idle check counts as users of the driver:
 * this one (it runs no daemon of its own; one that it starts joins this list).
 */
static pid_t self;

/*
 * The connection that holds the node agent's daemons stopped (agent/control.h), open for
 * the rest of the run: the kernel closes it when the run ends, however it ends, and the
 * agent then starts them again.
 */
static int agent_hold_fd = -1;

/* kernel_opts.before_idle_check: the agent's daemons stop before the driver is judged idle. */
static int hold_agent_daemons(void *arg, struct err *e)
{
	const struct config *c = arg;
	_cleanup_close_ int root_fd = -1;
	unsigned stopped;
	int fd;

	if (agent_hold_fd >= 0)
		return 0;
	root_fd = session_open_root(c, e);
	if (root_fd < 0)
		return -1;
	fd = control_hold(root_fd, "the installer checks that the driver is idle", &stopped, e);
	if (fd == -2)
		return 0;
	if (fd < 0)
		return err_wrap(e, "kernel");
	agent_hold_fd = fd;
	log_kv(LOG_INFO, "kernel", "the node agent's daemons are stopped for this run",
	       U64("stopped", stopped), LOG_END);
	return 0;
}

enum kernel_rdma session_rdma(const struct config *c)
{
	enum kernel_rdma m = KERNEL_RDMA_OFF;

	/* config_check refused any other word. */
	if (c->rdma && kernel_rdma_parse(c->rdma, &m) < 0)
		m = KERNEL_RDMA_OFF;
	return m;
}

struct kernel_opts session_kernel_opts(const struct config *c)
{
	self = getpid();
	return (struct kernel_opts){.module_certs = c->module_certs.v,
				    .n_module_certs = c->module_certs.n,
				    .modules = c->modules.v,
				    .n_modules = c->modules.n,
				    .module_args = c->module_args.v,
				    .n_module_args = c->module_args.n,
				    .keyring_cert = c->kernel_keyring_cert,
				    .no_unload_conflicts = c->no_unload_conflicts,
				    .imex_channel0 = c->imex_channel0,
				    .rdma = session_rdma(c),
				    .install_dir = c->install_dir,
				    .defer_busy =
					    c->when_busy && strcmp(c->when_busy, "defer") == 0,
				    .own_pids = &self,
				    .n_own_pids = 1,
				    .before_idle_check = hold_agent_daemons,
				    .before_idle_arg = (void *)c};
}

/*
 * What --driver-capabilities asks of the chosen package: it serves each (the index's
 * packages[].capabilities), else a refusal naming the build that would (EXIT_NO_MATCH:
 * no package fits this node pool).
 */
int session_check_capabilities(const struct config *c, const struct repo_choice *ch,
			       const struct host *h, struct err *e)
{
	unsigned asked = REPO_CAP_DEFAULT;
	char want[64], has[64];

	/* config_validate refused a bad list before any command ran; said again, with its fix. */
	if (c->driver_capabilities && repo_caps_parse(c->driver_capabilities, &asked) < 0) {
		err_set(e, EXIT_USAGE,
			"--driver-capabilities '%s' is not a comma list of compute, utility, video, graphics or all",
			c->driver_capabilities);
		err_hint(
			e,
			"set NVIDIA_INSTALLER_DRIVER_CAPABILITIES to words joined by commas, e.g. compute,utility,graphics");
		return -1;
	}
	if ((ch->pkg->capabilities & asked) == asked)
		return 0;
	err_set(e, EXIT_NO_MATCH,
		"driver %s's package for kernel %s serves %s; --driver-capabilities asks %s",
		ch->driver->version, h->kernel,
		repo_caps_text(ch->pkg->capabilities, has, sizeof(has)),
		repo_caps_text(asked, want, sizeof(want)));
	err_hint(
		e,
		"publish a package built with build-driver-package --capabilities %s, or ask for %s only (NVIDIA_INSTALLER_DRIVER_CAPABILITIES)",
		want, has);
	return -1;
}

/*
 * What --modules asks of GDRCopy and GPUDirect Storage: the chosen package carries gdrdrv
 * and nvidia-fs only where built with --gdrcopy / --gds (the index's packages[].gpudirect);
 * one asked of a package without it is refused here, before the download, not after it.
 */
int session_check_gpudirect(const struct config *c, const struct repo_choice *ch,
			    const struct host *h, struct err *e)
{
	static const struct {
		const char *module, *alt, *option;
		unsigned bit;
	} gd[] = {{"gdrdrv", "gdrdrv", "--gdrcopy", REPO_GPUDIRECT_GDRCOPY},
		  {"nvidia-fs", "nvidia_fs", "--gds", REPO_GPUDIRECT_GDS}};

	for (size_t i = 0; i < c->modules.n; i++) {
		for (size_t j = 0; j < ARRAY_SIZE(gd); j++) {
			if ((strcmp(c->modules.v[i], gd[j].module) != 0 &&
			     strcmp(c->modules.v[i], gd[j].alt) != 0) ||
			    (ch->pkg->gpudirect & gd[j].bit))
				continue;
			err_set(e, EXIT_NO_MATCH,
				"driver %s's package for kernel %s has no %s.ko; --modules asks for it",
				ch->driver->version, h->kernel, gd[j].module);
			err_hint(
				e,
				"publish a package built with build-driver-package %s, or leave %s "
				"out of --modules",
				gd[j].option, gd[j].module);
			return -1;
		}
	}
	return 0;
}

unsigned session_capabilities(const struct config *c)
{
	unsigned caps = REPO_CAP_DEFAULT;

	/* config_validate refused a bad list before a command ran. */
	if (c->driver_capabilities && repo_caps_parse(c->driver_capabilities, &caps) < 0)
		caps = REPO_CAP_DEFAULT;
	return caps;
}

struct expose_opts session_expose_opts(const struct config *c)
{
	return (struct expose_opts){.root = c->root,
				    .install_dir = c->install_dir,
				    .container_dir = c->container_dir,
				    .host_mounts = c->host_mounts.v,
				    .n_host_mounts = c->host_mounts.n,
				    .cdi_dir = c->cdi_dir,
				    .cdi_kind = c->cdi_kind,
				    .cdi_replace = c->cdi_replace,
				    .mig_layout = c->mig_layout,
				    .defer_busy =
					    c->when_busy && strcmp(c->when_busy, "defer") == 0,
				    .before_busy_check = hold_agent_daemons,
				    .before_busy_arg = (void *)c,
				    .skip_verify = c->skip_verify};
}

struct source_opts session_source_opts(const struct config *c)
{
	enum source_gce gce = SOURCE_GCE_AUTO;

	/* config_validate refused any other value before a command ran. */
	if (c->registry_gce && source_gce_parse(c->registry_gce, &gce) < 0)
		gce = SOURCE_GCE_AUTO;
	return (struct source_opts){.mirrors = c->repos.v,
				    .n_mirrors = c->repos.n,
				    .keys = c->repo_keys.v,
				    .n_keys = c->repo_keys.n,
				    .fetch = {.timeout_s = c->fetch_timeout_s,
					      .retries = c->fetch_retries,
					      .low_speed_bytes = c->speed_floor_bytes,
					      .low_speed_s = c->speed_floor_s,
					      .ca_file = c->ca_file},
				    .allow_rollback = c->allow_index_rollback,
				    .index_max_age_s = c->index_max_age_s == INDEX_MAX_AGE_REPO
							       ? SOURCE_MAX_AGE_REPO
							       : c->index_max_age_s,
				    .registry = {.auth_files = c->registry_auth.v,
						 .n_auth_files = c->registry_auth.n,
						 .hosts_dir = c->registry_hosts,
						 .gce = gce}};
}

struct hostpath_opts session_hostpath_opts(const struct config *c)
{
	return (struct hostpath_opts){.install_dir = c->install_dir,
				      .cache_dir = c->cache_dir,
				      .cdi_dir = c->cdi_dir,
				      .host_mounts = c->host_mounts.v,
				      .n_host_mounts = c->host_mounts.n,
				      .metrics_file = c->metrics_file,
				      .metrics_mark = METRICS_MARK};
}

struct nodestate_opts session_nodestate_opts(const struct config *c)
{
	return (struct nodestate_opts){.kernel_release = c->kernel_release,
				       .install_dir = c->install_dir,
				       .cdi_dir = c->cdi_dir,
				       .cdi_kind = c->cdi_kind};
}

/*
 * Opens the lock file, never through a link planted at its name: such a link is
 * removed and the file made anew.
 */
static int lock_open(int root_fd, struct err *e)
{
	int fd = fs_open_in_root(root_fd, LOCK_PATH, O_RDWR | O_CREAT, 0644,
				 FS_MKDIRS | FS_NOFOLLOW_LAST, e);
	_cleanup_close_ int dfd = -1;
	char dir[sizeof(LOCK_PATH)];
	const char *base = strrchr(LOCK_PATH, '/') + 1;

	if (fd >= 0 || err_errnum(e) != ELOOP)
		return fd;
	snprintf(dir, sizeof(dir), "%.*s", (int)(base - LOCK_PATH), LOCK_PATH);
	dfd = fs_dir_in_root(root_fd, dir, false, e);
	if (dfd < 0)
		return -1;
	if (unlinkat(dfd, base, 0) < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "remove the link at '%s'", LOCK_PATH);
	log_kv(LOG_WARN, "lock", "a link planted at the lock's name was removed, not followed",
	       "lock", LOCK_PATH, LOG_END);
	err_clear(e);
	return fs_open_in_root(root_fd, LOCK_PATH, O_RDWR | O_CREAT, 0644,
			       FS_MKDIRS | FS_NOFOLLOW_LAST, e);
}

bool session_installer_running(int root_fd)
{
	struct err e;
	_cleanup_close_ int fd =
		fs_open_in_root(root_fd, LOCK_PATH, O_RDONLY | O_CLOEXEC, 0, FS_NOFOLLOW_LAST, &e);

	/* A shared lock is refused while a run holds its exclusive one; ours goes at once. */
	if (fd < 0 || flock(fd, LOCK_SH | LOCK_NB) == 0)
		return false;
	return errno == EWOULDBLOCK;
}

int session_lock_shared(int root_fd)
{
	struct err e;
	int fd = fs_open_in_root(root_fd, LOCK_PATH, O_RDONLY | O_CLOEXEC, 0, FS_NOFOLLOW_LAST, &e);

	/* No lock file: no run has ever held it (a run makes it before it locks it). */
	if (fd < 0)
		return e.sys_errno == ENOENT ? open("/dev/null", O_RDONLY | O_CLOEXEC) : -1;
	if (flock(fd, LOCK_SH | LOCK_NB) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Waits for the lock on FD, or for SIGTERM or SIGINT (util/interrupt.h). Returns 0 or -1. */
static int lock_wait(int fd, struct err *e)
{
	int r = -1, errnum = 0;

	interrupt_wakes(true);
	while (!interrupt_signal()) {
		r = flock(fd, LOCK_EX);
		errnum = errno;
		if (r == 0 || errnum != EINTR)
			break;
	}
	interrupt_wakes(false);
	if (r == 0)
		return 0;
	if (interrupt_check(e, "the other installer released the lock") < 0)
		return err_wrap(e, "lock");
	return err_errno(e, EXIT_UNEXPECTED, errnum, "lock '%s'", LOCK_PATH);
}

int session_lock(int root_fd, struct err *e)
{
	int fd = lock_open(root_fd, e);

	if (fd < 0)
		return err_wrap(e, "lock");
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK) {
			close(fd);
			return err_errno(e, EXIT_UNEXPECTED, errno, "lock '%s'", LOCK_PATH);
		}
		log_kv(LOG_INFO, "lock", "another installer is running; waiting for it", "lock",
		       LOCK_PATH, LOG_END);
		if (lock_wait(fd, e) < 0) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

int session_lock_try(int root_fd, struct err *e)
{
	int fd = lock_open(root_fd, e), errnum;

	if (fd < 0)
		return err_wrap(e, "lock");
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		errnum = errno;
		close(fd);
		return err_errno(e, EXIT_UNEXPECTED, errnum, "lock '%s'", LOCK_PATH);
	}
	return fd;
}

enum repo_kmt_policy session_kmt_policy(const struct config *c)
{
	enum repo_kmt_policy p = REPO_KMT_AUTO;

	if (c->kernel_module_type && repo_kmt_policy_parse(c->kernel_module_type, &p) < 0)
		p = REPO_KMT_AUTO;
	return p;
}

void session_print_json(json_object *o)
{
	_cleanup_free_ char *text = jsonfile_text(o);

	if (text)
		puts(text);
	else
		log_msg(LOG_ERROR, "json", "out of memory printing the document");
}

json_object *session_json_string(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

json_object *session_json_nonempty(const char *s)
{
	return s && *s ? json_object_new_string(s) : NULL;
}

int session_pending(const struct config *c, int root_fd, struct pending *ret)
{
	_cleanup_(publish_freep) struct installdir *dir = NULL;
	struct err e;

	err_clear(&e);
	if (publish_open(root_fd, c->install_dir, false, &dir, &e) != 0)
		return 0;
	return pending_read(publish_fd(dir), ret, &e) == 0;
}

json_object *session_pending_json(const struct pending *p)
{
	json_object *o;

	if (!p)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "driver_version", json_object_new_string(p->driver_version));
	json_object_object_add(o, "module_type", session_json_nonempty(p->module_type));
	json_object_object_add(o, "reason", json_object_new_string(p->reason));
	json_object_object_add(o, "waiting_for", json_object_new_string(p->waiting_for));
	json_object_object_add(o, "since", session_json_nonempty(p->since));
	json_object_object_add(o, "requested", session_json_nonempty(p->requested));
	json_object_object_add(o, "module_args", session_json_nonempty(p->module_args));
	json_object_object_add(o, "mig_layout", session_json_nonempty(p->mig_layout));
	json_object_object_add(o, "staged_id", json_object_new_string(p->id));
	return o;
}

void session_pending_text(const struct pending *p, char *buf, size_t size)
{
	str_fmt_cut(buf, size, "%s%s%s%s: %s since %s (%s)", p->driver_version,
		    p->module_type[0] ? " (" : "", p->module_type,
		    p->module_type[0] ? " modules)" : "",
		    strcmp(p->reason, PENDING_MODULE_ARGS) == 0
			    ? "new module parameters wait for idle GPUs or the next boot"
		    : strcmp(p->reason, PENDING_MIG_LAYOUT) == 0
			    ? "the GPU layout asked for waits for idle GPUs"
			    : "staged and verified, waits for idle GPUs or the next boot",
		    p->since[0] ? p->since : "?", p->waiting_for);
}

int session_waiting(const struct config *c, int root_fd, struct waiting *ret)
{
	_cleanup_(publish_freep) struct installdir *dir = NULL;
	struct err e;

	err_clear(&e);
	if (publish_open(root_fd, c->install_dir, false, &dir, &e) != 0)
		return 0;
	return waiting_read(publish_fd(dir), ret, &e) == 0;
}

/* A wait's next check this far past: the installer that waited is gone (killed, stopped). */
#define WAITING_STALE_S 60

void session_waiting_text(const struct waiting *w, char *buf, size_t size)
{
	char since[STR_UTC_SIZE], last[STR_UTC_SIZE], next[STR_UTC_SIZE];
	bool stale = (int64_t)time(NULL) > w->next_check + WAITING_STALE_S;

	(void)waiting_time_format(w->since, since);
	(void)waiting_time_format(w->last_check, last);
	(void)waiting_time_format(w->next_check, next);
	str_fmt_cut(
		buf, size,
		"waiting for the repository to serve kernel %s (driver %s, %s) since %s; last check %s, next %s%s",
		w->kernel, w->driver_version, w->flavour, since, last, next,
		stale ? " (overdue: the waiting installer seems to have stopped)" : "");
}
