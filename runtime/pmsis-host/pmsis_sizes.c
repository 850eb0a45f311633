/*
 * The emulated capacities of one project's memory plan. Makefile.host
 * compiles this file alone with -DDG_L1_SIZE, -DDG_L2_SIZE and
 * -DDG_L3_SIZE, so pmsis_host.c (which reads them) is the same object in
 * every project and can come from a prebuilt runtime archive.
 */
#include <stdint.h>

#if !defined(DG_L1_SIZE) || !defined(DG_L2_SIZE) || !defined(DG_L3_SIZE)
#error "pmsis_sizes.c needs -DDG_L1_SIZE, -DDG_L2_SIZE and -DDG_L3_SIZE (Makefile.host passes them)"
#endif

extern const uint32_t dg_host_heap_sizes[3];
const uint32_t dg_host_heap_sizes[3] = {DG_L1_SIZE, DG_L2_SIZE, DG_L3_SIZE};
