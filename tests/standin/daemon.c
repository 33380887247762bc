// SPDX-License-Identifier: Apache-2.0
/*
 * A stand-in for NVIDIA's daemons, for the node agent's tests: nvidia-persistenced, built
 * with -DSTANDIN_FABRIC nv-fabricmanager, with -DSTANDIN_NVLSM nvlsm. It starts as the real
 * ones do (the first process forks the daemon and exits 0; the daemon makes its own
 * session; NVLSM runs in the foreground) and holds the driver open as they do, in the fake
 * kernel's terms: a /proc/PID/fd link to /dev/nvidiactl under $STANDIN_ROOT, which the
 * installer's idle check reads (NVLSM holds none: it reaches the switches through
 * InfiniBand). It records each start (its pid and arguments) and each stop (the signal)
 * in $STANDIN_DAEMON_LOG, and on SIGTERM or SIGINT lets go and exits 0.
 * STANDIN_DAEMON_FAIL=start: the first process exits 1 (a daemon that cannot start). The
 * Fabric Manager trains the NVLink fabric: it writes "trained" to
 * $STANDIN_ROOT/run/nvidia-fabricmanager/standin-fabric, which the stand-in libcuda reads
 * (802 until then), and "stopped" when it stops. On NVLink 5 (-g GUID) it trains it only
 * through a running NVLSM of that GUID, as the real one: without, it exits 1. NVLSM writes
 * its GUID to .../standin-nvlsm while it runs, and makes the FM-SM socket
 * .../fm_sm_ipc.socket anew (STANDIN_NVLSM_SOCKET_MS later, when set). --version prints
 * what the real ones print, for -DSTANDIN_VERSION.
 * With -DSTANDIN_MPS it is nvidia-cuda-mps-control: -f runs the control daemon in the
 * foreground, which holds the driver and makes its control socket and pid file in
 * $CUDA_MPS_PIPE_DIRECTORY (NVIDIA's names) and control.log in $CUDA_MPS_LOG_DIRECTORY;
 * without -d or -f it is a client, as GKE's device plugin runs it to ask whether MPS
 * serves: it reads a command on stdin, answers get_default_active_thread_percentage with
 * "100.0" when the control socket takes a connection, and exits 1 when none does.
 */
#include <fcntl.h>

#ifndef STANDIN_VERSION
#define STANDIN_VERSION "0.0"
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static char proc_dir[4096];
static volatile sig_atomic_t stop;

#if defined(STANDIN_MPS)
#define NAME "nvidia-cuda-mps-control"
#elif defined(STANDIN_NVLSM)
#define NAME "nvlsm"
#elif defined(STANDIN_FABRIC)
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

#if defined(STANDIN_FABRIC)
#define COMM "nv-fabricmanage"
#elif defined(STANDIN_MPS)
#define COMM "nvidia-cuda-mps"
#else
#define COMM "nvidia-persiste"
#endif

/* $STANDIN_ROOT/run/nvidia-fabricmanager/NAME into BUF (made), or NULL without a root. */
static const char *fm_file(const char *name, char *buf, size_t size)
{
	const char *root = getenv("STANDIN_ROOT");

	if (!root)
		return NULL;
	snprintf(buf, size, "%s/run/nvidia-fabricmanager", root);
	mkdir(buf, 0755);
	snprintf(buf, size, "%s/run/nvidia-fabricmanager/%s", root, name);
	return buf;
}

/* The value after OPTION in ARGV, or NULL. */
static const char *option(int argc, char **argv, const char *opt)
{
	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], opt) == 0)
			return argv[i + 1];
	return NULL;
}

/* Whether a stand-in NVLSM runs with GUID: the file it keeps while it runs says so. */
static int nvlsm_serves(const char *guid)
{
	char path[4200], line[64] = "";
	FILE *f;

	if (!fm_file("standin-nvlsm", path, sizeof(path)) || !(f = fopen(path, "r")))
		return 0;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	line[strcspn(line, "\n")] = '\0';
	return strcmp(line, guid) == 0;
}

/* NVLSM's own files: its GUID and the FM-SM socket while it runs; none once it stops. */
static void nvlsm_files(const char *guid)
{
#ifdef STANDIN_NVLSM
	char path[4200];
	FILE *f;

	if (!fm_file("standin-nvlsm", path, sizeof(path)))
		return;
	if (!guid) {
		unlink(path);
		fm_file("fm_sm_ipc.socket", path, sizeof(path));
		unlink(path);
		return;
	}
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "%s\n", guid);
		fclose(f);
	}
	/* STANDIN_NVLSM_SOCKET_MS: as long an NVLSM that takes time to serve. */
	if (getenv("STANDIN_NVLSM_SOCKET_MS"))
		usleep((useconds_t)atoi(getenv("STANDIN_NVLSM_SOCKET_MS")) * 1000u);
	/* Made anew, as a bind makes it: one a killed NVLSM left is another file. */
	fm_file("fm_sm_ipc.socket", path, sizeof(path));
	unlink(path);
	f = fopen(path, "w");
	if (f)
		fclose(f);
#else
	(void)guid;
#endif
}

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

/* $CUDA_MPS_PIPE_DIRECTORY/NAME into BUF (MPS's default without it). */
static const char *mps_path(const char *name, char *buf, size_t size)
{
	const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY");

	snprintf(buf, size, "%s/%s", dir && *dir ? dir : "/tmp/nvidia-mps", name);
	return buf;
}

/* The control daemon's files while it runs (UP), gone once it stops; its socket's fd. */
static int mps_files(int up, int sock)
{
#ifdef STANDIN_MPS
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *logdir = getenv("CUDA_MPS_LOG_DIRECTORY");
	char path[4200];
	FILE *f;

	mps_path("control", sa.sun_path, sizeof(sa.sun_path));
	if (!up) {
		unlink(sa.sun_path);
		unlink(mps_path("nvidia-cuda-mps-control.pid", path, sizeof(path)));
		if (sock >= 0)
			close(sock);
		return -1;
	}
	unlink(sa.sun_path);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0 || bind(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(sock, 8) < 0)
		perror("stand-in: control socket");
	f = fopen(mps_path("nvidia-cuda-mps-control.pid", path, sizeof(path)), "w");
	if (f) {
		fprintf(f, "%d\n", getpid());
		fclose(f);
	}
	if (logdir && *logdir) {
		snprintf(path, sizeof(path), "%s/control.log", logdir);
		f = fopen(path, "a");
		if (f) {
			fprintf(f, "[stand-in] Starting control daemon on socket %s\n", sa.sun_path);
			fclose(f);
		}
	}
	return sock;
#else
	(void)up;
	(void)mps_path;
	return sock;
#endif
}

/* A client of the control daemon: one command from stdin, answered if the daemon serves. */
static int mps_client(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char cmd[256] = "";
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	mps_path("control", sa.sun_path, sizeof(sa.sun_path));
	if (!fgets(cmd, sizeof(cmd), stdin))
		cmd[0] = '\0';
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "Cannot find MPS control daemon process\n");
		return 1;
	}
	close(fd);
	if (strncmp(cmd, "get_default_active_thread_percentage", 36) == 0)
		printf("100.0\n");
	return 0;
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
	int sock = -1;
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
#ifdef STANDIN_MPS
	if (argc < 2 || (strcmp(argv[1], "-f") != 0 && strcmp(argv[1], "-d") != 0))
		return mps_client();
#else
	(void)mps_client;
#endif
	if (fail && strcmp(fail, "start") == 0) {
		record("fail %s pid=%d args=%s\n", args, getpid());
		return 1;
	}
#ifdef STANDIN_FABRIC
	/* NVLink 5: no fabric without NVLSM on the same port (NV_WARN_NOTHING_TO_DO). */
	if (option(argc, argv, "-g") && !nvlsm_serves(option(argc, argv, "-g"))) {
		record("fail %s pid=%d args=%s\n", args, getpid());
		return 1;
	}
#else
	(void)nvlsm_serves;
#endif
#if !defined(STANDIN_NVLSM) && !defined(STANDIN_MPS)
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid > 0)
		return 0;
	setsid();
#else
	(void)pid;
#endif
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	/* Blocked but while waiting: no signal falls between the check and the wait. */
	sigemptyset(&none);
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigaddset(&term, SIGINT);
	sigprocmask(SIG_SETMASK, &term, NULL);
#ifdef STANDIN_NVLSM
	(void)hold_driver;
#else
	hold_driver(getpid());
#endif
	fabric("trained");
	nvlsm_files(option(argc, argv, "--guid"));
	sock = mps_files(1, sock);
	record("start %s pid=%d args=%s\n", args, getpid());
	while (!stop)
		sigsuspend(&none);
	fabric("stopped");
	nvlsm_files(NULL);
	mps_files(0, sock);
	let_go();
	record("stop %s pid=%d signal=%s\n", stop == SIGTERM ? "TERM" : "INT", getpid());
	return 0;
}
