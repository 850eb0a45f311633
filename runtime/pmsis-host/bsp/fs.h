/* pmsis-host: the SDK's <bsp/fs.h>; its API is declared in pmsis.h. */
#ifndef DG_PMSIS_HOST_BSP_FS_H
#define DG_PMSIS_HOST_BSP_FS_H
#include "pmsis.h"
#endif
