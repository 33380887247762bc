// SPDX-License-Identifier: Apache-2.0
/*
 * ctr-exec ROOT CONTEXT PROGRAM [ARG...]: runs PROGRAM as a container engine's runtime
 * starts a container's process, as far as SELinux sees it: in a session of its own (no
 * controlling terminal, which the container's domain may not use: the kernel would take it
 * away and send SIGHUP), chrooted into ROOT, in CONTEXT (written to /proc/thread-self/
 * attr/exec, the way runc's label.SetProcessLabel does, before the exec). Waits for it
 * and exits with its status: 126 when the exec itself was refused, 128+N for signal N.
 *
 * Its descriptors are ours, which the container's domain may not use: the kernel replaces
 * them at the exec. The verdict is the exit status (tests/vm/test.sh, selinux).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int status, fd;
	pid_t pid;

	if (argc < 4) {
		fprintf(stderr, "usage: ctr-exec ROOT CONTEXT PROGRAM [ARG...]\n");
		return 2;
	}
	pid = fork();
	if (pid < 0)
		return perror("fork"), 1;
	if (pid == 0) {
		if (setsid() < 0 || chroot(argv[1]) < 0 || chdir("/") < 0)
			_exit(125);
		fd = open("/proc/thread-self/attr/exec", O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, argv[2], strlen(argv[2])) < 0)
			_exit(124);
		close(fd);
		execv(argv[3], argv + 3);
		_exit(126);
	}
	if (waitpid(pid, &status, 0) < 0)
		return perror("waitpid"), 1;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
