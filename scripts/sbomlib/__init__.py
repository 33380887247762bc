# SPDX-License-Identifier: Apache-2.0
"""scripts/sbom's modules: debian (what an image's Debian packages are, from its
/var/lib/dpkg/status.d and copyright files), licences (Debian's licence names as SPDX
expressions) and spdx (the SPDX 2.3 document)."""
