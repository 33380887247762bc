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

const char *agent_rdma_hold(struct agent_rdma *r, uint64_t instance, uint64_t file)
{
	bool settled = instance && instance == r->instance;

	r->instance = instance;
	if (r->refused && instance == r->refused_instance && file == r->refused_file)
		return "the kernel refused it on this stack: tried again once the stack or the file changes";
	r->refused = false;
	if (!settled)
		return "the RDMA stack is new at this look: loaded once the next look sees it still";
	return NULL;
}

void agent_rdma_look(struct agent_rdma *r, const struct agent_rdma_look *l)
{
	_cleanup_(publish_freep) struct installdir *dir = NULL;
	_cleanup_close_ int drivers_fd = -1;
	struct kernel_rdma_decision d;
	char waiting[256];
	struct err e;
	int n;

	uint64_t instance, file;
	const char *hold;

	if (l->o->mode == KERNEL_RDMA_OFF || !l->version || !l->install_id)
		return;
	if (l->busy) {
		log_kv(LOG_DEBUG, "agent", "rdma: no reload at this look", "reason", l->busy,
		       LOG_END);
		return;
	}
	err_clear(&e);
	if (publish_open(l->root_fd, l->install_dir, false, &dir, &e) < 0 || !dir ||
	    (drivers_fd = publish_version_subdir(dir, l->install_id, "drivers", &e)) < 0) {
		log_kv(LOG_WARN, "agent",
		       "rdma: the installed version's modules cannot be read: nvidia-peermem is not loaded again",
		       "error", e.msg, "fix",
		       "run the installer again (it repairs the install directory), or check its permissions",
		       LOG_END);
		return;
	}
	instance = kernel_rdma_stack_instance(l->root_fd);
	file = kernel_rdma_peermem_file_id(drivers_fd);
	hold = agent_rdma_hold(r, instance, file);
	n = kernel_rdma_reload(&(struct kernel_rdma_reload){.mode = l->o->mode,
							    .root_fd = l->root_fd,
							    .release = l->release,
							    .drivers_fd = drivers_fd,
							    .version = l->version,
							    .module_type = l->module_type,
							    .module_certs = l->o->module_certs,
							    .n_module_certs = l->o->n_module_certs,
							    .hold = hold},
			       &d, waiting, sizeof(waiting), &e);
	r->path = (int)d.path;
	if (n < 0) {
		r->failures++;
		/* The kernel's refusal: not every look again on the same stack and file. */
		if (e.code == EXIT_KERNEL_REFUSED) {
			r->refused = true;
			r->refused_instance = instance;
			r->refused_file = file;
		}
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
