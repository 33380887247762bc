// SPDX-License-Identifier: Apache-2.0
/*
 * installer/agent/: the kernel log's Xid records (a /dev/kmsg record, the driver's load
 * line, lookalikes that are not Xids, the driver's words written by user space, a plain
 * line), their classes, the kernel log read from a file in pieces, the HTTP request line
 * and listen address, the HTTP server's thread, and the health judgement's order and
 * history. t_agent runs them in the agent.
 */
#include "cmocka_prelude.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/control.h"
#include "agent/daemons.h"
#include "agent/health.h"
#include "agent/httpd.h"
#include "agent/xid.h"
#include "util/log.h"

static enum kmsg_kind parse(const char *s, struct xid_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	return xid_parse(s, strlen(s), ev);
}

static void test_xid_records(void **state)
{
	struct xid_event ev;

	(void)state;
	assert_int_equal(
		parse("3,1202,52000000,-;NVRM: Xid (PCI:0000:3B:00): 79, pid=0, name=x, GPU has fallen off the bus.",
		      &ev),
		KMSG_XID);
	assert_string_equal(ev.bdf, "0000:3b:00");
	assert_int_equal(ev.code, 79);
	/* A code followed by a space; a field a later kernel adds after the flags. */
	assert_int_equal(
		parse("4,7,8,-,caller=T1;NVRM: Xid (PCI:0000:c6:00.0): 13 Graphics Exception", &ev),
		KMSG_XID);
	assert_string_equal(ev.bdf, "0000:c6:00.0");
	assert_int_equal(ev.code, 13);
	assert_int_equal(
		parse("6,1,2,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.261.03", &ev),
		KMSG_DRIVER_LOADED);
	/*
	 * Only the kernel's records (facility 0) are the driver's. What user space writes into
	 * /dev/kmsg carries LOG_USER (1) or the facility it names (printk.c, devkmsg_write):
	 * "echo 'NVRM: Xid ...' >/dev/kmsg" reads back as 12,..., "<3>NVRM: ..." as 11,...
	 */
	assert_int_equal(
		parse("12,1300,60000000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=0, name=x, GPU has fallen off the bus.",
		      &ev),
		KMSG_FROM_USER);
	assert_int_equal(ev.facility, 1);
	assert_int_equal(
		parse("11,1301,1,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  1.0", &ev),
		KMSG_FROM_USER);
	assert_int_equal(parse("190,1302,1,-;NVRM: Xid (PCI:0000:3b:00): 79, x", &ev),
			 KMSG_FROM_USER);
	assert_int_equal(ev.facility, 23); /* LOG_LOCAL7 */
	assert_int_equal(parse("14,1303,1,-;a user's line, nothing of the driver's", &ev),
			 KMSG_OTHER);
	/* No record's prefix (a plain line, a saved log), or a broken one: nothing. */
	assert_int_equal(parse("NVRM: Xid (PCI:0000:c6:00.0): 13 Graphics Exception", &ev),
			 KMSG_OTHER);
	assert_int_equal(parse("3,1202;NVRM: Xid (PCI:0000:3b:00): 79, x", &ev), KMSG_OTHER);
	assert_int_equal(parse(",1,2,-;NVRM: Xid (PCI:0000:3b:00): 79, x", &ev), KMSG_OTHER);
	assert_int_equal(parse("3,1,2,-NVRM: Xid (PCI:0000:3b:00): 79, x", &ev), KMSG_OTHER);
	assert_int_equal(parse("99999999999,1,2,-;NVRM: Xid (PCI:0000:3b:00): 79, x", &ev),
			 KMSG_OTHER);
	assert_int_equal(parse("3,1,2,-\n;NVRM: Xid (PCI:0000:3b:00): 79, x", &ev), KMSG_OTHER);
	/* Lookalikes. */
	assert_int_equal(parse("6,1,2,-;nvidia: Xid (PCI:0000:3b:00): 79, x", &ev), KMSG_OTHER);
	assert_int_equal(
		parse("6,1,2,-;NVRM: something about NVRM: Xid (PCI:0000:3b:00): 79,", &ev),
		KMSG_OTHER);
	assert_int_equal(parse("3,1,2,-;NVRM: Xid (PCI:0000:3b:00): , x", &ev), KMSG_OTHER);
	assert_int_equal(parse("3,1,2,-;NVRM: Xid (PCI:0000:3b:00) 79, x", &ev), KMSG_OTHER);
	assert_int_equal(parse("3,1,2,-;NVRM: Xid (PCI:0000:3b:00): 79x, x", &ev), KMSG_OTHER);
	assert_int_equal(parse("3,1,2,-;NVRM: Xid (PCI:zz): 79, x", &ev), KMSG_OTHER);
	assert_int_equal(parse("3,1,2,-;NVRM: Xid (PCI:0000:3b:00): 1234567, x", &ev), KMSG_OTHER);
	assert_int_equal(parse("3,1,2,-;NVRM: Xid (PCI:0000:3b:00:00:00:00:00): 79, x", &ev),
			 KMSG_OTHER);
	assert_int_equal(parse("", &ev), KMSG_OTHER);
}

static void test_xid_classes(void **state)
{
	static const unsigned fatal[] = {48, 62, 64, 74, 79, 95, 119, 120, 140, 143};
	static const unsigned app[] = {13, 31, 43, 45, 68, 109};

	(void)state;
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		assert_int_equal(xid_classify(fatal[i]), XID_FATAL);
	for (size_t i = 0; i < sizeof(app) / sizeof(app[0]); i++)
		assert_int_equal(xid_classify(app[i]), XID_APPLICATION);
	assert_int_equal(xid_classify(63), XID_OTHER);
	assert_int_equal(xid_classify(92), XID_OTHER);
	assert_string_equal(xid_class_name(XID_FATAL), "fatal");
}

static char seen[8][128];
static int n_seen;

static void collect(const char *rec, size_t len, void *arg)
{
	(void)arg;
	if (n_seen < 8)
		snprintf(seen[n_seen++], sizeof(seen[0]), "%.*s", (int)len, rec);
}

/* A file's lines come whole, however the writes cut them. */
static void test_kmsg_file(void **state)
{
	char dir[] = "/tmp/test_agent.XXXXXX";
	struct kmsg_reader r;
	struct err e;
	int root, fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	root = open(dir, O_RDONLY | O_DIRECTORY);
	fd = openat(root, "kmsg", O_WRONLY | O_CREAT, 0644);
	assert_true(root >= 0 && fd >= 0);
	assert_int_equal(write(fd, "one\ntw", 6), 6);
	assert_int_equal(kmsg_open(&r, root, "/kmsg", &e), 0);
	assert_false(r.is_device);
	n_seen = 0;
	assert_int_equal(kmsg_read(&r, collect, NULL, &e), 1);
	assert_int_equal(write(fd, "o\nthree\n", 8), 8);
	assert_int_equal(kmsg_read(&r, collect, NULL, &e), 2);
	assert_int_equal(kmsg_read(&r, collect, NULL, &e), 0);
	assert_int_equal(n_seen, 3);
	assert_string_equal(seen[0], "one");
	assert_string_equal(seen[1], "two");
	assert_string_equal(seen[2], "three");
	kmsg_close(&r);
	close(fd);
	assert_int_equal(unlinkat(root, "kmsg", 0), 0);
	close(root);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(kmsg_open(&r, AT_FDCWD, "/nonexistent/kmsg", &e), -1);
}

static int req(const char *s, char *path, int *head)
{
	return httpd_parse_request(s, strlen(s), path, 64, head);
}

static void test_http_request(void **state)
{
	char path[64], host[64];
	unsigned port;
	int head;

	(void)state;
	assert_int_equal(req("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", path, &head), 200);
	assert_string_equal(path, "/metrics");
	assert_false(head);
	assert_int_equal(req("HEAD /readyz?x=1 HTTP/1.0\r\n\r\n", path, &head), 200);
	assert_string_equal(path, "/readyz");
	assert_true(head);
	assert_int_equal(req("POST /metrics HTTP/1.1\r\n\r\n", path, &head), 405);
	assert_int_equal(req("GET /metrics HTTP/2.0\r\n\r\n", path, &head), 505);
	assert_int_equal(req("GET metrics HTTP/1.1\r\n\r\n", path, &head), 400);
	assert_int_equal(req("GET  HTTP/1.1\r\n\r\n", path, &head), 400);
	assert_int_equal(req("garbage\r\n\r\n", path, &head), 400);
	assert_int_equal(
		req("GET /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa HTTP/1.1\r\n\r\n",
		    path, &head),
		414);
	assert_int_equal(httpd_parse_addr("0.0.0.0:9470", host, sizeof(host), &port), 0);
	assert_string_equal(host, "0.0.0.0");
	assert_int_equal(port, 9470);
	assert_int_equal(httpd_parse_addr("[::]:0", host, sizeof(host), &port), 0);
	assert_string_equal(host, "::");
	assert_int_equal(port, 0);
	assert_int_equal(httpd_parse_addr("9470", host, sizeof(host), &port), -1);
	assert_int_equal(httpd_parse_addr(":9470", host, sizeof(host), &port), -1);
	assert_int_equal(httpd_parse_addr("h:65536", host, sizeof(host), &port), -1);
	assert_int_equal(httpd_parse_addr("h:-1", host, sizeof(host), &port), -1);
	assert_int_equal(httpd_parse_addr("::1:80", host, sizeof(host), &port), -1);
	assert_int_equal(httpd_parse_addr("h:", host, sizeof(host), &port), -1);
}

/* The first failing check is the reason, in the documented order. */
static void test_health_judge(void **state)
{
	struct health_input in = {.installed = "550.90.07",
				  .loaded = "550.90.07",
				  .nvml_error = "NVML: no",
				  .fatal_xid = "Xid 79 on GPU 0000:3b:00",
				  .fabric_error = "no Fabric Manager",
				  .cdi_error = "two CDI specs",
				  .cuda_error = "CUDA: no"};
	char cause[256];

	(void)state;
	assert_int_equal(health_judge(&in, cause, sizeof(cause)), HEALTH_NVML);
	assert_string_equal(cause, "NVML: no");
	in.nvml_error = NULL;
	assert_int_equal(health_judge(&in, cause, sizeof(cause)), HEALTH_XID);
	assert_string_equal(cause,
			    "Xid 79 on GPU 0000:3b:00: the GPU needs a reset or the node a reboot");
	in.fatal_xid = NULL;
	assert_int_equal(health_judge(&in, cause, sizeof(cause)), HEALTH_FABRIC);
	assert_string_equal(cause, "no Fabric Manager");
	in.fabric_error = NULL;
	assert_int_equal(health_judge(&in, cause, sizeof(cause)), HEALTH_CDI);
	assert_string_equal(cause, "two CDI specs");
	in.cdi_error = NULL;
	assert_int_equal(health_judge(&in, cause, sizeof(cause)), HEALTH_CUDA);
	in.cuda_error = NULL;
	assert_int_equal(health_judge(&in, cause, sizeof(cause)), HEALTH_READY);
	assert_string_equal(cause, "");
	in.loaded = "535.261.03";
	assert_int_equal(health_judge(&in, cause, sizeof(cause)), HEALTH_OTHER_LOADED);
	assert_string_equal(cause, "the loaded driver is 535.261.03, the installed one 550.90.07");
	in.loaded = "";
	assert_int_equal(health_judge(&in, cause, sizeof(cause)), HEALTH_NOT_LOADED);
	in.installed = NULL;
	assert_int_equal(health_judge(&in, cause, sizeof(cause)), HEALTH_NOT_INSTALLED);
	assert_string_equal(health_reason_name(HEALTH_OTHER_LOADED), "other_version_loaded");
	assert_string_equal(health_reason_name(HEALTH_FABRIC), "fabric_manager");
	assert_string_equal(health_reason_name(HEALTH_CDI), "cdi");
}

static void test_health_history(void **state)
{
	struct health h;
	struct xid_event ev = {.bdf = "0000:3b:00", .code = 13};
	char *text;

	(void)state;
	memset(&h, 0, sizeof(h));
	assert_true(health_update(&h, HEALTH_NOT_LOADED, "x", 1.0));
	assert_false(health_update(&h, HEALTH_NVML, "y", 2.0));
	assert_false(h.ever_ready);
	assert_true(health_update(&h, HEALTH_READY, "", 3.5));
	assert_true(h.ever_ready);
	assert_true(h.time_to_ready_s == 3.5);
	assert_true(health_update(&h, HEALTH_XID, "z", 9.0));
	assert_true(health_update(&h, HEALTH_READY, "", 10.0));
	assert_true(h.time_to_ready_s == 3.5);
	assert_int_equal(h.transitions, 3);
	health_count_xid(&h, &ev);
	health_count_xid(&h, &ev);
	ev.code = 79;
	health_count_xid(&h, &ev);
	assert_int_equal(h.n_xids, 2);
	text = health_render(&h, "550.90.07");
	assert_non_null(text);
	assert_non_null(
		strstr(text, "nvidia_driver_installer_agent_ready{version=\"550.90.07\"} 1\n"));
	assert_non_null(strstr(
		text,
		"nvidia_driver_installer_agent_xid_errors_total{gpu=\"0000:3b:00\",xid=\"13\",class=\"application\"} 2\n"));
	assert_non_null(strstr(
		text,
		"nvidia_driver_installer_agent_xid_errors_total{gpu=\"0000:3b:00\",xid=\"79\",class=\"fatal\"} 1\n"));
	assert_non_null(
		strstr(text, "nvidia_driver_installer_agent_time_to_ready_seconds 3.500\n"));
	assert_non_null(
		strstr(text, "nvidia_driver_installer_agent_not_ready{reason=\"xid\"} 0\n"));
	free(text);
	for (unsigned i = 0; i < HEALTH_MAX_XID_SERIES + 3; i++) {
		ev.code = 1000 + i;
		health_count_xid(&h, &ev);
	}
	assert_int_equal(h.n_xids, HEALTH_MAX_XID_SERIES);
	assert_int_equal(h.xids_dropped, 5);
}

/* 1, 2, 4, ... 60 s while it keeps failing; back to 1 s once it stayed up a minute. */
static void test_daemon_backoff(void **state)
{
	unsigned b = 0;
	char how[32];

	(void)state;
	b = daemon_next_backoff(b, 0);
	assert_int_equal(b, 1);
	b = daemon_next_backoff(b, 0);
	assert_int_equal(b, 2);
	b = daemon_next_backoff(b, 3);
	assert_int_equal(b, 4);
	for (int i = 0; i < 10; i++)
		b = daemon_next_backoff(b, 0);
	assert_int_equal(b, DAEMON_BACKOFF_MAX_S);
	assert_int_equal(daemon_next_backoff(b, DAEMON_STABLE_S), 1);
	daemon_describe_status(9, how, sizeof(how)); /* killed by SIGKILL */
	assert_string_equal(how, "signal 9");
	daemon_describe_status(1 << 8, how, sizeof(how));
	assert_string_equal(how, "exit 1");
}

/* The version a daemon's --version prints: the first dotted number, whole. */
static void test_daemon_version(void **state)
{
	char v[16];

	(void)state;
	assert_int_equal(
		daemon_parse_version("Fabric Manager version is : 535.261.03\n", v, sizeof(v)), 0);
	assert_string_equal(v, "535.261.03");
	assert_int_equal(
		daemon_parse_version("nvidia-persistenced:  version 535.171.04\n", v, sizeof(v)),
		0);
	assert_string_equal(v, "535.171.04");
	/* Not part of a word, not a lone number, not cut short. */
	assert_int_equal(daemon_parse_version("v2 x86_64 build 7 version 550.90.07.", v, sizeof(v)),
			 0);
	assert_string_equal(v, "550.90.07");
	assert_int_equal(daemon_parse_version("no version here 42", v, sizeof(v)), -1);
	assert_int_equal(daemon_parse_version("1.2.3.4.5.6.7.8.9.10.11", v, sizeof(v)), -1);
	assert_int_equal(daemon_parse_version("", v, sizeof(v)), -1);
}

static int request(const char *line, char *why)
{
	int sv[2], r;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(write(sv[1], line, strlen(line)), (ssize_t)strlen(line));
	close(sv[1]);
	r = control_read_request(sv[0], why, 64);
	close(sv[0]);
	return r;
}

static void test_control(void **state)
{
	char why[64], dir[] = "/tmp/test_agent.XXXXXX";
	unsigned stopped = 7;
	struct err e;
	int root;

	(void)state;
	assert_int_equal(request("hold an upgrade\n", why), 1);
	assert_string_equal(why, "an upgrade");
	assert_int_equal(request("hold\n", why), 1);
	assert_string_equal(why, "");
	assert_int_equal(request("holdx\n", why), 0);
	assert_int_equal(request("release\n", why), 0);
	assert_int_equal(request("hold but no newline", why), 0);
	/* No agent: nothing to hold. */
	assert_non_null(mkdtemp(dir));
	root = open(dir, O_RDONLY | O_DIRECTORY);
	assert_int_equal(control_hold(root, "x", &stopped, &e), -2);
	assert_int_equal(stopped, 0);
	close(root);
	assert_int_equal(rmdir(dir), 0);
}

/* ---- the HTTP server's thread ----------------------------------------------------------- */

/* A connection to 127.0.0.1:PORT. */
static int dial(unsigned port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* GET PATH sent on a connection of its own, the answer left to read: the connection. */
static int send_get(unsigned port, const char *path)
{
	char req[256];
	int fd = dial(port);

	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	return fd;
}

/* The whole answer on FD into BUF, FD closed: the status. */
static int read_answer(int fd, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;
	int status = 0;

	while (len + 1 < size && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	close(fd);
	assert_int_equal(sscanf(buf, "HTTP/1.1 %d", &status), 1);
	return status;
}

/* GET PATH on a connection of its own: the status, the whole answer into BUF. */
static int get(unsigned port, const char *path, char *buf, size_t size)
{
	return read_answer(send_get(port, path), buf, size);
}

/* Whether anything came on FD yet (an answer, or the server's close), asked without a wait. */
static bool has_answer(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, 0) == 1;
}

/*
 * /healthz asked twice, each answered 200 at once: after it, the server has read every
 * request sent before it. Each round of the server's loop reads every request already
 * there and answers it in that round, then takes the new connections: the second /healthz,
 * sent once the first was answered, is read in a later round than the first and anything
 * sent before it.
 */
static void healthz_twice(unsigned port)
{
	char buf[1024];

	for (int i = 0; i < 2; i++) {
		assert_int_equal(get(port, "/healthz", buf, sizeof(buf)), 200);
		assert_non_null(strstr(buf, "\r\n\r\nok\n"));
	}
}

/* The agent's pages: /healthz, and /readyz waiting up to wait_ms while the loop is busy. */
static void publish(struct httpd *h, unsigned wait_ms)
{
	assert_int_equal(httpd_publish(h,
				       (const struct httpd_page[]){
					       {"/healthz", 200, "text/plain", "ok\n"},
					       {"/readyz", 200, "text/plain", "ready\n", wait_ms},
					       {NULL, 404, "text/plain", "not found\n"}},
				       3),
			 0);
}

/* The seconds a stalled liveness ANSWER says the loop has been busy; -1 for another text. */
static long stalled_for(const char *answer)
{
	static const char said[] = "stalled: the agent's loop has been in one step for ";
	const char *body = strstr(answer, "\r\n\r\n");
	char *end;
	long s;

	if (!body || strncmp(body + 4, said, sizeof(said) - 1) != 0)
		return -1;
	body += 4 + sizeof(said) - 1;
	if (*body < '0' || *body > '9')
		return -1;
	s = strtol(body, &end, 10);
	return strcmp(end, " s\n") == 0 ? s : -1;
}

/*
 * A page's wait as long as a test may take: each wait on it ends on an event (a publish,
 * the loop idle), and an answer sooner than it was not kept waiting.
 */
#define LONG_WAIT_MS 60000u

/*
 * The server answers from what was published, every client at once: idle connections,
 * more than it keeps, cost a probe nothing; a page waits for the loop's next publish only
 * while the loop is busy, and only its wait_ms. Each wait is told apart by the event that
 * ends it, not by how long a loaded machine took to answer.
 */
static void test_httpd(void **state)
{
	_cleanup_(httpd_freep) struct httpd *h = NULL;
	char buf[1024];
	int idle[HTTPD_MAX_CONNS + 8];
	unsigned port = 0;
	uint64_t t0;
	struct err e;
	int fd, ready;

	(void)state;
	err_clear(&e);
	fd = httpd_listen("127.0.0.1:0", &port, &e);
	assert_true(fd >= 0);
	/* Never stalled here (test_httpd_stalled is the liveness path's): 120 s, not ms. */
	h = httpd_start(fd, &(struct httpd_options){.live_path = "/healthz", .stall_s = 120}, &e);
	assert_non_null(h);
	assert_int_equal(get(port, "/healthz", buf, sizeof(buf)), 503); /* nothing published */
	publish(h, LONG_WAIT_MS);
	for (size_t i = 0; i < ARRAY_SIZE(idle); i++)
		idle[i] = dial(port);
	assert_int_equal(get(port, "/healthz", buf, sizeof(buf)), 200);
	assert_non_null(strstr(buf, "\r\n\r\nok\n"));
	assert_int_equal(get(port, "/nope", buf, sizeof(buf)), 404);
	for (size_t i = 0; i < ARRAY_SIZE(idle); i++)
		close(idle[i]);
	/* Idle: /readyz answers at once (sooner than its wait). */
	t0 = now_ns();
	assert_int_equal(get(port, "/readyz", buf, sizeof(buf)), 200);
	assert_non_null(strstr(buf, "\r\n\r\nready\n"));
	assert_true(now_ns() - t0 < LONG_WAIT_MS * 1000000ull);
	/* Busy: /readyz waits for the loop's next publish; /healthz, asked meanwhile, never. */
	httpd_busy(h);
	t0 = now_ns();
	ready = send_get(port, "/readyz");
	healthz_twice(port);
	assert_false(has_answer(ready));
	publish(h, LONG_WAIT_MS);
	assert_int_equal(read_answer(ready, buf, sizeof(buf)), 200);
	assert_non_null(strstr(buf, "\r\n\r\nready\n"));
	assert_true(now_ns() - t0 < LONG_WAIT_MS * 1000000ull);
	/* ... or for the loop to be idle again. */
	t0 = now_ns();
	ready = send_get(port, "/readyz");
	healthz_twice(port);
	assert_false(has_answer(ready));
	httpd_idle(h);
	assert_int_equal(read_answer(ready, buf, sizeof(buf)), 200);
	assert_true(now_ns() - t0 < LONG_WAIT_MS * 1000000ull);
	/* Busy, and no publish comes: /readyz waits its 300 ms, then answers as published. */
	publish(h, 300);
	httpd_busy(h);
	t0 = now_ns();
	assert_int_equal(get(port, "/readyz", buf, sizeof(buf)), 200);
	assert_true(now_ns() - t0 >= 300000000ull);
	assert_non_null(strstr(buf, "\r\n\r\nready\n"));
	assert_int_equal(get(port, "/healthz", buf, sizeof(buf)), 200);
	httpd_idle(h);
	httpd_free(TAKE_PTR(h));
	close(fd);
}

/*
 * The liveness path says a loop busy for longer than stall_s (1 s here) is stalled, and for
 * how long; the other pages answer as published. Before stall_s it answers 200: asserted
 * where this machine answered within it.
 */
static void test_httpd_stalled(void **state)
{
	_cleanup_(httpd_freep) struct httpd *h = NULL;
	char buf[1024];
	unsigned port = 0;
	uint64_t t0;
	struct err e;
	long said;
	int fd, status;

	(void)state;
	err_clear(&e);
	fd = httpd_listen("127.0.0.1:0", &port, &e);
	assert_true(fd >= 0);
	h = httpd_start(fd, &(struct httpd_options){.live_path = "/healthz", .stall_s = 1}, &e);
	assert_non_null(h);
	publish(h, 0);
	t0 = now_ns();
	httpd_busy(h);
	status = get(port, "/healthz", buf, sizeof(buf));
	assert_true(status == 200 || now_ns() - t0 > 1000000000ull);
	/* Busy past stall_s: a time waited for, since it is what the server judges. */
	while (now_ns() - t0 < 1100000000ull)
		nanosleep(&(struct timespec){.tv_nsec = 50000000}, NULL);
	assert_int_equal(get(port, "/healthz", buf, sizeof(buf)), 503);
	said = stalled_for(buf);
	assert_true(said >= 1 && (uint64_t)said <= (now_ns() - t0) / 1000000000ull);
	assert_int_equal(get(port, "/readyz", buf, sizeof(buf)), 200);
	assert_non_null(strstr(buf, "\r\n\r\nready\n"));
	httpd_idle(h);
	assert_int_equal(get(port, "/healthz", buf, sizeof(buf)), 200);
	assert_non_null(strstr(buf, "\r\n\r\nok\n"));
	httpd_free(TAKE_PTR(h));
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xid_records),    cmocka_unit_test(test_xid_classes),
		cmocka_unit_test(test_kmsg_file),      cmocka_unit_test(test_http_request),
		cmocka_unit_test(test_health_judge),   cmocka_unit_test(test_health_history),
		cmocka_unit_test(test_daemon_backoff), cmocka_unit_test(test_daemon_version),
		cmocka_unit_test(test_control),	       cmocka_unit_test(test_httpd),
		cmocka_unit_test(test_httpd_stalled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
