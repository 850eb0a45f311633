/*
 * pmsis-host: the HyperRAM configuration (bsp/ram/hyperram.h).
 */
#ifndef DG_PMSIS_HOST_BSP_RAM_HYPERRAM_H
#define DG_PMSIS_HOST_BSP_RAM_HYPERRAM_H

#include "pmsis.h"
#include "bsp/ram.h"

#ifdef __cplusplus
extern "C" {
#endif

struct pi_hyperram_conf {
    struct pi_ram_conf ram;
    uint32_t ram_start;
    uint32_t ram_size;
};
void pi_hyperram_conf_init(struct pi_hyperram_conf *conf);

#ifdef __cplusplus
}
#endif

#endif /* DG_PMSIS_HOST_BSP_RAM_HYPERRAM_H */
