/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nvidia-cdi-hook's own header, shared by its files and nothing else (the hook is a static
 * program apart: it includes nothing of the installer's): cdi-hook.c (the command line,
 * the container's state and root, the child that works in it, the dispatch), one file per
 * kind of hook (cdi-hook-ldcache.c: update-ldcache and its soname links; cdi-hook-compat.c:
 * enable-cuda-compat; cdi-hook-files.c: create-symlinks, chmod, update-application-profile,
 * disable-device-node-modification) and the ELF readers two of them share (cdi-hook-elf.c).
 */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CONF_DIR "/etc/ld.so.conf.d"
#define CONF_FILE CONF_DIR "/00-nvidia-driver.conf"
/* Sorts before ours and after a CUDA image's 00-cuda-compat.conf, as NVIDIA's 00-compat-*. */
#define COMPAT_CONF_FILE CONF_DIR "/00-compat-nvidia-driver.conf"
#define TOP_CONF "/etc/ld.so.conf"
#define PROFILE_DIR "/etc/nvidia/nvidia-application-profiles-rc.d"
#define PROFILE_FILE PROFILE_DIR "/10-container.conf"
#define PARAMS "/proc/driver/nvidia/params"
#define MAX_JSON (4u << 20)
/* An ld.so.conf is a few lines; a bigger one is no configuration. */
#define CONF_MAX (64u << 10)
/* The params file is a few hundred bytes. */
#define PARAMS_MAX (64u << 10)
/* The child's deadline without --timeout: below the hook timeout the spec gives (cdi.c). */
#define LDCONFIG_TIMEOUT_S 20
#define LDCONFIG_MAX_TIMEOUT_S 600
/*
 * The child's heap (RLIMIT_DATA): a few MiB serve ldconfig on a large image. Not its address
 * space: ldconfig maps each library whole to read its header (readlib.c), and a CUDA
 * image's libraries run to hundreds of MiB. The cache it writes is smaller than the file
 * limit.
 */
#define CHILD_MEMORY (256ul << 20)
#define CHILD_FILE_SIZE (64ul << 20)
/* The child's exit status when it fails before running ldconfig (it said why): env(1)'s. */
#define CHILD_SETUP_FAILED 125
/* Repeated flags: more than any spec carries (a real one: a few dozen links). */
#define MAX_VALUES 1024
struct values {
	const char *v[MAX_VALUES];
	size_t n;
};

struct opts {
	struct values folder, link, path;
	const char *mode, *ldconfig_path, *timeout, *spec;
	const char *host_driver, *host_cuda, *compat_root;
};

/* "nvidia-cdi-hook: " and FMT on stderr, then exit 1 (125 in the child, before its work). */
_Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* FD read to its end, as a string (to free); NULL on a read error or past about MAX bytes. */
char *read_all(int fd, size_t max);
/* O's string member A (or A's member B), or NULL. */
const char *string_at(json_object *o, const char *a, const char *b);
/* The container's root directory, opened (O_PATH), from the state in SPEC ("" or "-": stdin). */
int open_container_root(const char *spec);
/* In the chroot: PATH replaced by a file holding TEXT, mode MODE; mkdir -p PATH. */
void write_file(const char *path, const char *text, mode_t mode);
void make_dirs(const char *path, mode_t mode);
/*
 * RUN in a child chrooted into the container's root (the state from O's --container-spec),
 * with the capabilities CAPS, until O's --timeout; EXTRA_FD is passed on, or -1. Returns
 * when it succeeded.
 */
void in_root(const struct opts *o, uint32_t caps, const char *what,
	     void (*run)(const struct opts *, int), int extra_fd);

/* The hooks: each runs or dies. */
int update_ldcache(const struct opts *o);
void symlinks_child(const struct opts *o, int unused);
void chmod_child(const struct opts *o, int unused);
void compat_child(const struct opts *o, int unused);
void profile_child(const struct opts *o, int unused);
int disable_device_node_modification(const struct opts *o);

/*
 * The ELF readers (cdi-hook-elf.c): FD's forward-compatibility note as JSON text (to
 * free), or NULL; FD's soname into RET, false where it has none that is a plain file name.
 */
char *read_fwd_note(int fd);
bool read_soname(int fd, char *ret, size_t size);
