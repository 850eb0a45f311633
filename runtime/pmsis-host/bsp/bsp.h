/*
 * pmsis-host: the board support header (bsp/bsp.h). As in the SDK it
 * includes the flash and RAM devices; the GAP SDK's default-device
 * configurations (pi_default_ram_conf, pi_default_flash_conf) come from
 * its board headers, which bsp/bsp.h includes.
 */
#ifndef DG_PMSIS_HOST_BSP_BSP_H
#define DG_PMSIS_HOST_BSP_BSP_H

#include "bsp/flash/hyperflash.h"
#include "bsp/ram/hyperram.h"

#ifdef __cplusplus
extern "C" {
#endif

struct pi_default_ram_conf {
    struct pi_ram_conf ram;
    uint32_t ram_start;
    uint32_t ram_size;
};
void pi_default_ram_conf_init(struct pi_default_ram_conf *conf);
struct pi_default_flash_conf {
    struct pi_flash_conf flash;
};
void pi_default_flash_conf_init(struct pi_default_flash_conf *conf);

#ifdef __cplusplus
}
#endif

#endif /* DG_PMSIS_HOST_BSP_BSP_H */
