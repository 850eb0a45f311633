/*
 * pmsis-host: the HyperFlash configuration (bsp/flash/hyperflash.h).
 */
#ifndef DG_PMSIS_HOST_BSP_FLASH_HYPERFLASH_H
#define DG_PMSIS_HOST_BSP_FLASH_HYPERFLASH_H

#include "bsp/flash.h"

#ifdef __cplusplus
extern "C" {
#endif

struct pi_hyperflash_conf {
    struct pi_flash_conf flash;
};
void pi_hyperflash_conf_init(struct pi_hyperflash_conf *conf);

#ifdef __cplusplus
}
#endif

#endif /* DG_PMSIS_HOST_BSP_FLASH_HYPERFLASH_H */
