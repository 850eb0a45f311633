/*
 * pmsis-host: flash devices (bsp/flash.h).
 */
#ifndef DG_PMSIS_HOST_BSP_FLASH_H
#define DG_PMSIS_HOST_BSP_FLASH_H

#include "pmsis.h"

#ifdef __cplusplus
extern "C" {
#endif

struct pi_flash_conf {
    void *api;
};
int32_t pi_flash_open(struct pi_device *device);
void pi_flash_close(struct pi_device *device);

#ifdef __cplusplus
}
#endif

#endif /* DG_PMSIS_HOST_BSP_FLASH_H */
