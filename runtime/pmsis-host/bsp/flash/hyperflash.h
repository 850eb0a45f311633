/* pmsis-host: the SDK's <bsp/flash/hyperflash.h>; its API is declared in pmsis.h. */
#ifndef DG_PMSIS_HOST_BSP_FLASH_HYPERFLASH_H
#define DG_PMSIS_HOST_BSP_FLASH_HYPERFLASH_H
#include "pmsis.h"
#endif
