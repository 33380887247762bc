/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Kubernetes API server stand-in (tests/tools/kube-api.py) as kube/'s unit tests run
 * it: under a scratch directory, the service account (a CA and the server's certificate
 * from tests/tools/kube-certs, a token, a namespace), the initial objects, and the
 * stand-in started on a port of its choosing, which the in-cluster configuration is then
 * pointed at (KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT).
 */
#pragma once

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kube/kube.h"
#include "scratch.h"

struct kubestub {
	char sa[128], state[160], faults[160], log[160];
	pid_t pid;
};

static inline int kubestub_put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/*
 * Under ROOT: sa/ (its token "token-one", its namespace NS), the state file holding INITIAL,
 * the faults and request log's paths, and the stand-in started (300 s of life, longer than
 * a test on a loaded machine; it ends with this process too). Returns 0 once it listens,
 * or -1 (nothing is left running).
 */
static inline int kubestub_start(struct kubestub *k, const char *root, const char *ns,
				 const char *initial)
{
	char cmd[512], path[200], port_file[160], port[16] = "";

	snprintf(k->sa, sizeof(k->sa), "%s/sa", root);
	snprintf(k->state, sizeof(k->state), "%s/state.json", root);
	snprintf(k->faults, sizeof(k->faults), "%s/faults.json", root);
	snprintf(k->log, sizeof(k->log), "%s/requests.log", root);
	snprintf(port_file, sizeof(port_file), "%s/port", root);
	snprintf(cmd, sizeof(cmd), "tests/tools/kube-certs '%s' 127.0.0.1", root);
	if (mkdir(k->sa, 0755) < 0 || system(cmd) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s/token", k->sa);
	if (kubestub_put(path, "token-one\n") < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/namespace", k->sa);
	if (kubestub_put(path, ns) < 0 || kubestub_put(k->state, initial) < 0)
		return -1;
	k->pid = fork();
	if (k->pid < 0)
		return -1;
	if (k->pid == 0) {
		char cert[200], key[200], tok[200];

		snprintf(cert, sizeof(cert), "%s/api.pem", root);
		snprintf(key, sizeof(key), "%s/api.key", root);
		snprintf(tok, sizeof(tok), "%s/token", k->sa);
		execlp("python3", "python3", "tests/tools/kube-api.py", port_file, cert, key, tok,
		       k->state, k->faults, k->log, "300", (char *)NULL);
		_exit(127);
	}
	/* The stand-in writes its port once it listens: waited for, up to 60 s of a loaded
	 * machine, or until it died. */
	for (int i = 0; i < 1200 && !port[0]; i++) {
		FILE *f = fopen(port_file, "r");

		if (f) {
			if (!fgets(port, sizeof(port), f))
				port[0] = '\0';
			fclose(f);
		}
		if (!port[0]) {
			if (waitpid(k->pid, NULL, WNOHANG) == k->pid) {
				k->pid = 0;
				return -1;
			}
			nanosleep(&(struct timespec){.tv_nsec = 50000000}, NULL);
		}
	}
	if (!port[0]) {
		kill(k->pid, SIGKILL);
		waitpid(k->pid, NULL, 0);
		k->pid = 0;
		return -1;
	}
	setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", port, 1);
	return 0;
}

/* A client of the stand-in K, each call within DEADLINE_S; NULL when none could be made. */
static inline struct kube *kubestub_client(const struct kubestub *k, unsigned deadline_s)
{
	struct kube_config c;
	struct err e;

	err_clear(&e);
	if (kube_config_in_cluster(k->sa, &c, &e) < 0)
		return NULL;
	c.deadline_s = deadline_s;
	return kube_new(&c, &e);
}

/* The lines of the stand-in's request log that hold NEEDLE, and AND too unless it is NULL. */
static inline int kubestub_logged(const struct kubestub *k, const char *needle, const char *and)
{
	char line[65536];
	int n = 0;
	FILE *f = fopen(k->log, "r");

	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, needle) && (!and || strstr(line, and));
	if (f)
		fclose(f);
	return n;
}

static inline void kubestub_stop(struct kubestub *k)
{
	if (k->pid > 0) {
		kill(k->pid, SIGKILL);
		waitpid(k->pid, NULL, 0);
	}
	k->pid = 0;
}

/* A cmocka test's state: its scratch directory, the stand-in under it, a client of it. */
struct kubestub_fixture {
	struct scratch_fixture f;
	struct kubestub ks;
	struct kube *k;
};

/*
 * cmocka setup's part: a fixture into *STATE, its scratch directory NAME, the stand-in
 * started there (namespace NS, the objects INITIAL) and a client of it, each call within
 * 30 s: no test of these is about the deadline, and a loaded machine (nice 19, ASan,
 * qemu-user) may take seconds over a call. Returns 0, or -1 with nothing left (no
 * directory, nothing running).
 */
static inline int kubestub_setup(void **state, const char *name, const char *ns,
				 const char *initial)
{
	struct kubestub_fixture *s = calloc(1, sizeof(*s));

	if (!s || scratch_init(&s->f, name) < 0) {
		free(s);
		return -1;
	}
	if (kubestub_start(&s->ks, s->f.root, ns, initial) < 0 ||
	    !(s->k = kubestub_client(&s->ks, 30))) {
		kubestub_stop(&s->ks);
		scratch_fini(&s->f);
		free(s);
		return -1;
	}
	*state = s;
	return 0;
}

/* cmocka teardown of kubestub_setup's fixture: the client, the stand-in, the directory. */
static inline int kubestub_teardown(void **state)
{
	struct kubestub_fixture *s = *state;

	kube_free(s->k);
	kubestub_stop(&s->ks);
	scratch_fini(&s->f);
	free(s);
	return 0;
}
