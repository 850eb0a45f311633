/* pmsis-host: the SDK's <bsp/bsp.h>; its API is declared in pmsis.h. */
#ifndef DG_PMSIS_HOST_BSP_BSP_H
#define DG_PMSIS_HOST_BSP_BSP_H
#include "pmsis.h"
#endif
