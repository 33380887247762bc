# SPDX-License-Identifier: Apache-2.0
"""scripts/release's modules: layout (the release as an OCI image layout: the image index,
the SBOMs as artifacts whose subject is the image, the referrers tag's index) and render
(the DaemonSets pinned to the image's digest and the repository key)."""
