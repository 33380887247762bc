// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/devnodes.h"
#include "kernel/firmware.h"
#include "kernel/kargs.h"
#include "kernel/kernel.h"
#include "kernel/kmods.h"
#include "kernel/ktrust.h"
#include "kernel/modsig.h"
#include "kernel/rdma.h"
#include "util/fs.h"
#include "util/str.h"
#include "util/log.h"
#include "util/out.h"

struct kernel {
	struct kernel_opts o; /* its strings are the caller's */
	int root_fd;	      /* not owned */
	int drivers_fd;	      /* owned, or -1 */
	struct kmods *k;
	struct modsig_certs *certs;
	struct ktrust trust;
	struct kmods_set set;
	char version[64];	 /* to load */
	char loaded_version[64]; /* of the live nvidia module, or "" */
	char module_type[16];	 /* to load: "open", "proprietary", or "" when not known */
	char loaded_type[16];	 /* of the live nvidia module, or "" when not known */
	bool installed;		 /* the files are the installed version's, verified before */
	bool reload;
	bool has_prediction;
	struct ktrust_prediction prediction;
	char signer[256];	  /* of the predicted package's nvidia.ko, or "" */
	char cert_kernel_id[160]; /* the id the kernel gives its pinned certificate, or "" */
	char key_id[160];
	char busy[1024]; /* what holds the old driver when kernel_prepare gave 1, or "" */
	struct kernel_load_times times; /* of the last kernel_load */
	/*
	 * What a load gives (kernel_use_package_args): the package's defaults, less those
	 * --module-arg replaces, then --module-arg's; until then o.module_args alone.
	 */
	struct strv args;
	bool has_args;
	size_t n_defaults, n_overridden;
	struct strv ignored; /* the package's defaults for modules the set leaves out */
	bool has_rdma;
	struct kernel_rdma_decision rdma;    /* --rdma, decided by kernel_prepare */
	struct kernel_rdma_probe rdma_probe; /* what it was decided on */
	char release[128];		     /* the kernel's, for nvidia-peermem's load */
};

/* The parameters a load of KN gives, MODULE.KEY=VALUE. */
static char *const *load_args(const struct kernel *kn, size_t *n)
{
	*n = kn->has_args ? kn->args.n : kn->o.n_module_args;
	return kn->has_args ? kn->args.v : kn->o.module_args;
}

int kernel_use_package_args(struct kernel *kn, int drivers_fd, struct err *e)
{
	_cleanup_(strv_clear) struct strv all = {0}, defaults = {0};
	char *const *v = kn->o.n_modules ? kn->o.modules : kernel_default_modules;
	size_t n = kn->o.n_modules ? kn->o.n_modules : kernel_n_default_modules;

	strv_clear(&kn->args);
	strv_clear(&kn->ignored);
	kn->has_args = false;
	if (kargs_package_defaults(drivers_fd, &all, e) < 0)
		return err_wrap(e, "kernel");
	if (kargs_for_modules(all.v, all.n, v, n, &defaults, &kn->ignored) < 0 ||
	    kargs_merge(defaults.v, defaults.n, kn->o.module_args, kn->o.n_module_args, &kn->args,
			&kn->n_overridden) < 0)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "kernel: module parameters");
	kn->n_defaults = defaults.n;
	kn->has_args = true;
	return 0;
}

void kernel_free(struct kernel *kn)
{
	if (!kn)
		return;
	kmods_free(kn->k);
	modsig_certs_free(kn->certs);
	strv_clear(&kn->args);
	strv_clear(&kn->ignored);
	if (kn->drivers_fd >= 0)
		close(kn->drivers_fd);
	free(kn);
}

static bool load_record(const struct kernel *kn, struct kargs_record *ret);

/*
 * GDRCopy's gdrdrv and GDS's nvidia_fs live are the driver's own (unloaded with it) only
 * where the record of the live driver's load says our load inserted them; one loaded by
 * another holds the driver from outside (kmods.h).
 */
static void claim_recorded(struct kernel *kn)
{
	struct kargs_record rec = {.driver_version = ""};

	if (!load_record(kn, &rec))
		return;
	kmods_claim_gpudirect(kn->k, rec.gpudirect);
	kargs_record_done(&rec);
}

int kernel_probe(const struct kernel_opts *o, int root_fd, const char *release, struct kernel **ret,
		 struct err *e)
{
	_cleanup_(kernel_freep) struct kernel *kn = calloc(1, sizeof(*kn));

	if (!kn)
		return err_errno(e, EXIT_UNEXPECTED, ENOMEM, "kernel");
	kn->o = *o;
	kn->root_fd = root_fd;
	kn->drivers_fd = -1;
	if (kmods_new(root_fd, release, &kn->k, e) < 0 ||
	    modsig_certs_load(o->module_certs, o->n_module_certs, &kn->certs, e) < 0)
		return -1;
	ktrust_probe(root_fd, &kn->trust);
	if (kmods_loaded_version(kn->k, "nvidia", kn->loaded_version, sizeof(kn->loaded_version)) <
	    0)
		kn->loaded_version[0] = '\0';
	if (kmods_loaded_module_type(kn->k, "nvidia", kn->loaded_type, sizeof(kn->loaded_type)) < 0)
		kn->loaded_type[0] = '\0';
	claim_recorded(kn);
	*ret = TAKE_PTR(kn);
	return 0;
}

/*
 * Whether the live driver is the one to load: its version, and its flavour where both
 * are known (the same version in the other flavour is another driver).
 */
/*
 * Whether the loaded driver is idle, after the caller's hook has let daemons of ours let go
 * of it (the node agent's: cmd/session.c). Returns 0, or -1 (EXIT_IN_USE when busy).
 */
static int check_idle(const struct kernel_opts *o, struct kmods *k, struct err *e)
{
	if (o->before_idle_check && o->before_idle_check(o->before_idle_arg, e) < 0)
		return -1;
	return kmods_check_idle(k, o->own_pids, o->n_own_pids, e);
}

static bool live_is_wanted(const struct kernel *kn)
{
	return strcmp(kn->loaded_version, kn->version) == 0 &&
	       (!kn->module_type[0] || !kn->loaded_type[0] ||
		strcmp(kn->module_type, kn->loaded_type) == 0);
}

/* Every module of the set, checked as the kernel will check it. */
static int verify_set(struct kernel *kn, const char *release, struct err *e)
{
	size_t n_certs = modsig_certs_count(kn->certs);

	for (size_t i = 0; i < kn->set.n; i++) {
		struct kmods_report r;

		/*
		 * Live at this very version: it is not inserted again. When the files are
		 * the installed ones, verified when they were installed, they have nothing
		 * to prove (and a re-run does not read 60 MB of nvidia.ko). Files of a new
		 * package are checked all the same: the version is the same, the bytes are
		 * not, and they are what the next boot loads.
		 */
		if (live_is_wanted(kn) && kmods_get_state(kn->k, kn->set.e[i].name) == KMODS_LIVE) {
			kn->set.e[i].was_live = true;
			if (kn->installed)
				continue;
		}
		if (kmods_inspect(kn->k, kn->set.e[i].path, kn->certs, release, &r, e) < 0)
			return -1;
		if (!r.ok) {
			err_set(e, r.code, "module %s: %s", kn->set.e[i].name, r.verdict);
			err_hint(
				e,
				r.code == EXIT_KERNEL_REFUSED
					? "install a package built for kernel %s"
					: "sign the modules with the key of --module-cert, or pin the certificate that signed them (kernel %s)",
				release);
			return -1;
		}
		log_kv(LOG_INFO, "kernel", n_certs ? "module signature verified" : "module checked",
		       "module", kn->set.e[i].name, "version", r.info.version, "signer",
		       r.sig.is_signed ? r.sig.signer : "unsigned", LOG_END);
	}
	if (!n_certs && ktrust_enforces(&kn->trust))
		log_kv(LOG_WARN, "kernel",
		       "no --module-cert: signatures are not checked here, but the kernel enforces them and will refuse modules it does not trust",
		       "sig_enforce", kn->trust.sig_enforce, "lockdown", kn->trust.lockdown,
		       LOG_END);
	return 0;
}

/* One line for each of the package's defaults the set leaves out (kernel_use_package_args). */
static void log_ignored_defaults(const struct kernel *kn)
{
	for (size_t i = 0; i < kn->ignored.n; i++) {
		char module[KMODS_NAME_MAX], kv[512];
		struct err pe;

		/* kargs_package_defaults held each to kmods_parse_arg's rules already. */
		if (kmods_parse_arg(kn->ignored.v[i], module, sizeof(module), kv, sizeof(kv),
				    &pe) == 0)
			log_kv(LOG_INFO, "kernel",
			       "the package's default parameter is for a module not loaded: ignored",
			       "module", module, "param", kv, LOG_END);
	}
}

/*
 * --rdma, decided for the driver to load and this node's RDMA stack (rdma.c): a refusal is
 * the run's error. nvidia-peermem is not in the driver's set: kernel_load loads it on its
 * own afterwards (load_peermem), and its failure never takes the driver out.
 */
static int decide_rdma(struct kernel *kn, const struct kernel_request *rq, struct err *e)
{
	/* Off probes nothing: no libkmod, no /proc/kallsyms (t_lazy_libs: a warm re-run). */
	if (kernel_rdma_plan(&(struct kernel_rdma_plan_request){.mode = kn->o.rdma,
								.root_fd = rq->root_fd,
								.release = rq->driver.kernel,
								.module_type = kn->module_type,
								.k = kn->k,
								.drivers_fd = kn->drivers_fd},
			     &kn->rdma_probe, &kn->rdma, e) < 0)
		return err_wrap(e, "kernel");
	kn->has_rdma = true;
	if (kn->rdma.code) {
		err_set(e, kn->rdma.code, "kernel: %s", kn->rdma.why);
		err_hint(e, "%s", kn->rdma.fix);
		return -1;
	}
	if (kn->o.rdma != KERNEL_RDMA_OFF)
		log_kv(LOG_INFO, "kernel", "GPUDirect RDMA", "rdma", kernel_rdma_name(kn->o.rdma),
		       "path", kernel_rdma_path_name(kn->rdma.path), "why", kn->rdma.why, LOG_END);
	return 0;
}

/*
 * nvidia-peermem after the driver's set, as a step of its own: it loads only over a live
 * ib_core with MOFED's peer-memory API (never the stack from the module tree: openibd's to
 * load), else it waits for the node agent; a refusal is a warning naming the cause and the
 * fix, and the driver stays.
 */
static void load_peermem(struct kernel *kn)
{
	char waiting[256];
	struct err e;
	int r;

	if (!kn->has_rdma || kn->rdma.path != RDMA_PATH_PEERMEM)
		return;
	err_clear(&e);
	r = kernel_rdma_probe(kn->root_fd, kn->release, kn->module_type, &kn->rdma_probe, &e);
	if (r == 0)
		r = kernel_rdma_load_peermem(
			&(struct kernel_rdma_load){.k = kn->k,
						   .drivers_fd = kn->drivers_fd,
						   .certs = kn->certs,
						   .release = kn->release,
						   .trust = &kn->trust,
						   .probe = &kn->rdma_probe},
			waiting, sizeof(waiting), &e);
	if (r < 0)
		log_kv(LOG_WARN, "kernel",
		       "nvidia-peermem not loaded; the driver stays, without GPUDirect RDMA",
		       "reason", e.msg, "fix",
		       e.hint[0] ? e.hint
				 : "see " DOC_DIR
				   "/design.md, \"GPUDirect RDMA\"; the node agent retries",
		       LOG_END);
	else if (r > 0)
		log_kv(LOG_INFO, "kernel", "nvidia-peermem loaded", "version", kn->version,
		       LOG_END);
	else if (waiting[0])
		log_kv(LOG_INFO, "kernel",
		       "nvidia-peermem waits: the node agent (--rdma) loads it then", "reason",
		       waiting, LOG_END);
}

const struct kernel_rdma_decision *kernel_rdma(const struct kernel *kn)
{
	return kn->has_rdma ? &kn->rdma : NULL;
}

static char m0[] = "nvidia", m1[] = "nvidia-modeset", m2[] = "nvidia-drm", m3[] = "nvidia-uvm";
char *const kernel_default_modules[] = {m0, m1, m2, m3};
const size_t kernel_n_default_modules = ARRAY_SIZE(kernel_default_modules);

int kernel_prepare(const struct kernel_request *rq, struct kernel **ret, struct err *e)
{
	const struct kernel_opts *o = rq->opts;
	const char *release = rq->driver.kernel, *module_type = rq->driver.module_type;
	_cleanup_(kernel_freep) struct kernel *kn = NULL;
	char *const *v = o->n_modules ? o->modules : kernel_default_modules;
	size_t n = o->n_modules ? o->n_modules : kernel_n_default_modules;
	char intree[512];
	uint64_t t0 = now_ns();
	bool live;
	int r;

	if (kernel_probe(o, rq->root_fd, release, &kn, e) < 0)
		return err_wrap(e, "kernel");
	snprintf(kn->version, sizeof(kn->version), "%s", rq->driver.version);
	snprintf(kn->release, sizeof(kn->release), "%s", release);
	snprintf(kn->module_type, sizeof(kn->module_type), "%s", module_type ? module_type : "");
	kn->installed = rq->installed;
	kn->drivers_fd = dup(rq->drivers_fd);
	if (kn->drivers_fd < 0)
		return err_errno(e, EXIT_UNEXPECTED, errno, "kernel: drivers dir");
	if (kernel_use_package_args(kn, kn->drivers_fd, e) < 0 || decide_rdma(kn, rq, e) < 0)
		return -1;
	log_ignored_defaults(kn);
	if (kn->n_defaults) {
		char list[1024] = "";
		size_t len = 0;

		for (size_t i = 0; i < kn->args.n && len < sizeof(list); i++)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
						i ? " " : "", kn->args.v[i]);
		log_kv(LOG_INFO, "kernel", "module parameters with the package's defaults",
		       U64("defaults", kn->n_defaults), U64("overridden", kn->n_overridden), "args",
		       list, LOG_END);
	}
	/*
	 * The driver live at this very version, every module of the set with it: nothing
	 * will be inserted, so the module files' modinfo is not read (libkmod maps each
	 * file and parses its signature: most of what this stage costs a re-run).
	 */
	live = rq->installed && live_is_wanted(kn) && kmods_all_live(kn->k, v, n);
	r = kmods_set_build(kn->k,
			    &(struct kmods_set_request){.drivers_fd = kn->drivers_fd,
							.names = v,
							.n_names = n,
							.args = kn->args.v,
							.n_args = kn->args.n,
							.modinfo = !live},
			    &kn->set, e);
	if (r < 0 || verify_set(kn, release, e) < 0 ||
	    kmods_resolve_intree(kn->k, &kn->set, intree, sizeof(intree), e) < 0)
		return err_wrap(e, "kernel");
	if (intree[0])
		log_kv(LOG_INFO, "kernel", "in-tree dependencies found", "modules", intree,
		       LOG_END);
	if (kmods_resolve_conflicts(kn->k, !o->no_unload_conflicts, true, e) < 0)
		return err_wrap(e, "kernel");
	if (o->keyring_cert && ktrust_check_cert(o->keyring_cert, e) < 0)
		return err_wrap(e, "kernel");
	if (o->imex_channel0 && devnodes_imex_check(rq->root_fd, e) < 0)
		return -1;
	kn->reload = kn->loaded_version[0] && !live_is_wanted(kn);
	if (kn->reload && check_idle(o, kn->k, e) < 0) {
		err_wrap(e, "kernel: nvidia %s is loaded", kn->loaded_version);
		if (!o->defer_busy || e->code != EXIT_IN_USE)
			return -1;
		str_fmt_cut(kn->busy, sizeof(kn->busy), "%s", e->msg);
		log_kv(LOG_INFO, "kernel", "modules verified; the loaded driver is busy",
		       U64("modules", kn->set.n), "loaded", kn->loaded_version, "reason", e->msg,
		       LOG_END);
		*ret = TAKE_PTR(kn);
		return 1;
	}
	log_kv(LOG_INFO, "kernel", "modules ready to load", U64("modules", kn->set.n), "loaded",
	       kn->loaded_version[0] ? kn->loaded_version : "none", "sig_enforce",
	       kn->trust.sig_enforce, "lockdown", kn->trust.lockdown, "secure_boot",
	       kn->trust.secure_boot, U64("duration_ms", ms_since(t0)), LOG_END);
	*ret = TAKE_PTR(kn);
	return 0;
}

const char *kernel_busy_reason(const struct kernel *kn)
{
	return kn->busy[0] ? kn->busy : NULL;
}

/* The live value of parameter KEY of MODULE ('-' read as '_'), into BUF; false if unseen. */
static bool live_param(const struct kernel *kn, const char *module, const char *key, char *buf,
		       size_t size)
{
	char path[512], mod[64];
	_cleanup_free_ char *text = NULL;

	snprintf(mod, sizeof(mod), "%s", module);
	kmods_normalise_name(mod);
	snprintf(path, sizeof(path), "/sys/module/%s/parameters/%s", mod, key);
	text = fs_read_in_root(kn->root_fd, path, 4096, NULL);
	if (text) {
		snprintf(buf, size, "%.*s", (int)strcspn(text, "\n"), text);
		return true;
	}
	/*
	 * nvidia's registry keys: "Key: value" lines of /proc/driver/nvidia/params. Its
	 * string parameters (not in sysfs) show there quoted: "RegistryDwords: \"a=1\"".
	 */
	if (strcmp(mod, "nvidia") != 0 || strncmp(key, "NVreg_", 6) != 0)
		return false;
	text = fs_read_in_root(kn->root_fd, "/proc/driver/nvidia/params", 1 << 16, NULL);
	for (char *line = text, *next; line && *line; line = next) {
		size_t klen = strlen(key + 6);

		next = line + strcspn(line, "\n");
		if (*next)
			*next++ = '\0';
		if (strncmp(line, key + 6, klen) == 0 && line[klen] == ':') {
			const char *v = line + klen + 1 + strspn(line + klen + 1, " \t");
			size_t vlen = strlen(v);

			if (vlen >= 2 && v[0] == '"' && v[vlen - 1] == '"')
				snprintf(buf, size, "%.*s", (int)(vlen - 2), v + 1);
			else
				snprintf(buf, size, "%s", v);
			return true;
		}
	}
	return false;
}

/* MODULE.KEY=VALUE into MOD and KEY; VALUE is returned, or NULL for another shape. */
static const char *split_arg(const char *a, char mod[64], char key[128])
{
	const char *dot = strchr(a, '.'), *eq = dot ? strchr(dot, '=') : NULL;

	if (!dot || !eq || (size_t)(dot - a) >= 64 || (size_t)(eq - dot - 1) >= 128)
		return NULL;
	snprintf(mod, 64, "%.*s", (int)(dot - a), a);
	snprintf(key, 128, "%.*s", (int)(eq - dot - 1), dot + 1);
	return eq + 1;
}

/*
 * The record of the live driver's load (kargs.h) into *RET when it describes this very
 * driver (its version, and its flavour where both are known); false when there is none
 * (a driver loaded by hand, by an older installer, or the record damaged).
 */
static bool load_record(const struct kernel *kn, struct kargs_record *ret)
{
	struct err e;
	int r;

	err_clear(&e);
	if (!kn->loaded_version[0])
		return false;
	r = kargs_read(kn->root_fd, ret, &e);
	if (r < 0)
		log_kv(LOG_WARN, "kernel",
		       "the module parameters record cannot be used: comparing with what the kernel shows",
		       "reason", e.msg, LOG_END);
	if (r != 0)
		return false;
	if (strcmp(ret->driver_version, kn->loaded_version) == 0 &&
	    (!ret->module_type[0] || !kn->loaded_type[0] ||
	     strcmp(ret->module_type, kn->loaded_type) == 0))
		return true;
	kargs_record_done(ret);
	return false;
}

/* The driver went out: its record goes too (a stale one is refused by version anyway). */
static void record_forget(const struct kernel *kn)
{
	struct err e;

	err_clear(&e);
	if (kargs_remove(kn->root_fd, &e) < 0)
		log_kv(LOG_WARN, "kernel", "the module parameters record could not be removed",
		       "reason", e.msg, LOG_END);
}

/* Without a record: the named parameters against what the kernel shows for them. */
static bool live_args_differ(const struct kernel *kn, char *buf, size_t size)
{
	size_t len = 0, n;
	char *const *args = load_args(kn, &n);

	for (size_t i = 0; i < n; i++) {
		char mod[64], key[128], live[256];
		const char *value = split_arg(args[i], mod, key);

		if (!value || !live_param(kn, mod, key, live, sizeof(live)) ||
		    strcmp(live, value) == 0)
			continue;
		if (len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s%s.%s: %s -> %s",
						len ? ", " : "", mod, key,
						live[0] ? live : "(default)", value);
	}
	return buf[0] != '\0';
}

bool kernel_args_differ(const struct kernel *kn, const char *version, char *buf, size_t size)
{
	struct kargs_record rec = {.driver_version = ""};
	size_t n;
	char *const *args = load_args(kn, &n);
	bool differ;

	buf[0] = '\0';
	if (!kn->loaded_version[0] || strcmp(kn->loaded_version, version) != 0)
		return false;
	if (!load_record(kn, &rec))
		return live_args_differ(kn, buf, size);
	differ = kargs_diff(rec.args.v, rec.args.n, args, n, buf, size);
	kargs_record_done(&rec);
	return differ;
}

int kernel_previous_args(const struct kernel *kn, struct strv *ret)
{
	struct kargs_record rec = {.driver_version = ""};
	int r = 0;

	if (load_record(kn, &rec)) {
		/* The set to load is the request's: a module left out of it takes nothing. */
		for (size_t i = 0; i < rec.args.n && r == 0; i++) {
			char mod[64], key[128];

			if (!split_arg(rec.args.v[i], mod, key))
				continue;
			kmods_normalise_name(mod);
			if (kmods_set_has(&kn->set, mod))
				r = strv_push(ret, rec.args.v[i]);
		}
		kargs_record_done(&rec);
		return r;
	}
	size_t n;
	char *const *args = load_args(kn, &n);

	for (size_t i = 0; i < n; i++) {
		char mod[64], key[128], live[256], arg[512], kv[512];
		struct err e;

		/* An empty live value is the default (a string parameter not given). */
		if (!split_arg(args[i], mod, key) ||
		    !live_param(kn, mod, key, live, sizeof(live)) || !live[0])
			continue;
		snprintf(arg, sizeof(arg), "%s.%s=%s", mod, key, live);
		/* One the load cannot give (a space: loaded by hand) would fail the restore. */
		err_clear(&e);
		if (kmods_parse_arg(arg, mod, sizeof(mod), kv, sizeof(kv), &e) < 0) {
			log_kv(LOG_WARN, "kernel",
			       "a live module parameter cannot be given again: a restore leaves it at its default",
			       "reason", e.msg, LOG_END);
			continue;
		}
		if ((r = strv_push(ret, arg)) < 0)
			return r;
	}
	return 0;
}

/* The live driver out, and with it its record and what KN knew of it. */
static int unload_live(struct kernel *kn, struct err *e)
{
	if (kmods_unload_driver(kn->k, e) < 0)
		return err_wrap(e, "kernel");
	record_forget(kn);
	kn->loaded_version[0] = '\0';
	kn->loaded_type[0] = '\0';
	return 0;
}

int kernel_unload_current(struct kernel *kn, struct err *e)
{
	if (check_idle(&kn->o, kn->k, e) < 0)
		return err_wrap(e, "kernel: nvidia %s is loaded", kn->loaded_version);
	log_kv(LOG_INFO, "kernel", "unloading the driver to load it with new parameters", "version",
	       kn->loaded_version, LOG_END);
	if (unload_live(kn, e) < 0)
		return -1;
	/* Every module of the set is to be inserted again. */
	for (size_t i = 0; i < kn->set.n; i++)
		kn->set.e[i].was_live = false;
	return 0;
}

bool kernel_will_reload(const struct kernel *kn)
{
	return kn->reload;
}

const char *kernel_loaded_version(const struct kernel *kn)
{
	return kn->loaded_version[0] ? kn->loaded_version : NULL;
}

const char *kernel_loaded_module_type(const struct kernel *kn)
{
	return kn->loaded_type[0] ? kn->loaded_type : NULL;
}

void kernel_predict(struct kernel *kn, int install_fd, int drivers_fd,
		    const struct kernel_signer *signer, struct ktrust_prediction *ret)
{
	struct ktrust_modules m = {.other_fs = -1};
	struct modsig_result sig = {0};
	_cleanup_close_ int fd = -1;
	struct err e;

	err_clear(&e);
	if (drivers_fd >= 0)
		fd = openat(drivers_fd, "nvidia.ko", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	/* With the pinned certificates: the one that signed it says which key id is its own. */
	if (fd >= 0 && modsig_check_fd(fd, kn->certs, &sig, &e) == 0) {
		m.known = true;
		m.is_signed = sig.is_signed;
		m.named_by_skid = sig.named_by_skid;
		snprintf(kn->signer, sizeof(kn->signer), "%s", sig.signer);
		snprintf(kn->key_id, sizeof(kn->key_id), "%s", sig.key_id);
		snprintf(kn->cert_kernel_id, sizeof(kn->cert_kernel_id), "%s", sig.cert_kernel_id);
	} else if (signer && signer->subject && signer->key_id) {
		/* Not unpacked yet: the index's word, checked again on the files before loading. */
		m.known = true;
		m.is_signed = true;
		snprintf(kn->signer, sizeof(kn->signer), "%s", signer->subject);
		snprintf(kn->key_id, sizeof(kn->key_id), "%s", signer->key_id);
		if (modsig_certs_kernel_id(kn->certs, signer->sha256, kn->cert_kernel_id,
					   sizeof(kn->cert_kernel_id)) == 0)
			kn->cert_kernel_id[0] = '\0';
	}
	m.signer = kn->signer;
	m.key_id = kn->key_id;
	m.cert_kernel_id = kn->cert_kernel_id;
	m.other_fs = kmods_other_fs(kn->k, fd >= 0 ? fd : install_fd);
	ktrust_predict(&kn->trust, &m, &kn->prediction);
	kn->has_prediction = true;
	*ret = kn->prediction;
}

const struct ktrust_prediction *kernel_prediction(const struct kernel *kn)
{
	return kn->has_prediction ? &kn->prediction : NULL;
}

void kernel_describe(const struct kernel *kn, FILE *out)
{
	const struct kernel_opts *o = &kn->o;
	size_t n_certs = modsig_certs_count(kn->certs);

	const struct ktrust_prediction *p = &kn->prediction;

	out_line(out, "  kernel:      sig_enforce %s, lockdown %s, Secure Boot %s, LoadPin %s",
		 kn->trust.sig_enforce, kn->trust.lockdown, kn->trust.secure_boot,
		 kn->trust.loadpin);
	out_line(out, "  kernel keys: %zu in %s", kn->trust.n_keys,
		 !kn->trust.has_keys	 ? "(no /proc/keys)"
		 : kn->trust.keyrings[0] ? kn->trust.keyrings
					 : "(no trusted keyring shown)");
	out_line(out, "  loaded:      nvidia %s",
		 kn->loaded_version[0] ? kn->loaded_version : "not loaded");
	out_line(out, "  modules:     %s%s",
		 o->n_modules ? "as --modules lists" : KERNEL_DEFAULT_MODULES,
		 o->n_module_args ? " (with --module-arg)" : "");
	if (n_certs)
		out_line(
			out,
			"  signatures:  checked against %zu pinned certificate(s) before insertion",
			n_certs);
	else
		out_line(
			out, "  signatures:  not checked (no --module-cert)%s",
			ktrust_enforces(&kn->trust)
				? "; the kernel enforces signatures and will refuse untrusted modules"
				: "");
	if (!kn->has_prediction)
		return;
	out_line(out, "  will load:   %s: %s", ktrust_verdict_name(p->verdict), p->why);
	if (p->need[0])
		out_line(out, "  needs:       %s", p->need);
}

/*
 * After a load that inserted modules: records the arguments this load gave each module
 * it inserted (INSERTED[i] for the set's entry i); a module left live keeps what the
 * record said of it. With part of the driver live and no record of it (FRESH false),
 * what that part runs with is not known: no record then (the live comparison serves).
 */
static void record_load(struct kernel *kn, const bool *inserted, bool fresh)
{
	struct kargs_record old = {.driver_version = ""}, rec = {.driver_version = ""};
	bool has_old = !fresh && load_record(kn, &old);
	struct err e;
	int r = 0;

	err_clear(&e);
	if (!fresh && !has_old) {
		record_forget(kn);
		return;
	}
	snprintf(rec.driver_version, sizeof(rec.driver_version), "%s", kn->version);
	if (kmods_loaded_module_type(kn->k, "nvidia", rec.module_type, sizeof(rec.module_type)) < 0)
		rec.module_type[0] = '\0';
	for (size_t i = 0; i < kn->set.n && r == 0; i++) {
		const char *name = kn->set.e[i].name;
		char opts[sizeof(kn->set.e[i].options)], arg[600], *save = NULL;
		size_t nlen = strlen(name);
		unsigned gd = strcmp(name, "gdrdrv") == 0      ? KMODS_GDRDRV
			      : strcmp(name, "nvidia_fs") == 0 ? KMODS_NVIDIA_FS
							       : 0u;

		/* Ours when this load inserted it, or the last one of ours did. */
		rec.gpudirect |= gd & (inserted[i] ? gd : old.gpudirect);

		if (!inserted[i]) {
			for (size_t j = 0; j < old.args.n && r == 0; j++)
				if (strncmp(old.args.v[j], name, nlen) == 0 &&
				    old.args.v[j][nlen] == '.')
					r = strv_push(&rec.args, old.args.v[j]);
			continue;
		}
		snprintf(opts, sizeof(opts), "%s", kn->set.e[i].options);
		for (char *t = strtok_r(opts, " ", &save); t && r == 0;
		     t = strtok_r(NULL, " ", &save)) {
			snprintf(arg, sizeof(arg), "%s.%s", name, t);
			r = strv_push(&rec.args, arg);
		}
	}
	if (r < 0 || kargs_write(kn->root_fd, &rec, &e) < 0) {
		log_kv(LOG_WARN, "kernel",
		       "the module parameters of this load are not recorded: later changes are compared with what the kernel shows",
		       "reason", r < 0 ? "out of memory" : e.msg, LOG_END);
		record_forget(kn);
	}
	kargs_record_done(&old);
	kargs_record_done(&rec);
}

int kernel_unload_old(struct kernel *kn, struct err *e)
{
	if (!kn->reload)
		return 0;
	log_kv(LOG_INFO, "kernel", "unloading the loaded driver", "version", kn->loaded_version,
	       "module_type", kn->loaded_type[0] ? kn->loaded_type : "unknown", LOG_END);
	return unload_live(kn, e);
}

int kernel_load(struct kernel *kn, const char *install_dir, struct err *e)
{
	struct devnodes_report dr;
	uint64_t t0 = now_ns(), insert0 = kmods_insert_ns(kn->k), t_nodes;
	bool inserted[KMODS_MAX], fresh = kmods_get_state(kn->k, "nvidia") != KMODS_LIVE;
	int loaded, r;

	kn->times = (struct kernel_load_times){0};

	if (kmods_resolve_conflicts(kn->k, !kn->o.no_unload_conflicts, false, e) < 0)
		return err_wrap(e, "kernel");
	if (kn->o.keyring_cert && ktrust_add_cert(kn->root_fd, kn->o.keyring_cert, e) < 0)
		return err_wrap(e, "kernel");
	if (firmware_expose(kn->root_fd, install_dir, kn->version, e) < 0)
		return -1;
	for (size_t i = 0; i < kn->set.n; i++)
		inserted[i] = kmods_get_state(kn->k, kn->set.e[i].name) != KMODS_LIVE;
	/* A record left without its driver (unloaded by hand) describes nothing. */
	if (fresh)
		record_forget(kn);
	loaded = kmods_load_set(kn->k, &kn->set, &kn->trust, e);
	/* What this load inserted of GDRCopy and GDS is ours, to take out on a rollback too. */
	for (size_t i = 0; loaded >= 0 && i < kn->set.n; i++) {
		if (inserted[i] && strcmp(kn->set.e[i].name, "gdrdrv") == 0)
			kmods_claim_gpudirect(kn->k, KMODS_GDRDRV);
		if (inserted[i] && strcmp(kn->set.e[i].name, "nvidia_fs") == 0)
			kmods_claim_gpudirect(kn->k, KMODS_NVIDIA_FS);
	}
	kn->times.insert_us = (kmods_insert_ns(kn->k) - insert0) / 1000u;
	if (loaded < 0)
		return err_wrap(e, "kernel");
	t_nodes = now_ns();
	r = devnodes_sync(kn->root_fd, kmods_set_has(&kn->set, "nvidia_modeset"),
			  (kmods_set_has(&kn->set, "gdrdrv") ? DEVNODES_GDRDRV : 0u) |
				  (kmods_set_has(&kn->set, "nvidia_fs") ? DEVNODES_NVIDIA_FS : 0u),
			  kn->o.imex_channel0, &dr, e);
	kn->times.devices_us = us_since(t_nodes);
	if (r < 0) {
		struct err ue;

		/* A driver without its nodes is half an install: take it out again. */
		err_clear(&ue);
		if (kmods_unload_driver(kn->k, &ue) < 0)
			log_msg(LOG_WARN, "kernel", "rollback: %s", ue.msg);
		else
			record_forget(kn);
		return -1;
	}
	if (loaded > 0)
		record_load(kn, inserted, fresh);
	load_peermem(kn);
	log_kv(LOG_INFO, "devices", "device nodes in place", U64("created", dr.created),
	       U64("replaced", dr.replaced), U64("fixed", dr.fixed), U64("kept", dr.kept),
	       U64("links", dr.links), LOG_END);
	log_kv(LOG_INFO, "kernel", loaded ? "driver loaded" : "driver already loaded", "version",
	       kn->version, U64("modules_loaded", loaded), U64("duration_ms", ms_since(t0)),
	       LOG_END);
	return 0;
}

const struct kernel_load_times *kernel_load_times(const struct kernel *kn)
{
	return &kn->times;
}

int kernel_remove(const struct kernel_opts *o, int root_fd, const char *release, bool dry,
		  struct err *e)
{
	_cleanup_(kernel_freep) struct kernel *kn = NULL;

	if (kernel_probe(o, root_fd, release, &kn, e) < 0)
		return err_wrap(e, "kernel");
	if (kn->loaded_version[0] && check_idle(o, kn->k, e) < 0)
		return err_wrap(e, "kernel");
	if (dry)
		return 0;
	if (kn->loaded_version[0] && kmods_unload_driver(kn->k, e) < 0)
		return err_wrap(e, "kernel");
	/* The record is advisory (a stale one is discarded at the next fresh load). */
	record_forget(kn);
	if (devnodes_remove(root_fd, o->imex_channel0, e) < 0 ||
	    firmware_withdraw(root_fd, o->install_dir, e) < 0)
		return -1;
	log_kv(LOG_INFO, "kernel", "driver unloaded", "version",
	       kn->loaded_version[0] ? kn->loaded_version : "none loaded", LOG_END);
	return 0;
}
