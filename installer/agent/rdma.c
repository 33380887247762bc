// SPDX-License-Identifier: Apache-2.0
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/rdma.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/prom.h"

static const struct prom_family fam_path = {
	"nvidia_driver_installer_agent_rdma_path", PROM_GAUGE,
	"1 for the path that serves GPUDirect RDMA at the last look (none, peermem, dmabuf)", 0};
static const struct prom_family fam_reloads = {
	"nvidia_driver_installer_agent_peermem_reloads_total", PROM_COUNTER,
	"nvidia-peermem loaded again by the agent after the RDMA stack came back", 0};
static const struct prom_family fam_failures = {
	"nvidia_driver_installer_agent_peermem_reload_failures_total", PROM_COUNTER,
	"nvidia-peermem reloads refused, by the signature check or by the kernel", 0};

void agent_rdma_init(struct agent_rdma *r)
{
	memset(r, 0, sizeof(*r));
	r->path = -1;
}

void agent_rdma_look(struct agent_rdma *r, const struct agent_rdma_look *l)
{
	_cleanup_(publish_freep) struct installdir *dir = NULL;
	_cleanup_close_ int drivers_fd = -1;
	struct kernel_rdma_decision d;
	char waiting[256];
	struct err e;
	int n;

	if (l->o->mode == KERNEL_RDMA_OFF || !l->version || !l->install_id)
		return;
	err_clear(&e);
	if (publish_open(l->root_fd, l->install_dir, false, &dir, &e) < 0 || !dir ||
	    (drivers_fd = publish_version_subdir(dir, l->install_id, "drivers", &e)) < 0) {
		log_kv(LOG_WARN, "agent", "rdma: the installed version's modules cannot be read",
		       "error", e.msg, LOG_END);
		return;
	}
	n = kernel_rdma_reload(&(struct kernel_rdma_reload){.mode = l->o->mode,
							    .root_fd = l->root_fd,
							    .release = l->release,
							    .drivers_fd = drivers_fd,
							    .version = l->version,
							    .module_certs = l->o->module_certs,
							    .n_module_certs = l->o->n_module_certs},
			       &d, waiting, sizeof(waiting), &e);
	r->path = (int)d.path;
	if (n < 0) {
		r->failures++;
		if (strcmp(r->last_error, e.msg) != 0)
			log_kv(LOG_ERROR, "agent", "rdma: nvidia-peermem not loaded again", "error",
			       e.msg, "fix", e.hint, LOG_END);
		snprintf(r->last_error, sizeof(r->last_error), "%s", e.msg);
		return;
	}
	r->last_error[0] = '\0';
	if (n > 0) {
		r->reloads++;
		log_kv(LOG_INFO, "agent", "rdma: nvidia-peermem loaded again after the RDMA stack",
		       "version", l->version, U64("reloads", r->reloads), "why", d.why, LOG_END);
	} else if (waiting[0] && strcmp(waiting, r->waiting) != 0) {
		log_kv(LOG_INFO, "agent", "rdma: nvidia-peermem waits", "reason", waiting, LOG_END);
	}
	snprintf(r->waiting, sizeof(r->waiting), "%s", waiting);
}

char *agent_rdma_render(const struct agent_rdma *r, enum kernel_rdma mode)
{
	static const enum kernel_rdma_path paths[] = {RDMA_PATH_NONE, RDMA_PATH_PEERMEM,
						      RDMA_PATH_DMABUF};
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	if (mode == KERNEL_RDMA_OFF)
		return strdup("");
	if (!(f = open_memstream(&text, &len)))
		return NULL;
	if (r->path >= 0) {
		prom_head(f, &fam_path);
		for (size_t i = 0; i < ARRAY_SIZE(paths); i++)
			prom_sample(f, &fam_path,
				    &(struct prom_label){"path", kernel_rdma_path_name(paths[i])},
				    1, r->path == (int)paths[i]);
	}
	prom_single(f, &fam_reloads, (double)r->reloads);
	prom_single(f, &fam_failures, (double)r->failures);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
