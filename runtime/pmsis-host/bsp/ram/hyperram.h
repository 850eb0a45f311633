/* pmsis-host: the SDK's <bsp/ram/hyperram.h>; its API is declared in pmsis.h. */
#ifndef DG_PMSIS_HOST_BSP_RAM_HYPERRAM_H
#define DG_PMSIS_HOST_BSP_RAM_HYPERRAM_H
#include "pmsis.h"
#endif
