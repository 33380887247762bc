# SPDX-License-Identifier: Apache-2.0
"""build-driver-package's modules (scripts/build-driver-package is the command):

  cli        the command line, the platform chosen by --os, the build record made
  record     the build record (Build) and each flavour's part of it (Flavour)
  base       what a platform is (Platform), and what one does that says nothing otherwise
  platforms  the table of platforms: debian, cos, ubuntu, rhel (one module each)
  sources    the driver's files in the .run layout; the GPUs each flavour supports
  kernel     the kernel's build tree, the toolchain, the modules compiled or taken
  signing    the modules signed with the operator's key, or the vendor's signatures kept
  userspace  the libraries, tools, firmware, Fabric Manager and NVLSM packed
  package    one flavour's package built and packed, then staged or published
  common     the tables, errors, progress lines and commands all of them share
"""
