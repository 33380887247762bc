// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/daemons.h"
#include "util/log.h"
#include "util/prom.h"

unsigned daemon_next_backoff(unsigned backoff_s, uint64_t up_s)
{
	if (up_s >= DAEMON_STABLE_S || backoff_s == 0)
		return 1;
	return backoff_s * 2 > DAEMON_BACKOFF_MAX_S ? DAEMON_BACKOFF_MAX_S : backoff_s * 2;
}

void daemon_describe_status(int status, char *buf, size_t size)
{
	if (WIFSIGNALED(status))
		snprintf(buf, size, "signal %d", WTERMSIG(status));
	else
		snprintf(buf, size, "exit %d", WEXITSTATUS(status));
}

_noreturn_ void daemon_exec_child(const char *path, const char *const *argv)
{
	sigset_t none;
	int null = open("/dev/null", O_RDONLY);

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		close(null);
	}
	execv(path, (char *const *)argv);
	fprintf(stderr, "%s: exec %s: %s\n", argv[0], path, strerror(errno));
	_exit(127);
}

/* The child of D: its name and arguments, exec'd from PATH. */
static _noreturn_ void exec_daemon(const struct daemon *d, const char *path)
{
	const char *argv[DAEMON_MAX_ARGS + 2] = {d->name};

	for (size_t i = 0; i < DAEMON_MAX_ARGS && d->args[i]; i++)
		argv[i + 1] = d->args[i];
	/* In the child only: the agent's own environment stays as it is. */
	for (size_t i = 0; i < ARRAY_SIZE(d->env) && d->env[i]; i++)
		putenv((char *)d->env[i]);
	daemon_exec_child(path, argv);
}

/* D's daemon is PID now: running, and said so. */
static void running(struct daemon *d, pid_t pid)
{
	d->state = DAEMON_RUNNING;
	d->pid = pid;
	d->launcher = 0;
	log_kv(LOG_INFO, "agent", "daemon running", "daemon", d->name, U64("pid", pid),
	       U64("restarts", d->restarts), LOG_END);
}

int daemon_start(struct daemon *d, const char *path, struct err *e)
{
	pid_t pid = fork();

	if (pid < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "agent: start %s", d->name);
	if (pid == 0)
		exec_daemon(d, path);
	if (d->starts++ > 0)
		d->restarts++;
	d->started_ns = now_ns();
	if (d->foreground) {
		/* The process started is the daemon. */
		running(d, pid);
		return 0;
	}
	d->state = DAEMON_STARTING;
	d->launcher = pid;
	d->pid = 0;
	return 0;
}

/* D ended (STATUS): backoff, and the next start. */
static void ended(struct daemon *d, int status)
{
	uint64_t up_s = (now_ns() - d->started_ns) / 1000000000ull;

	daemon_describe_status(status, d->last_end, sizeof(d->last_end));
	d->backoff_s = daemon_next_backoff(d->backoff_s, up_s);
	d->next_start_ns = now_ns() + (uint64_t)d->backoff_s * 1000000000ull;
	d->state = DAEMON_BACKOFF;
	d->launcher = d->pid = 0;
	log_kv(LOG_WARN, "agent", "daemon ended: starting it again after the backoff", "daemon",
	       d->name, "how", d->last_end, U64("up_s", up_s), U64("backoff_s", d->backoff_s),
	       U64("restarts", d->restarts), LOG_END);
}

bool daemon_reaped(struct daemon *d, pid_t pid, int status, pid_t new_child)
{
	if (d->state == DAEMON_STARTING && pid == d->launcher) {
		/* Forked into the background: the daemon is the child it left to us. */
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && new_child > 0) {
			running(d, new_child);
			return true;
		}
		ended(d, status);
		return true;
	}
	if (d->state == DAEMON_RUNNING && pid == d->pid) {
		ended(d, status);
		return true;
	}
	return false;
}

/* Waits up to TIMEOUT_MS for PID to end; returns true when it was reaped. */
static bool reap_within(pid_t pid, unsigned timeout_ms)
{
	for (unsigned waited = 0;; waited += 20) {
		pid_t r = waitpid(pid, NULL, WNOHANG);

		if (r == pid || (r < 0 && errno == ECHILD))
			return true;
		if (waited >= timeout_ms)
			return false;
		nanosleep(&(struct timespec){.tv_nsec = 20 * 1000000}, NULL);
	}
}

bool daemon_stop(struct daemon *d, unsigned timeout_s)
{
	pid_t pid = d->state == DAEMON_RUNNING	  ? d->pid
		    : d->state == DAEMON_STARTING ? d->launcher
						  : 0;
	bool forced = false;

	d->state = DAEMON_STOPPED;
	d->launcher = d->pid = 0;
	d->backoff_s = 0;
	if (pid <= 0)
		return false;
	kill(pid, SIGTERM);
	if (!reap_within(pid, timeout_s * 1000)) {
		forced = true;
		kill(pid, SIGKILL);
		reap_within(pid, 5000);
	}
	log_kv(forced ? LOG_WARN : LOG_INFO, "agent",
	       forced ? "daemon stopped: killed, SIGTERM was not enough" : "daemon stopped",
	       "daemon", d->name, U64("pid", pid), LOG_END);
	return true;
}

bool daemon_due(const struct daemon *d, uint64_t now)
{
	return d->state == DAEMON_STOPPED ||
	       (d->state == DAEMON_BACKOFF && now >= d->next_start_ns);
}

static const struct prom_family
	fam_up = {"nvidia_driver_installer_agent_daemon_up", PROM_GAUGE,
		  "Whether the agent's daemon runs (1), is being started (1), or not (0)."},
	fam_restarts = {
		"nvidia_driver_installer_agent_daemon_restarts_total", PROM_COUNTER,
		"Starts of the daemon after its first, since the agent started: after it ended, or after a hold."};

char *daemon_render(const struct daemon *const *ds, size_t n)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	if (!f)
		return NULL;
	prom_head(f, &fam_up);
	for (size_t i = 0; i < n; i++)
		prom_sample(f, &fam_up, &(struct prom_label){"daemon", ds[i]->name}, 1,
			    ds[i]->state == DAEMON_RUNNING || ds[i]->state == DAEMON_STARTING);
	prom_head(f, &fam_restarts);
	for (size_t i = 0; i < n; i++)
		prom_sample(f, &fam_restarts, &(struct prom_label){"daemon", ds[i]->name}, 1,
			    (double)ds[i]->restarts);
	if (fclose(f) != 0) {
		free(s);
		return NULL;
	}
	return s;
}

int daemon_parse_version(const char *text, char *buf, size_t size)
{
	for (const char *p = text; *p; p++) {
		size_t n = 0, dots = 0;

		if (!isdigit((unsigned char)*p) ||
		    (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '.')))
			continue;
		while (isdigit((unsigned char)p[n]) ||
		       (p[n] == '.' && isdigit((unsigned char)p[n + 1]) && ++dots))
			n++;
		if (dots == 0 || n >= size)
			continue;
		memcpy(buf, p, n);
		buf[n] = '\0';
		return 0;
	}
	return -1;
}

int daemon_version(const char *path, unsigned timeout_s, char *buf, size_t size)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_s * 1000000000ull;
	char out[4096];
	size_t len = 0;
	int pipefd[2];
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	if (pid == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		dup2(pipefd[1], STDOUT_FILENO);
		dup2(pipefd[1], STDERR_FILENO);
		execl(path, path, "--version", (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	while (len + 1 < sizeof(out)) {
		struct pollfd p = {.fd = pipefd[0], .events = POLLIN};
		uint64_t now = now_ns();
		ssize_t n;

		if (now >= deadline || poll(&p, 1, (int)((deadline - now) / 1000000) + 1) <= 0)
			break;
		n = read(pipefd[0], out + len, sizeof(out) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	out[len] = '\0';
	close(pipefd[0]);
	if (!reap_within(pid, 100)) {
		kill(pid, SIGKILL);
		reap_within(pid, 5000);
		return -1;
	}
	return daemon_parse_version(out, buf, size);
}

bool daemon_runs(pid_t pid, const char *name)
{
	char link[64], exe[PATH_MAX];
	ssize_t n;
	const char *base;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	/* An executable replaced since it started reads "PATH (deleted)". */
	if (n > 10 && strcmp(exe + n - 10, " (deleted)") == 0)
		exe[n - 10] = '\0';
	base = strrchr(exe, '/');
	return strcmp(base ? base + 1 : exe, name) == 0;
}
