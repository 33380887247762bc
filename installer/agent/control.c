// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/control.h"
#include "util/cleanup.h"
#include "util/fs.h"
#include "util/log.h"

/* The socket's address through DIR_FD: /proc/self/fd/N/agent.sock, whatever --root's length. */
static socklen_t address(int dir_fd, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/" CONTROL_NAME, dir_fd);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(sa->sun_path) + 1);
}

int control_listen(int root_fd, struct err *e)
{
	_cleanup_close_ int dir_fd = fs_dir_in_root(root_fd, CONTROL_DIR, true, e);
	struct sockaddr_un sa;
	struct stat st;
	socklen_t len;
	int fd;

	if (dir_fd < 0)
		return err_wrap(e, "agent: control socket");
	if (fstatat(dir_fd, CONTROL_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return err_set(e, EXIT_UNEXPECTED,
				       "agent: '%s' exists and is not a socket: not replaced",
				       CONTROL_SOCKET);
		if (unlinkat(dir_fd, CONTROL_NAME, 0) < 0)
			return err_errno(e, EXIT_UNEXPECTED, errno, "agent: remove the stale '%s'",
					 CONTROL_SOCKET);
	}
	len = address(dir_fd, &sa);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, len) < 0 || listen(fd, 4) < 0) {
		err_errno(e, EXIT_UNEXPECTED, errno, "agent: listen on '%s'", CONTROL_SOCKET);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* Only root (the installer) may ask. */
	if (fchmodat(dir_fd, CONTROL_NAME, 0600, 0) < 0) {
		err_errno(e, EXIT_UNEXPECTED, errno, "agent: chmod '%s'", CONTROL_SOCKET);
		close(fd);
		return -1;
	}
	return fd;
}

/* Reads a line into BUF within TIMEOUT_MS. Returns its length, or -1. */
static int read_line(int fd, char *buf, size_t size, int timeout_ms)
{
	size_t n = 0;
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000;

	while (n + 1 < size) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		uint64_t now = now_ns();
		ssize_t r;

		if (now >= deadline || poll(&p, 1, (int)((deadline - now) / 1000000) + 1) <= 0)
			return -1;
		r = read(fd, buf + n, 1);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			return -1;
		if (buf[n] == '\n') {
			buf[n] = '\0';
			return (int)n;
		}
		n++;
	}
	return -1;
}

int control_read_request(int fd, char *why, size_t size)
{
	char line[CONTROL_MAX_LINE];
	int n = read_line(fd, line, sizeof(line), 2000);

	if (n < 4 || strncmp(line, "hold", 4) != 0 || (line[4] != '\0' && line[4] != ' '))
		return 0;
	snprintf(why, size, "%s", line[4] ? line + 5 : "");
	return 1;
}

int control_hold(int root_fd, const char *why, unsigned *stopped, struct err *e)
{
	struct err de;
	_cleanup_close_ int dir_fd = fs_dir_in_root(root_fd, CONTROL_DIR, false, &de);
	_cleanup_close_ int fd = -1;
	struct sockaddr_un sa;
	char req[CONTROL_MAX_LINE], reply[64];
	int n;

	*stopped = 0;
	if (dir_fd < 0)
		return -2;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "agent's socket");
	if (connect(fd, (struct sockaddr *)&sa, address(dir_fd, &sa)) < 0)
		/* No agent, or a stale socket: no daemon of ours runs. */
		return errno == ENOENT || errno == ECONNREFUSED
			       ? -2
			       : err_errno(e, EXIT_IN_USE, errno, "the node agent's socket '%s'",
					   CONTROL_SOCKET);
	n = snprintf(req, sizeof(req), "hold %.200s\n", why);
	if (fs_write_all(fd, req, (size_t)n) < 0 ||
	    read_line(fd, reply, sizeof(reply), CONTROL_HOLD_TIMEOUT_S * 1000) < 0 ||
	    sscanf(reply, "held %u", stopped) != 1) {
		err_set(e, EXIT_IN_USE,
			"the node agent did not stop its daemons (persistence daemon, Fabric Manager) within %d s",
			CONTROL_HOLD_TIMEOUT_S);
		err_hint(e, "see the agent container's log; the next run asks again");
		return -1;
	}
	n = fd;
	fd = -1;
	return n;
}
