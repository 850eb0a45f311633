/* pmsis-host: the SDK's <bsp/fs/readfs.h>; its API is declared in pmsis.h. */
#ifndef DG_PMSIS_HOST_BSP_FS_READFS_H
#define DG_PMSIS_HOST_BSP_FS_READFS_H
#include "pmsis.h"
#endif
