# SPDX-License-Identifier: Apache-2.0
# One non-recursive Makefile. Objects go to $(BUILD); `make SANITIZE=1 BUILD=build-asan`
# builds the same tree under ASan and UBSan.

# ARCH: the machine the build is for, amd64 (native) or arm64 (cross-built on an amd64
# host with Debian's aarch64-linux-gnu toolchain and the :arm64 development packages,
# objects in build-arm64, the unit tests run under qemu-user: docs/hacking.md).
ARCH ?= amd64
ifeq ($(ARCH),arm64)
ifeq ($(origin CC),default)
CC := aarch64-linux-gnu-gcc
endif
BUILD ?= build-arm64
PKG_CONFIG := PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig pkg-config
# Each test binary through qemu-user, the arm64 loader and libraries from their multiarch
# paths (-L /): no binfmt_misc registration, nothing changed on the host.
RUN_TARGET := qemu-aarch64 -L /
MULTIARCH := aarch64-linux-gnu
STRIP := aarch64-linux-gnu-strip
else ifeq ($(ARCH),amd64)
CC ?= cc
BUILD ?= build
PKG_CONFIG := pkg-config
RUN_TARGET :=
MULTIARCH := x86_64-linux-gnu
STRIP := strip
else
$(error ARCH=$(ARCH): give amd64 or arm64)
endif
SANITIZE ?= 0
# The release, from the VERSION file (docs/releasing.md), and the commit it is built from:
# HEAD's abbreviated hash, "-dirty" with uncommitted changes. Outside a git checkout (a
# tarball, the Dockerfile's build stage, which gets no .git) the builder may say which
# commit it was (make COMMIT=...); else "unknown". Both reach the objects through a
# generated header, $(BUILD)/gen/build_info.h, rewritten only when they change.
VERSION := $(shell cat VERSION)
ifneq ($(wildcard .git),)
COMMIT ?= $(shell git describe --always --dirty --exclude='*' 2>/dev/null)
endif
COMMIT := $(or $(COMMIT),unknown)

# Quiet by default: one line per step ("  CC      build/installer/x.o"); `make V=1` shows
# the commands; `make -s` neither, only what a person must read (test results, errors).
# SILENT: "s" under -s, which the sub-makes get in MAKEFLAGS too.
V ?= 0
SILENT := $(findstring s,$(firstword -$(MAKEFLAGS)))
ifeq ($(V),1)
Q :=
say :=
else
Q := @
say = $(if $(SILENT),,@printf '  %-7s %s\n' '$(1)' '$(2)';)
MAKEFLAGS += --no-print-directory
endif

# libcurl, libarchive, libzstd, libkmod and libmount are compiled against but not linked:
# the binary loads them when it first downloads, unpacks, works on modules or mounts
# (installer/util/dlib.h), so that a re-run needing none of them does not pay for loading
# them and the libraries behind them.
PKGS_LINKED := libcrypto json-c
PKGS_LOADED := libcurl libarchive libzstd libkmod mount
# Deferred (=), so that a `make check` which first installs the -dev packages still works.
PKG_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(PKGS_LINKED) $(PKGS_LOADED))
PKG_LIBS = $(shell $(PKG_CONFIG) --libs $(PKGS_LINKED))
CMOCKA_LIBS = $(shell $(PKG_CONFIG) --libs cmocka)

WARNINGS := -Wall -Wextra -Wshadow -Wformat=2 -Wmissing-prototypes -Wstrict-prototypes \
	-Wvla -Wwrite-strings -Wconversion -Wsign-conversion -Wno-missing-field-initializers -Werror
ifeq ($(SANITIZE),1)
OPT := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
SAN_LDFLAGS := -fsanitize=address,undefined
else ifeq ($(SANITIZE),fuzz)
# libFuzzer (clang): the library is instrumented for coverage, the targets link the driver.
OPT := -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=all
SAN_LDFLAGS := -fsanitize=address,undefined
else
OPT := -O2 -g -D_FORTIFY_SOURCE=2
SAN_LDFLAGS :=
endif
CFLAGS ?=
# The reference documents messages and --help name, where the image and `make install` put
# them (installer/util/err.h, DOC_DIR): a node has no source tree to point at.
DOCDIR ?= /usr/share/doc/nvidia-driver-installer
DOCS_SHIPPED := docs/benchmark-oci.md docs/benchmark-supply.md docs/benchmarks.md \
	docs/building-packages.md docs/command-line.md docs/dra.md \
	docs/configuration.md docs/design.md docs/exit-codes.md docs/hacking.md docs/json.md \
	docs/metrics.md docs/operations.md docs/reliability.md docs/releasing.md \
	docs/repository-format.md docs/testing.md docs/troubleshooting.md docs/feeds.md
CPPFLAGS += -Iinstaller -I$(BUILD)/gen -DINSTALLER_DOC_DIR='"$(DOCDIR)"' -D_GNU_SOURCE
ALL_CFLAGS = -std=gnu11 $(OPT) $(WARNINGS) -pthread -fstack-protector-strong -fPIE -MMD -MP \
	$(PKG_CFLAGS) $(CFLAGS)
ALL_LDFLAGS = -pie -Wl,-z,relro,-z,now -pthread $(SAN_LDFLAGS) $(LDFLAGS)

# The stage folders, lowest first (docs/hacking.md; scripts/check-layers holds the order).
STAGE_DIRS := host source stage kernel expose kube agent
LIB_SRCS := $(filter-out installer/cmd/main.c,\
	$(wildcard installer/cmd/*.c $(STAGE_DIRS:%=installer/%/*.c) installer/util/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
MAIN_OBJ := $(BUILD)/installer/cmd/main.o
LIB := $(BUILD)/libinstaller.a
BIN := $(BUILD)/nvidia-driver-installer
TYPECHECK := $(BUILD)/typecheck/fetch.o $(BUILD)/typecheck/client.o
BUILD_INFO := $(BUILD)/gen/build_info.h
# Programs the container runtime runs on the host for our CDI spec, whatever the host's
# OS: static, never sanitized, shipped into the install dir (installer/stage/libexec.h).
# ldconfig is Debian's (static-pie), run by the hook on the container's root. The
# launcher stands in bin/ for each of the driver's dynamically linked programs
# (installer/stage/wrap.h): it runs on the host, in containers and in driver roots alike.
HELPERS_DIR := $(BUILD)/libexec/nvidia-driver-installer
HELPERS := $(HELPERS_DIR)/nvidia-cdi-hook $(HELPERS_DIR)/ldconfig $(HELPERS_DIR)/launcher
HELPER_CFLAGS := -std=gnu11 -O2 -g -D_FORTIFY_SOURCE=2 $(WARNINGS) -fstack-protector-strong -fPIE

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
# The fake kernel is preloaded into the binary under test; it is never sanitised itself.
FAKEKERNEL := $(BUILD)/tools/fakekernel.so
CRASHPOINT := $(BUILD)/tools/crashpoint.so

FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)
FUZZ_SECONDS ?= 60

.PHONY: FORCE all check check-real unit script-unit integration packaging asan vm image-test \
	demo deps format format-check lint clean install install-docs image-rootfs \
	image-multiarch release fuzz fuzz-replay fuzz-bins fleet reliability-report bench \
	bench-supply bench-oci golden-refresh standin-imex
.DEFAULT_GOAL := all
FORCE:
# Keep test objects between runs.
.SECONDARY:

all: $(BIN) $(TYPECHECK) $(HELPERS)

# The release and the commit, for --version, the User-Agent, the metrics and status --json.
# Rewritten only when they change, so that only the objects that include it are rebuilt;
# the temporary file is the shell's own (make check runs two makes at once).
$(BUILD_INFO): FORCE
	@mkdir -p $(@D)
	@{ echo '/* Made by the Makefile: the VERSION file and the commit. */'; \
		printf '#define INSTALLER_VERSION "%s"\n#define INSTALLER_COMMIT "%s"\n' \
		'$(VERSION)' '$(COMMIT)'; } >$@.$$$$; \
		if cmp -s $@.$$$$ $@; then rm $@.$$$$; else mv $@.$$$$ $@; fi

$(BUILD)/%.o: %.c | $(BUILD_INFO)
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c -o $@ $<

# fetch.c and kube/client.c once more, calling curl_easy_setopt directly, for curl's
# compile-time check of its argument types, which calls through a pointer lose
# (installer/util/dlib.h). The check
# warns from curl's own (system) header: -Wsystem-headers shows it, and only it fails.
# The project's warnings are not asked for here (fetch.c's own compile has them, as
# errors): in system headers they would only print glibc's conversions.
$(BUILD)/typecheck/fetch.o: installer/source/fetch.c
$(BUILD)/typecheck/client.o: installer/kube/client.c
$(TYPECHECK): | $(BUILD_INFO)
	@mkdir -p $(@D)
	$(call say,CHECK,$@)
	$(Q)$(CC) $(CPPFLAGS) -DDLIB_TYPECHECK -std=gnu11 $(OPT) -pthread -fPIE -MMD -MP \
		$(PKG_CFLAGS) $(CFLAGS) -Wsystem-headers -Werror=attribute-warning -c -o $@ \
		$(filter %.c,$^)

$(LIB): $(LIB_OBJS)
	@rm -f $@
	$(call say,AR,$@)
	$(Q)ar rcs $@ $^

$(BIN): $(MAIN_OBJ) $(LIB) | $(HELPERS)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS)

# The hook's files (installer/helpers/cdi-hook*.c, its own header cdi-hook.h) into one
# static program.
CDI_HOOK_SRCS := $(wildcard installer/helpers/cdi-hook*.c)
$(HELPERS_DIR)/nvidia-cdi-hook: $(CDI_HOOK_SRCS) installer/helpers/cdi-hook.h
	@mkdir -p $(@D)
	$(call say,CCLD,$@)
	$(Q)$(CC) -D_GNU_SOURCE -Iinstaller $(HELPER_CFLAGS) $$($(PKG_CONFIG) --cflags json-c) \
		-static-pie -Wl,-z,relro,-z,now -o $@ $(CDI_HOOK_SRCS) \
		$$($(PKG_CONFIG) --static --libs json-c)

$(HELPERS_DIR)/launcher: installer/helpers/launcher.c
	@mkdir -p $(@D)
	$(call say,CCLD,$@)
	$(Q)$(CC) -D_GNU_SOURCE $(HELPER_CFLAGS) -static-pie -s -Wl,-z,relro,-z,now -o $@ $<
	@readelf -l $@ | grep -q INTERP && { echo "$@: not static" >&2; exit 1; } || true

# The target's ldconfig: the host's, or for arm64 that of libc-bin:arm64, which cannot be
# installed beside the host's own: its .deb, of the installed libc6:arm64's version, is
# fetched by apt and unpacked under $(BUILD)/debs, its control file beside (the image's
# record of the package, scripts/image-rootfs).
ifeq ($(ARCH),arm64)
LDCONFIG_SRC := $(BUILD)/debs/libc-bin/sbin/ldconfig
LDCONFIG_CONTROL := $(BUILD)/debs/libc-bin.control
$(LDCONFIG_SRC): $(LDCONFIG_CONTROL)
$(LDCONFIG_CONTROL):
	$(call say,FETCH,libc-bin:arm64)
	$(Q)rm -rf $(BUILD)/debs/libc-bin && mkdir -p $(BUILD)/debs
	$(Q)cd $(BUILD)/debs && rm -f libc-bin_*_arm64.deb && \
		apt-get download -q=2 \
		"libc-bin:arm64=$$(dpkg-query -W -f='$${Version}' libc6:arm64)" \
		2>/dev/null && dpkg-deb -x libc-bin_*_arm64.deb libc-bin && \
		dpkg-deb -f libc-bin_*_arm64.deb >libc-bin.control && rm libc-bin_*_arm64.deb
else
LDCONFIG_SRC := /sbin/ldconfig
LDCONFIG_CONTROL :=
endif
$(HELPERS_DIR)/ldconfig: $(LDCONFIG_SRC)
	@mkdir -p $(@D)
	@readelf -l $< | grep -q INTERP && { echo "$<: not static" >&2; exit 1; } || true
	$(call say,INSTALL,$@)
	$(Q)install -m 0755 $< $@

# The image's libarchive: the objects of Debian's libarchive.a that the symbols the
# installer loads (installer/util/dlib.c) pull in, and nothing else: the tar and raw
# readers and the zstd, xz and gzip filters, exporting only those symbols. Debian's
# libarchive.so.13 links libxml2, and through it 31 MB of ICU data, for formats never read.
IMAGE_ARCHIVE := $(BUILD)/image/libarchive.so.13
$(IMAGE_ARCHIVE): installer/util/dlib.c
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)syms=$$(sed -n 's/^DLSYM_PROTOTYPE(\(archive_[a-z_]*\));$$/\1/p' $<); \
		{ echo '{ global:'; printf '  %s;\n' $$syms; echo 'local: *; };'; } >$@.map; \
		$(CC) -shared -o $@ -Wl,-soname,libarchive.so.13 -Wl,-z,relro,-z,now \
		-Wl,--version-script=$@.map -Wl,--gc-sections $$(printf -- '-Wl,-u,%s ' $$syms) \
		$$($(PKG_CONFIG) --variable=libdir libarchive)/libarchive.a -lzstd -llzma -lz
	$(Q)! readelf -d $@ | grep -E 'NEEDED.*(xml2|icu|crypto|nettle|acl|bz2|lz4)'

# The image's file system (scripts/image-rootfs), which the Dockerfile copies into an
# empty image.
image-rootfs: $(BIN) $(HELPERS) $(IMAGE_ARCHIVE) $(LDCONFIG_CONTROL)
	MULTIARCH=$(MULTIARCH) STRIP=$(STRIP) RUN_TARGET='$(RUN_TARGET)' \
		LDCONFIG_SRC=$(LDCONFIG_SRC) LDCONFIG_CONTROL=$(LDCONFIG_CONTROL) \
		scripts/image-rootfs $(BUILD) $(BUILD)/rootfs $(DOCS_SHIPPED)

# test_zframes writes its zstd streams with libzstd's compressor.
$(BUILD)/tests/test_zframes: TEST_LIBS = $(shell $(PKG_CONFIG) --libs libzstd)
$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(LIB)
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(PKG_LIBS) $(TEST_LIBS)

# The stand-in IMEX daemon and control tool (tests/standin/imex.c, one program named two
# ways), static so that they run in a chroot or container holding nothing else; never
# sanitized. make ARCH=arm64 cross-builds them into build-arm64/tools/standin-imex/.
STANDIN_IMEX := $(BUILD)/tools/standin-imex/nvidia-imex $(BUILD)/tools/standin-imex/nvidia-imex-ctl
$(BUILD)/tools/standin-imex/nvidia-imex: tests/standin/imex.c
	@mkdir -p $(@D)
	$(call say,CCLD,$@)
	$(Q)$(CC) -std=gnu11 -O2 -g -D_GNU_SOURCE $(WARNINGS) -static -o $@ $<
	@readelf -l $@ | grep -q INTERP && { echo "$@: not static" >&2; exit 1; } || true
$(BUILD)/tools/standin-imex/nvidia-imex-ctl: $(BUILD)/tools/standin-imex/nvidia-imex
	$(Q)ln -f $< $@
standin-imex: $(STANDIN_IMEX)

$(FAKEKERNEL): tests/tools/fakekernel.c
	@mkdir -p $(@D)
	$(call say,CCLD,$@)
	$(Q)$(CC) -std=gnu11 -O2 -g $(WARNINGS) -fPIC -shared -o $@ $< -ldl

# Never sanitized: it is preloaded into the ASan build too.
$(CRASHPOINT): tests/tools/crashpoint.c
	@mkdir -p $(@D)
	$(call say,CCLD,$@)
	$(Q)$(CC) -std=gnu11 -O2 -g $(WARNINGS) -fPIC -shared -o $@ $< -ldl

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(LIB)
	@mkdir -p $(@D)
	$(call say,CCLD,$@)
	$(Q)$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -fsanitize=fuzzer -o $@ $< $(LIB) $(PKG_LIBS)

fuzz-bins: $(FUZZ_BINS)

# The committed corpora (tests/fuzz/corpus/TARGET), each input run once: make check.
fuzz-replay:
	$(MAKE) BUILD=build-fuzz SANITIZE=fuzz CC=clang fuzz-bins
	@set -e; for t in $(FUZZ_TARGETS); do \
		build-fuzz/fuzz/fuzz_$$t -runs=0 tests/fuzz/corpus/$$t \
			2>build-fuzz/replay-$$t.log || \
			{ tail -30 build-fuzz/replay-$$t.log; exit 1; }; \
		echo "fuzz-replay: $$t: $$(ls tests/fuzz/corpus/$$t | wc -l) inputs, no crash"; \
	done

# Fuzzing proper, FUZZ_SECONDS per target; new inputs go to build-fuzz/corpus/TARGET
# (copy the interesting ones into tests/fuzz/corpus), statistics to build-fuzz/stats.
fuzz:
	$(MAKE) BUILD=build-fuzz SANITIZE=fuzz CC=clang fuzz-bins
	@mkdir -p build-fuzz/stats
	@set -e; for t in $(FUZZ_TARGETS); do \
		mkdir -p build-fuzz/corpus/$$t; \
		build-fuzz/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			-artifact_prefix=build-fuzz/crash-$$t- build-fuzz/corpus/$$t \
			tests/fuzz/corpus/$$t 2>build-fuzz/stats/$$t.log || \
			{ tail -40 build-fuzz/stats/$$t.log; exit 1; }; \
		n=$$(sed -n 's/^stat::number_of_executed_units: *//p' build-fuzz/stats/$$t.log); \
		echo "fuzz: $$t: $$n executions in $(FUZZ_SECONDS) s"; \
	done

# 64 installers against one throttled, failing server (tests/scale/fleet.sh).
fleet: $(BIN)
	tests/scale/fleet.sh $(BIN)

# docs/benchmarks.md and its chart, measured anew: a cold install against its slowest stage
# and the shell pipeline, with NVIDIA's real package (built once if check-real has not).
BENCH_ARGS ?=
bench: deps
	$(MAKE) all $(FAKEKERNEL)
	bench/run.py $(BIN) $(FAKEKERNEL) $(BENCH_ARGS)

# docs/benchmark-supply.md, measured anew: a node that asks for a kernel the repository
# lacks, a supply pass that builds and publishes it, the node's install (cold and warm
# build cache; bench/supply.py).
bench-supply: deps
	$(MAKE) all $(FAKEKERNEL)
	bench/supply.py $(BIN) $(FAKEKERNEL) $(BENCH_SUPPLY_ARGS)

# docs/benchmark-oci.md, measured anew: a cold install from an OCI registry beside the same
# package from a static web server, and the requests of a warm re-run (bench/oci.py).
bench-oci: deps
	$(MAKE) all $(FAKEKERNEL)
	bench/oci.py $(BIN) $(FAKEKERNEL) $(BENCH_OCI_ARGS)

# docs/reliability.md, measured anew: fault tests, fuzzing, the fleet.
reliability-report: $(BIN) $(FAKEKERNEL) $(CRASHPOINT)
	scripts/reliability-report $(BIN)

deps:
	@scripts/deps.sh check

# Every program run, then a total line (tests/unit/run.sh); under -s, only the failures'
# output and the total.
unit: $(UNIT_BINS)
	@RUN_TARGET='$(RUN_TARGET)' QUIET=$(if $(SILENT),1,0) tests/unit/run.sh $(UNIT_BINS)

# The installer as it was before module flavours, for t_old_installer (an older installer
# against a both-flavours index: docs/testing.md). Built once from git (about 45 s on two
# cores), then kept under build/compat. It is test data, not the binary under test: one
# plain build serves every BUILD, the ASan run's too.
COMPAT_COMMIT := 47a6795
COMPAT_DIR := build/compat/$(COMPAT_COMMIT)
COMPAT_BIN := $(COMPAT_DIR)/obj/nvidia-driver-installer
$(COMPAT_BIN):
	$(call say,MAKE,$@ (the installer at $(COMPAT_COMMIT)))
	$(Q)rm -rf $(COMPAT_DIR)
	$(Q)mkdir -p $(COMPAT_DIR)/src
	$(Q)git archive $(COMPAT_COMMIT) | tar -x -C $(COMPAT_DIR)/src
	$(Q)$(MAKE) $(if $(Q),-s) -C $(COMPAT_DIR)/src BUILD=$(abspath $(COMPAT_DIR))/obj \
		SANITIZE=0 $(abspath $(COMPAT_BIN))

integration: $(BIN) $(FAKEKERNEL) $(CRASHPOINT) $(COMPAT_BIN) $(STANDIN_IMEX)
	tests/integration/selftest.sh
	tests/integration/run.sh $(BIN) $(FAKEKERNEL)

# The golden files (tests/expected/), rewritten from this build's output after an intended
# change of the text: review and commit what `git diff tests/expected` shows.
golden-refresh: $(BIN) $(FAKEKERNEL)
	NDI_GOLDEN_REFRESH=1 tests/integration/run.sh $(BIN) $(FAKEKERNEL) t_golden

# The unit tests of the Python tools (Python's unittest, tests/scripts/test_*.py):
# scripts/bdp/, build-driver-package's modules (its parsers: ld's command lines, SHA256SUMS,
# a CMS signer, the kernel-devel RPM, Debian's packages fetched; the platform --os
# chooses), scripts/privkey.py (keys: a file or a pkcs11: URI), scripts/supplylib/ (the
# supply pass, its feeds, its API client) and make-repo publish, killed at every step and
# run twice at once (test_publish.py: half a minute; with build/nvidia-driver-installer
# built, its reader checks what is served). make check runs them in the packaging phase.
script-unit:
	$(call say,UNIT,scripts (tests/scripts/test_*.py))
	$(Q)PYTHONDONTWRITEBYTECODE=1 python3 -m unittest discover -s tests/scripts \
		-p 'test_*.py'

# scripts/build-driver-package's COS and Ubuntu paths against stand-ins of Google's and
# Canonical's artifacts (docs/platforms/): kernel-headers.tgz, LLVM=1, detached signatures,
# a linux-modules-nvidia .deb. Needs the installed kernel's headers (half a minute).
packaging: $(BIN) $(STANDIN_IMEX)
	tests/packaging/run.sh $(BIN)

# Debian's kernel under qemu, with stand-in modules signed by a throwaway key.
vm: $(BIN)
	$(MAKE) ARCH=arm64 all
	NDI_VM_ARM64_BIN=build-arm64/nvidia-driver-installer tests/vm/run.sh $(BIN)

# NVIDIA's real driver (Debian's non-free 535.261.03): packages built for the installed
# kernel by scripts/build-driver-package, checked, then inserted under qemu. The fetch and
# the compile happen once per build/real (minutes); CI runs it after `make check`.
check-real: deps
	$(MAKE) all
	$(MAKE) ARCH=arm64 all
	NDI_VM_ARM64_BIN=build-arm64/nvidia-driver-installer tests/real/run.sh $(BIN)

# The Dockerfile, built with buildah and run (no container engine needed).
# It also builds and tests the image for both architectures under one tag, the manifest
# list localhost/nvidia-driver-installer:multi (scripts/image-multiarch: the arm64 image
# from the cross build); make image-multiarch is that name for it. Publish it with
#   buildah manifest push --all localhost/nvidia-driver-installer:multi \
#       docker://REGISTRY/nvidia-driver-installer:TAG
# Then the release of that list, pushed to a registry of the test's own and pulled back
# (tests/release/run.sh, about a minute).
image-multiarch: image-test
image-test:
	$(MAKE) ARCH=arm64 image-rootfs
	COMMIT=$(COMMIT) ARM64_ROOTFS=build-arm64/rootfs scripts/image-test.sh
	COMMIT=$(COMMIT) tests/release/run.sh

# The release (docs/releasing.md): the image built and tested (image-test), then pushed with
# each image's SBOM to REGISTRY/nvidia-driver-installer and the DaemonSets rendered with its
# digest and the repository key into build/release (scripts/release). RELEASE_CERT_DIR and
# RELEASE_AUTHFILE are skopeo's --dest-cert-dir and --dest-authfile, RELEASE_CA one CA file,
# RELEASE_CREDS (USER:PASS, in the environment: scripts/release writes it to a 0600 auth
# file); RELEASE_KEY the repository's public key; the SBOMs' time is the commit's.
RELEASE_TAG ?= $(VERSION)
export RELEASE_CREDS
ifneq ($(filter release,$(MAKECMDGOALS)),)
ifeq ($(REGISTRY),)
$(error make release REGISTRY=HOST[:PORT]/PATH: the registry to push the image to)
endif
ifneq ($(filter %-dirty unknown,$(COMMIT)),)
$(error make release: the tree's commit is $(COMMIT): commit or stash the changes first)
endif
endif
release: image-test
	SOURCE_DATE_EPOCH=$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct)} scripts/release \
		--registry '$(REGISTRY)' --version '$(VERSION)' --commit '$(COMMIT)' \
		--tag '$(RELEASE_TAG)' $(if $(RELEASE_KEY),--key '$(RELEASE_KEY)') \
		$(if $(RELEASE_CA),--ca-file '$(RELEASE_CA)') \
		$(if $(RELEASE_CERT_DIR),--cert-dir '$(RELEASE_CERT_DIR)') \
		$(if $(RELEASE_AUTHFILE),--authfile '$(RELEASE_AUTHFILE)') \
		$(if $(NDI_IMAGE_LIST),--list '$(NDI_IMAGE_LIST)') --out build/release

# The unit and integration suites again, built with ASan and UBSan.
asan:
	$(MAKE) BUILD=build-asan SANITIZE=1 unit integration

# Each phase timed (scripts/check-phases), and a table of the times at the end, green or
# not; the first failing phase fails the check with its status. The phases with no
# wall-clock bound run in the background at nice 19, one after the other, taking the CPU
# the integration suites leave idle waiting on their servers and timers: the lint, the
# unit tests, packaging, the fuzz replay, the ASan build and its unit tests, the arm64
# build and its unit tests beside the plain suite (the ASan suite needs that build; the
# VM test and the image need the arm64 one, which they then only check is up to date);
# the VM test and the image beside the ASan suite, whose tail of
# wall-clock tests run alone leaves most of the CPU idle. The builds run CHECK_JOBS
# compilers at once (the machine's cores), unless `make -jN check` shares its own.
CHECK_JOBS ?= $(shell nproc)
CHECK_J = $(if $(findstring jobserver,$(MAKEFLAGS)),,-j$(CHECK_JOBS))
ASAN_MAKE = $(MAKE) $(CHECK_J) BUILD=build-asan SANITIZE=1
check:
	@scripts/check-phases 'deps=$(MAKE) deps' 'format=$(MAKE) format-check' \
		'build=$(MAKE) $(CHECK_J) all' '&lint=$(MAKE) lint' \
		'&unit=$(MAKE) $(CHECK_J) unit' \
		'&packaging=$(MAKE) script-unit packaging' \
		'&fuzz-replay=$(MAKE) $(CHECK_J) fuzz-replay' \
		'&asan-unit=$(ASAN_MAKE) unit' \
		'&arm64-unit=$(MAKE) ARCH=arm64 $(CHECK_J) all unit' \
		'integration=$(MAKE) $(CHECK_J) integration' wait \
		'&vm=$(MAKE) vm' '&image-test=$(MAKE) image-test' \
		'asan-integration=$(ASAN_MAKE) integration' wait

# Only the demo's packages (scripts/deps.sh demo), not the CI toolchain. The estimate is
# measured in a minimal Debian 12 (mmdebstrap) on 2 cores: 112 s for the packages (165,
# about 200 MB, most of it dpkg and the kernel's initramfs hook), 93 s for the build, the
# stand-in modules and the VM; a re-run 55 s. Under a load of 6 to 8 the same took 378 s
# and 115 s.
demo:
	@echo "make demo: the first run takes about 4 minutes on an idle 2-core machine" \
		"(2 to install Debian's packages for the build and the VM, then building the" \
		"installer and stand-in kernel modules and booting Debian's kernel under qemu);" \
		"later runs about 1 minute"
	@scripts/deps.sh demo
	$(Q)$(MAKE) all
	$(Q)scripts/demo.sh $(BIN)

FORMAT_SRCS = $(wildcard installer/cmd/*.[ch] $(STAGE_DIRS:%=installer/%/*.[ch]) \
	installer/util/*.[ch] installer/helpers/*.[ch] tests/unit/*.[ch] tests/tools/*.c \
	tests/fuzz/*.c tests/standin/imex.c)

format:
	clang-format -i $(FORMAT_SRCS)

format-check:
	$(call say,FORMAT,$(words $(FORMAT_SRCS)) files (clang-format --dry-run))
	$(Q)clang-format --dry-run -Werror $(FORMAT_SRCS)

# cppcheck does not model __attribute__((cleanup)), so its leak reports are noise here;
# leaks are caught by LeakSanitizer in `make asan`.
# check-layers reads the call graph from the objects' symbol tables, so it builds them;
# check-lines holds lines under 100 columns; check-pipes refuses grep -q and head at the end
# of a pipe in a script under pipefail; hacking-doc.py holds hacking.md's folder table to
# the tree and its layer order to check-layers'.
lint: $(BUILD_INFO) $(LIB_OBJS) $(MAIN_OBJ)
	$(call say,LINT,installer (check-layers and cppcheck); lines; pipes; hacking.md)
	$(Q)scripts/check-layers --build $(BUILD)
	$(Q)scripts/check-lines
	$(Q)scripts/check-pipes
	$(Q)python3 tests/tools/hacking-doc.py docs/hacking.md installer scripts/check-layers
	$(Q)cppcheck --quiet --error-exitcode=1 --enable=warning,portability --inline-suppr \
		--suppress=missingIncludeSystem --suppress=memleak -D_GNU_SOURCE -Iinstaller \
		-I$(BUILD)/gen installer

PREFIX ?= /usr/local
install: $(BIN) $(HELPERS) install-docs
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/nvidia-driver-installer
	install -D -m 0755 -t $(DESTDIR)$(PREFIX)/libexec/nvidia-driver-installer $(HELPERS)
install-docs:
	install -D -m 0644 -t $(DESTDIR)$(DOCDIR) $(DOCS_SHIPPED)

clean:
	rm -rf build build-asan build-fuzz

-include $(LIB_OBJS:.o=.d) $(MAIN_OBJ:.o=.d) $(TYPECHECK:.o=.d) \
	$(UNIT_BINS:$(BUILD)/tests/%=$(BUILD)/tests/unit/%.d)
