# SPDX-License-Identifier: Apache-2.0
# nvidia-driver-installer: build on Debian 12, run from a slim Debian 12 image.
#
#   buildah bud -t nvidia-driver-installer \
#       --build-arg VERSION="$(cat VERSION)" --build-arg COMMIT="$(git describe --always --dirty --exclude='*')" .
#                                                 (or docker build; make image-test passes both)
#
# The build stage gets no .git (.dockerignore): the binary takes its release from the VERSION
# file, and the commit from COMMIT ("unknown" without it). VERSION and COMMIT label the image
# (org.opencontainers.image.version and .revision).
#
# The image holds the binary, its static helpers, its runtime libraries, CA certificates,
# libtirpc3 (the persistence daemon the node agent runs links it, as Debian builds it), the
# reference documents its messages name (/usr/share/doc/nvidia-driver-installer) and
# an empty /etc/nvidia-driver-installer/keys for the repository's public key (a ConfigMap in
# the DaemonSet). No compiler and no package cache reach it.

FROM docker.io/library/debian:bookworm-slim AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential pkg-config libcurl4-openssl-dev libssl-dev libkmod-dev libmount-dev \
      libarchive-dev libjson-c-dev libcmocka-dev openssl python3 \
 && rm -rf /var/lib/apt/lists/*
COPY . /src
WORKDIR /src
ARG COMMIT=unknown
# The unit tests run here (test_kube's API server stand-in is Python, its certificates
# openssl's); the integration suites need a host (make check).
RUN make -j"$(nproc)" COMMIT="$COMMIT" all unit

FROM docker.io/library/debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libcurl4 libssl3 libkmod2 libmount1 libarchive13 libjson-c5 ca-certificates libtirpc3 \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log \
 && mkdir -p /etc/nvidia-driver-installer/keys
COPY --from=build /src/build/nvidia-driver-installer /usr/bin/nvidia-driver-installer
# Its static helpers, found beside it (installer/stage/libexec.h): the CDI hook and ldconfig it
# copies to the install dir, and the launcher that stands in bin/ for the driver's programs.
COPY --from=build /src/build/libexec/nvidia-driver-installer /usr/libexec/nvidia-driver-installer
# The documents its messages and --help name, and those they link (the Makefile's
# DOCS_SHIPPED, at its DOCDIR; t_doc_paths): what an exit code means, every option, the
# --json formats, the metrics, the repository format, the runbooks, troubleshooting, the
# design notes and the layout of the source tree.
COPY docs/benchmarks.md docs/building-packages.md docs/command-line.md docs/configuration.md docs/design.md docs/exit-codes.md docs/hacking.md docs/json.md docs/metrics.md docs/operations.md docs/reliability.md docs/releasing.md docs/repository-format.md docs/testing.md docs/troubleshooting.md /usr/share/doc/nvidia-driver-installer/
# Last, so that a new commit does not invalidate the cached layers above.
ARG VERSION=""
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="nvidia-driver-installer" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$COMMIT"
ENTRYPOINT ["/usr/bin/nvidia-driver-installer"]
CMD ["install"]
