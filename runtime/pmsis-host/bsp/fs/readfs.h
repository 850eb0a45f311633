/*
 * pmsis-host: the read-only flash file system (bsp/fs/readfs.h).
 */
#ifndef DG_PMSIS_HOST_BSP_FS_READFS_H
#define DG_PMSIS_HOST_BSP_FS_READFS_H

#include "bsp/fs.h"

#ifdef __cplusplus
extern "C" {
#endif

struct pi_readfs_conf {
    struct pi_fs_conf fs;
};
void pi_readfs_conf_init(struct pi_readfs_conf *conf);

#ifdef __cplusplus
}
#endif

#endif /* DG_PMSIS_HOST_BSP_FS_READFS_H */
