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
# The image is FROM scratch: the build stage assembles its whole file system (make
# image-rootfs, scripts/image-rootfs): the binary, its static helpers (the CDI hook, the
# launcher, ldconfig), the shared libraries it loads and those behind them (libarchive cut
# down to the tar reader and the zstd, xz and gzip filters), libtirpc (the persistence daemon
# the node agent runs links it, as Debian builds it), CA certificates, the reference
# documents its messages name (/usr/share/doc/nvidia-driver-installer) and an empty
# /etc/nvidia-driver-installer/keys for the repository's public key (a ConfigMap in the
# DaemonSet). No shell, package manager, compiler or locale data: make image-test checks
# all of it, and the size against its budget (docs/design.md, "The image").

FROM docker.io/library/debian:bookworm-slim AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential pkg-config libcurl4-openssl-dev libssl-dev libkmod-dev libmount-dev \
      libarchive-dev libzstd-dev liblzma-dev zlib1g-dev libjson-c-dev libcmocka-dev libtirpc3 \
      ca-certificates openssl python3 \
 && rm -rf /var/lib/apt/lists/*
COPY . /src
WORKDIR /src
ARG COMMIT=unknown
# The unit tests run here (test_kube's API server stand-in is Python, its certificates
# openssl's); the integration suites need a host (make check).
RUN make -j"$(nproc)" COMMIT="$COMMIT" all unit image-rootfs

FROM scratch
COPY --from=build /src/build/rootfs/ /
ENV PATH=/usr/bin:/usr/sbin
# Last, so that a new commit does not invalidate the cached layers above.
ARG VERSION=""
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="nvidia-driver-installer" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$COMMIT"
ENTRYPOINT ["/usr/bin/nvidia-driver-installer"]
CMD ["install"]
