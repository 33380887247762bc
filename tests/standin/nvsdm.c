// SPDX-License-Identifier: Apache-2.0
/*
 * Stand-ins of the two libraries DCGM's NvSwitch module loads, built by the tests as NVIDIA
 * names them (NVIDIA's are not in Debian):
 *   cc -shared -fPIC -Wl,-soname,libnvsdm.so.1 -o libnvsdm.so.VERSION nvsdm.c
 *   cc -shared -fPIC -DSTANDIN_NSCQ -Wl,-soname,libnvidia-nscq.so.2 \
 *      -o libnvidia-nscq.so.VERSION nvsdm.c
 * Each exports the symbols DCGM looks up first: nvsdmInitialize, nvsdmGetVersion and
 * nvsdmFinalize (NVIDIA/DCGM sdk/nvidia/nvsdm/loader/nvsdm_entry_points.h:16-17,62;
 * DcgmNvsdmManager.cpp:979 calls nvsdmInitialize once the library is open), and NSCQ's
 * nscq_api_version and nscq_api_version_devel (sdk/nvidia/nscq/dlwrap/dlwrap.c:51-52). With
 * -DSTANDIN_NEEDS (and -lNAME at the link) the library has a DT_NEEDED the consumer must
 * satisfy, as NVIDIA's libnvsdm needs libibumad and libibmad (NVSDM docs, getting-started).
 */
#include <stdint.h>

#ifdef STANDIN_NSCQ
/* NSCQ_API_VERSION(2, 0, 0) (sdk/nvidia/nscq/nscq.h:46-54). */
const uint32_t nscq_api_version = (2u << 24);
const char nscq_api_version_devel[] = "standin";
#else
/* nvsdmRet_t's NVSDM_SUCCESS. */
int nvsdmInitialize(void);
int nvsdmFinalize(void);
int nvsdmGetVersion(uint64_t *version);

int nvsdmInitialize(void)
{
	return 0;
}

int nvsdmFinalize(void)
{
	return 0;
}

int nvsdmGetVersion(uint64_t *version)
{
	/* NVSDM_VERSION(1, 3, 0), the API the docs' change log reaches. */
	*version = (1ull << 32) | (3ull << 16);
	return 0;
}
#endif
