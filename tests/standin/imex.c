// SPDX-License-Identifier: Apache-2.0
/*
 * A stand-in for NVIDIA's IMEX daemon and its control tool, one program that is
 * nvidia-imex or nvidia-imex-ctl by the name it is run under (basename of argv[0]). Built
 * static (the Makefile's build/tools/standin-imex/, tests/packaging/make-imex-deb) so that
 * it runs in a chroot or a container holding nothing else, as the compute-domain daemon's
 * container holds only what the DRA driver's CDI spec mounts in.
 *
 * It follows what NVIDIA's compute-domain daemon does with the real ones
 * (NVIDIA/k8s-dra-driver-gpu at 2240711, cmd/compute-domain-daemon/main.go):
 *   - it runs "nvidia-imex -c /imexd/imexd.cfg" by PATH (main.go:45-50, 286) and keeps it
 *     in the foreground, the config saying DAEMONIZE=0;
 *   - the config is templates/compute-domain-daemon-config.tmpl.cfg rendered: KEY=VALUE
 *     lines, # comments, IMEX_CMD_ENABLED=1, IMEX_CMD_BIND_INTERFACE_IP the pod's IP,
 *     IMEX_CMD_PORT=50005, SERVER_PORT=50000, IMEX_NODE_CONFIG_FILE=/imexd/nodes.cfg;
 *   - the nodes file holds one IP, or in DNS-names mode one name compute-domain-daemon-N,
 *     a line (main.go writeDaemonsConfig; dnsnames.go WriteNodesConfig);
 *   - SIGUSR1 asks the daemon to re-read its nodes and reconnect (main.go:405-427), SIGTERM
 *     stops it (process.go Stop);
 *   - readiness is "nvidia-imex-ctl -c /imexd/imexd.cfg -q" printing exactly "READY\n"
 *     and exiting 0 (main.go:433-456; -q "queries the status of the IMEX daemon once", NVIDIA's
 *     IMEX guide, docs.nvidia.com/multi-node-nvlink-systems/imex-guide/cmdservice.html).
 *
 * nvidia-imex -c FILE: reads the config; a line that is not KEY=VALUE, a missing or bad
 * IMEX_CMD_ENABLED (must be 1: the command service is what nvidia-imex-ctl talks to),
 * IMEX_CMD_BIND_INTERFACE_IP (an IPv4 or IPv6 address), IMEX_CMD_PORT or SERVER_PORT (a
 * port), IMEX_NODE_CONFIG_FILE (readable, each line an IP address or a DNS name) is one
 * line naming it on stderr and exit 1, as the real daemon refuses a bad config. Then it
 * listens on IMEX_CMD_BIND_INTERFACE_IP:IMEX_CMD_PORT (TCP) and answers each connection's
 * command line: "QUERY" with its state ("READY", or "UNAVAILABLE <why>" after a re-read
 * of the nodes file failed), "NODES" with the nodes it knows, one a line, then ".". With
 * DAEMONIZE=1 (the guide's default, config.html) the first process forks the daemon and
 * exits 0; DAEMONIZE=0 stays in the foreground. SIGUSR1: the nodes file re-read, the
 * nodes logged ("nvidia-imex: nodes: A B ..."); SIGTERM or SIGINT: exit 0.
 *
 * nvidia-imex-ctl [-c FILE] -q | -N: FILE (default /etc/nvidia-imex/config.cfg, as the
 * guide's cmdservice.html says) gives the address. -q prints the daemon's state line and
 * exits 0 only for READY; -N prints the nodes. No daemon, or a config without the command
 * service: one line, exit 1. Bad usage: exit 2.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define MAX_NODES 256
#define NODE_LEN 254 /* a DNS name's longest text form, and the NUL */
#define VALUE_LEN 4096

struct imex_config {
	char file[VALUE_LEN];
	char bind_ip[VALUE_LEN];    /* IMEX_CMD_BIND_INTERFACE_IP */
	char nodes_file[VALUE_LEN]; /* IMEX_NODE_CONFIG_FILE */
	int cmd_enabled;	    /* IMEX_CMD_ENABLED: -1 when absent */
	int cmd_port;		    /* IMEX_CMD_PORT: -1 when absent */
	int daemonize;		    /* DAEMONIZE: 1 when absent (the guide's default) */
};

struct imex_nodes {
	char name[MAX_NODES][NODE_LEN];
	int n;
};

static const char *prog = "nvidia-imex";

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static char *trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r'))
		*--end = '\0';
	return s;
}

/* A port: decimal, 1 to 65535 (0 would let the kernel choose one no client knows). */
static int parse_port(const char *v)
{
	char *end;
	long p;

	if (!*v)
		return -1;
	errno = 0;
	p = strtol(v, &end, 10);
	if (errno || *end || p < 1 || p > 65535)
		return -1;
	return (int)p;
}

static int is_ip(const char *v)
{
	unsigned char buf[sizeof(struct in6_addr)];

	return inet_pton(AF_INET, v, buf) == 1 || inet_pton(AF_INET6, v, buf) == 1;
}

/* A DNS name as the nodes file may hold one (RFC 1123 labels: letters, digits, '-'). */
static int is_dns_name(const char *v)
{
	size_t len = strlen(v), label = 0;

	if (len == 0 || len >= NODE_LEN)
		return 0;
	for (const char *p = v; *p; p++) {
		if (*p == '.') {
			if (label == 0 || p[-1] == '-')
				return 0;
			label = 0;
			continue;
		}
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-'))
			return 0;
		if (label == 0 && *p == '-')
			return 0;
		if (++label > 63)
			return 0;
	}
	return label > 0 && v[len - 1] != '-';
}

/* The config's KEY=VALUE lines into *c; 0, or -1 after one line on stderr. */
static int config_read(const char *file, struct imex_config *c)
{
	char line[VALUE_LEN + 128];
	unsigned lineno = 0;
	FILE *f;

	memset(c, 0, sizeof(*c));
	c->cmd_enabled = -1;
	c->cmd_port = -1;
	c->daemonize = 1;
	snprintf(c->file, sizeof(c->file), "%s", file);
	f = fopen(file, "r");
	if (!f) {
		say("cannot read the config '%s': %s", file, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *l = trim(line), *eq, *key, *val;

		lineno++;
		if (!*l || *l == '#')
			continue;
		eq = strchr(l, '=');
		if (!eq || eq == l) {
			say("config '%s' line %u: '%s' is not KEY=VALUE", file, lineno, l);
			goto bad;
		}
		*eq = '\0';
		key = trim(l);
		val = trim(eq + 1);
		if (strlen(val) >= VALUE_LEN) {
			say("config '%s' line %u: %s's value is too long", file, lineno, key);
			goto bad;
		}
		if (!strcmp(key, "IMEX_CMD_ENABLED")) {
			if (strcmp(val, "0") && strcmp(val, "1")) {
				say("config '%s' line %u: IMEX_CMD_ENABLED=%s: give 0 or 1", file,
				    lineno, val);
				goto bad;
			}
			c->cmd_enabled = val[0] - '0';
		} else if (!strcmp(key, "IMEX_CMD_BIND_INTERFACE_IP")) {
			snprintf(c->bind_ip, sizeof(c->bind_ip), "%s", val);
		} else if (!strcmp(key, "IMEX_CMD_PORT") || !strcmp(key, "SERVER_PORT")) {
			int port = parse_port(val);

			if (port < 0) {
				say("config '%s' line %u: %s=%s is not a port (1 to 65535)", file,
				    lineno, key, val);
				goto bad;
			}
			if (!strcmp(key, "IMEX_CMD_PORT"))
				c->cmd_port = port;
		} else if (!strcmp(key, "IMEX_NODE_CONFIG_FILE")) {
			snprintf(c->nodes_file, sizeof(c->nodes_file), "%s", val);
		} else if (!strcmp(key, "DAEMONIZE")) {
			if (strcmp(val, "0") && strcmp(val, "1")) {
				say("config '%s' line %u: DAEMONIZE=%s: give 0 or 1", file, lineno,
				    val);
				goto bad;
			}
			c->daemonize = val[0] - '0';
		}
	}
	fclose(f);
	return 0;
bad:
	fclose(f);
	return -1;
}

/* The command service's address, which both programs need; 0, or -1 after one line. */
static int config_cmd_service(const struct imex_config *c)
{
	if (c->cmd_enabled != 1) {
		say("config '%s': IMEX_CMD_ENABLED is %s: give IMEX_CMD_ENABLED=1, the command "
		    "service nvidia-imex-ctl talks to",
		    c->file, c->cmd_enabled < 0 ? "missing" : "0");
		return -1;
	}
	if (!c->bind_ip[0]) {
		say("config '%s': IMEX_CMD_BIND_INTERFACE_IP is missing or empty: give the "
		    "address the command service listens on",
		    c->file);
		return -1;
	}
	if (!is_ip(c->bind_ip)) {
		say("config '%s': IMEX_CMD_BIND_INTERFACE_IP=%s is not an IPv4 or IPv6 address",
		    c->file, c->bind_ip);
		return -1;
	}
	if (c->cmd_port < 0) {
		say("config '%s': IMEX_CMD_PORT is missing", c->file);
		return -1;
	}
	return 0;
}

/* The nodes file into *n; 0, or -1 with the cause in why. */
static int nodes_read(const char *file, struct imex_nodes *n, char *why, size_t why_len)
{
	char line[1024];
	unsigned lineno = 0;
	FILE *f;

	n->n = 0;
	f = fopen(file, "r");
	if (!f) {
		snprintf(why, why_len, "cannot read the nodes file '%s': %s", file,
			 strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *l = trim(line);

		lineno++;
		if (!*l || *l == '#')
			continue;
		if (!is_ip(l) && !is_dns_name(l)) {
			snprintf(why, why_len,
				 "nodes file '%s' line %u: '%.200s' is not an IP address or a DNS "
				 "name",
				 file, lineno, l);
			fclose(f);
			return -1;
		}
		if (n->n == MAX_NODES) {
			snprintf(why, why_len, "nodes file '%s': more than %d nodes", file,
				 MAX_NODES);
			fclose(f);
			return -1;
		}
		snprintf(n->name[n->n++], NODE_LEN, "%s", l);
	}
	fclose(f);
	if (n->n == 0) {
		snprintf(why, why_len, "nodes file '%s' names no node", file);
		return -1;
	}
	return 0;
}

static void nodes_log(const struct imex_nodes *n)
{
	fprintf(stderr, "%s: nodes:", prog);
	for (int i = 0; i < n->n; i++)
		fprintf(stderr, " %s", n->name[i]);
	fputc('\n', stderr);
}

static int cmd_address(const struct imex_config *c, struct sockaddr_storage *ss, socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(c->bind_ip, ':')) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)c->cmd_port);
		inet_pton(AF_INET6, c->bind_ip, &a->sin6_addr);
		*len = sizeof(*a);
		return AF_INET6;
	}
	struct sockaddr_in *a = (struct sockaddr_in *)ss;

	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)c->cmd_port);
	inet_pton(AF_INET, c->bind_ip, &a->sin_addr);
	*len = sizeof(*a);
	return AF_INET;
}

/* One client: a command line, the answer, closed. A silent client is given 2 s. */
static void serve_client(int fd, const struct imex_nodes *n, const char *state)
{
	struct timeval tv = {.tv_sec = 2};
	char cmd[64], *c;
	size_t got = 0;
	FILE *out;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (got < sizeof(cmd) - 1) {
		ssize_t r = read(fd, cmd + got, 1);

		if (r <= 0 || cmd[got] == '\n')
			break;
		got++;
	}
	cmd[got] = '\0';
	c = trim(cmd);
	out = fdopen(fd, "w");
	if (!out) {
		close(fd);
		return;
	}
	if (!strcmp(c, "QUERY")) {
		fprintf(out, "%s\n", state);
	} else if (!strcmp(c, "NODES")) {
		for (int i = 0; i < n->n; i++)
			fprintf(out, "%s\n", n->name[i]);
		fputs(".\n", out);
	} else {
		fprintf(out, "ERROR unknown command '%s'\n", c);
	}
	fclose(out);
}

static int daemon_main(int argc, char **argv)
{
	static struct imex_config c;
	static struct imex_nodes nodes;
	struct sockaddr_storage ss;
	char why[VALUE_LEN + 512], state[VALUE_LEN + 600] = "READY";
	const char *file = NULL;
	socklen_t len;
	sigset_t mask;
	int opt, lfd, sfd, one = 1;

	while ((opt = getopt(argc, argv, "c:")) != -1) {
		if (opt != 'c') {
			fprintf(stderr, "usage: nvidia-imex -c CONFIG\n");
			return 2;
		}
		file = optarg;
	}
	if (!file || optind != argc) {
		fprintf(stderr, "usage: nvidia-imex -c CONFIG\n");
		return 2;
	}
	if (config_read(file, &c) < 0 || config_cmd_service(&c) < 0)
		return 1;
	if (!c.nodes_file[0]) {
		say("config '%s': IMEX_NODE_CONFIG_FILE is missing or empty: give the file "
		    "listing the domain's nodes",
		    file);
		return 1;
	}
	if (nodes_read(c.nodes_file, &nodes, why, sizeof(why)) < 0) {
		say("%s", why);
		return 1;
	}
	/*
	 * Before the port is open: a client gone before its answer (a probe its timeout killed)
	 * makes the write fail with EPIPE, not kill the daemon; a SIGUSR1 or SIGTERM that comes
	 * once the port is open waits for the signalfd, never taking the default action.
	 */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	lfd = socket(cmd_address(&c, &ss, &len), SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(lfd, (struct sockaddr *)&ss, len) < 0 || listen(lfd, 16) < 0) {
		say("cannot listen on %s port %d (IMEX_CMD_BIND_INTERFACE_IP, IMEX_CMD_PORT): %s",
		    c.bind_ip, c.cmd_port, strerror(errno));
		return 1;
	}
	if (c.daemonize) {
		pid_t pid = fork();

		if (pid < 0) {
			say("fork: %s", strerror(errno));
			return 1;
		}
		if (pid > 0)
			return 0;
		setsid();
	}
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		say("signalfd: %s", strerror(errno));
		return 1;
	}
	say("listening on %s port %d, %d nodes, state READY", c.bind_ip, c.cmd_port, nodes.n);
	nodes_log(&nodes);
	for (;;) {
		struct pollfd p[2] = {{.fd = lfd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		struct signalfd_siginfo si;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			say("poll: %s", strerror(errno));
			return 1;
		}
		if (p[1].revents & POLLIN) {
			if (read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
				continue;
			if (si.ssi_signo != SIGUSR1) {
				say("signal %u: stopping", si.ssi_signo);
				return 0;
			}
			if (nodes_read(c.nodes_file, &nodes, why, sizeof(why)) < 0) {
				snprintf(state, sizeof(state), "UNAVAILABLE %s", why);
				say("SIGUSR1: %s: state UNAVAILABLE", why);
			} else {
				snprintf(state, sizeof(state), "READY");
				say("SIGUSR1: nodes re-read, state READY");
				nodes_log(&nodes);
			}
		}
		if (p[0].revents & POLLIN) {
			int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

			if (cfd >= 0)
				serve_client(cfd, &nodes, state);
		}
	}
}

static int ctl_main(int argc, char **argv)
{
	static struct imex_config c;
	const char *file = "/etc/nvidia-imex/config.cfg", *cmd = NULL;
	struct sockaddr_storage ss;
	char line[2048];
	socklen_t len;
	int opt, fd, ready = 0, lines = 0;
	FILE *in;

	while ((opt = getopt(argc, argv, "c:qN")) != -1) {
		if (opt == 'c')
			file = optarg;
		else if (opt == 'q' && !cmd)
			cmd = "QUERY";
		else if (opt == 'N' && !cmd)
			cmd = "NODES";
		else
			cmd = "";
	}
	if (!cmd || !*cmd || optind != argc) {
		fprintf(stderr, "usage: nvidia-imex-ctl [-c CONFIG] -q | -N\n");
		return 2;
	}
	if (config_read(file, &c) < 0 || config_cmd_service(&c) < 0)
		return 1;
	fd = socket(cmd_address(&c, &ss, &len), SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, len) < 0) {
		say("cannot reach the IMEX daemon's command service at %s port %d: %s", c.bind_ip,
		    c.cmd_port, strerror(errno));
		return 1;
	}
	if (dprintf(fd, "%s\n", cmd) < 0 || !(in = fdopen(fd, "r"))) {
		say("cannot talk to the command service at %s port %d: %s", c.bind_ip, c.cmd_port,
		    strerror(errno));
		close(fd);
		return 1;
	}
	while (fgets(line, sizeof(line), in)) {
		if (!strcmp(cmd, "NODES") && !strcmp(line, ".\n")) {
			ready = 1;
			break;
		}
		fputs(line, stdout);
		if (!strcmp(cmd, "QUERY"))
			ready = !strcmp(line, "READY\n");
		lines++;
	}
	fclose(in);
	if (lines == 0 && !ready) {
		say("the command service at %s port %d closed without an answer", c.bind_ip,
		    c.cmd_port);
		return 1;
	}
	return ready ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *base = strrchr(argv[0], '/');

	base = base ? base + 1 : argv[0];
	if (!strcmp(base, "nvidia-imex-ctl")) {
		prog = "nvidia-imex-ctl";
		return ctl_main(argc, argv);
	}
	if (!strcmp(base, "nvidia-imex"))
		return daemon_main(argc, argv);
	fprintf(stderr, "%s: run me as nvidia-imex or nvidia-imex-ctl\n", base);
	return 2;
}
