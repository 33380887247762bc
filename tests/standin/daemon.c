// SPDX-License-Identifier: Apache-2.0
/*
 * A stand-in for NVIDIA's daemons, for the node agent's tests: nvidia-persistenced, and
 * built with -DSTANDIN_FABRIC nv-fabricmanager. It starts as the real ones do (the first
 * process forks the daemon and exits 0; the daemon makes its own session) and holds the
 * driver open as they do, in the fake kernel's terms: a /proc/PID/fd link to
 * /dev/nvidiactl under $STANDIN_ROOT, which the installer's idle check reads. It records
 * each start (its pid and arguments) and each stop (the signal) in $STANDIN_DAEMON_LOG,
 * and on SIGTERM or SIGINT lets go and exits 0. STANDIN_DAEMON_FAIL=start: the first
 * process exits 1 (a daemon that cannot start). The Fabric Manager trains the NVLink
 * fabric: it writes "trained" to $STANDIN_ROOT/run/nvidia-fabricmanager/standin-fabric,
 * which the stand-in libcuda reads (802 until then), and "stopped" when it stops.
 * --version prints what the real ones print, for -DSTANDIN_VERSION.
 */
#include <fcntl.h>

#ifndef STANDIN_VERSION
#define STANDIN_VERSION "0.0"
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char proc_dir[4096];
static volatile sig_atomic_t stop;

#ifdef STANDIN_FABRIC
#define NAME "nv-fabricmanager"
#else
#define NAME "nvidia-persistenced"
#endif

/* A line of the log: "EVENT NAME pid=PID WHAT". */
static void record(const char *fmt, const char *what, int pid)
{
	const char *log = getenv("STANDIN_DAEMON_LOG");
	char line[8192];
	int fd, n;

	if (!log)
		return;
	n = snprintf(line, sizeof(line), fmt, NAME, pid, what);
	fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0 && n > 0) {
		if (write(fd, line, (size_t)n) < 0)
			perror("stand-in: log");
		close(fd);
	}
}

#ifdef STANDIN_FABRIC
#define COMM "nv-fabricmanage"
#else
#define COMM "nvidia-persiste"
#endif

/* The fabric's state, for the stand-in libcuda. */
static void fabric(const char *state)
{
#ifdef STANDIN_FABRIC
	const char *root = getenv("STANDIN_ROOT");
	char path[4200];
	FILE *f;

	if (!root)
		return;
	snprintf(path, sizeof(path), "%s/run/nvidia-fabricmanager", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/run/nvidia-fabricmanager/standin-fabric", root);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "%s\n", state);
		fclose(f);
	}
#else
	(void)state;
#endif
}

/* /proc/PID/fd/3 -> /dev/nvidiactl and /proc/PID/comm under the fake root. */
static void hold_driver(int pid)
{
	const char *root = getenv("STANDIN_ROOT");
	char path[4200];
	FILE *f;

	if (!root)
		return;
	snprintf(proc_dir, sizeof(proc_dir), "%s/proc/%d", root, pid);
	snprintf(path, sizeof(path), "%s/fd", proc_dir);
	mkdir(proc_dir, 0755);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/fd/3", proc_dir);
	if (symlink("/dev/nvidiactl", path) < 0)
		perror("stand-in: hold");
	snprintf(path, sizeof(path), "%s/comm", proc_dir);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "%s\n", COMM);
		fclose(f);
	}
}

static void let_go(void)
{
	char path[4200];

	if (!proc_dir[0])
		return;
	snprintf(path, sizeof(path), "%s/fd/3", proc_dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/comm", proc_dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/fd", proc_dir);
	rmdir(path);
	rmdir(proc_dir);
}

static void on_signal(int sig)
{
	stop = sig;
}

int main(int argc, char **argv)
{
	char args[4096] = "";
	const char *fail = getenv("STANDIN_DAEMON_FAIL");
	sigset_t none, term;
	pid_t pid;

	for (int i = 1; i < argc; i++)
		snprintf(args + strlen(args), sizeof(args) - strlen(args), "%s%s", i > 1 ? " " : "",
			 argv[i]);
	/* What the real ones print (STANDIN_VERSION: the version it stands for). */
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
#ifdef STANDIN_FABRIC
		printf("Fabric Manager version is : %s\n", STANDIN_VERSION);
#else
		printf("nvidia-persistenced:  version %s\n", STANDIN_VERSION);
#endif
		return 0;
	}
	if (fail && strcmp(fail, "start") == 0) {
		record("fail %s pid=%d args=%s\n", args, getpid());
		return 1;
	}
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid > 0)
		return 0;
	setsid();
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	/* Blocked but while waiting: no signal falls between the check and the wait. */
	sigemptyset(&none);
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigaddset(&term, SIGINT);
	sigprocmask(SIG_SETMASK, &term, NULL);
	hold_driver(getpid());
	fabric("trained");
	record("start %s pid=%d args=%s\n", args, getpid());
	while (!stop)
		sigsuspend(&none);
	fabric("stopped");
	let_go();
	record("stop %s pid=%d signal=%s\n", stop == SIGTERM ? "TERM" : "INT", getpid());
	return 0;
}
