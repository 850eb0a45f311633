/* pmsis-host: the SDK's bsp/ram.h API is declared in pmsis.h. */
#ifndef DG_PMSIS_HOST_BSP_RAM_H
#define DG_PMSIS_HOST_BSP_RAM_H
#include "pmsis.h"
#endif
