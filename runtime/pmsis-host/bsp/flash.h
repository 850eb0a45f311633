/* pmsis-host: the SDK's <bsp/flash.h>; its API is declared in pmsis.h. */
#ifndef DG_PMSIS_HOST_BSP_FLASH_H
#define DG_PMSIS_HOST_BSP_FLASH_H
#include "pmsis.h"
#endif
