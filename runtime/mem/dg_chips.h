/*
 * dg_chips.h: the chips' facts, written by deploygen from its
 * src/target/platforms.json (do not edit; `UPDATE_GOLDEN=1 cargo test --test
 * plan` rewrites it). Compile with the define of one platform.
 */
#ifndef DG_CHIPS_H
#define DG_CHIPS_H

#if defined(DG_PLATFORM_GAP9)
#define DG_CHIP_NAME "GAP9"
#define DG_CHIP_CONTROLLER_CORE_ID 8u
#define DG_CHIP_CLUSTER_CORES 8u
#define DG_CHIP_L1_SIZE 131072u
#define DG_CHIP_L1_BASE 0x10000000u
#define DG_CHIP_L1_END 0x10020000u
#define DG_CHIP_L2_SIZE 1638400u
#define DG_CHIP_L2_BASE 0x1C000000u
#define DG_CHIP_L2_END 0x1C190000u
#define DG_CHIP_L3_SIZE 8388608u
#define DG_CHIP_L3_BASE 0x80000000u
#define DG_CHIP_L3_END 0x80800000u
#elif defined(DG_PLATFORM_SIRACUSA)
#define DG_CHIP_NAME "Siracusa"
#define DG_CHIP_CONTROLLER_CORE_ID 0u
#define DG_CHIP_CLUSTER_CORES 8u
#define DG_CHIP_RAM_REQS_IN_FLIGHT 1u
#define DG_CHIP_HYPERBUS_MEMORY 1
#define DG_CHIP_FPU_SHARED_BY_CORE_PAIRS 1
#define DG_CHIP_L1_SIZE 262144u
#define DG_CHIP_L1_BASE 0x10000000u
#define DG_CHIP_L1_END 0x10040000u
#define DG_CHIP_L2_SIZE 2000000u
#define DG_CHIP_L2_BASE 0x1C000000u
#define DG_CHIP_L2_END 0x1C200000u
#define DG_CHIP_L3_SIZE 8388608u
#define DG_CHIP_L3_BASE 0x00000000u
#define DG_CHIP_L3_END 0x00800000u
#elif defined(DG_PLATFORM_HOST)
#define DG_CHIP_NAME "host"
#define DG_CHIP_CONTROLLER_CORE_ID 0u
#define DG_CHIP_CLUSTER_CORES 8u
#define DG_CHIP_L1_SIZE 131072u
#define DG_CHIP_L2_SIZE 4194304u
#define DG_CHIP_L3_SIZE 8388608u
#define DG_CHIP_L3_BASE 0x80000000u
#define DG_CHIP_L3_END 0x80800000u
#else
#error "no platform selected: compile with one of -DDG_PLATFORM_GAP9, -DDG_PLATFORM_SIRACUSA, -DDG_PLATFORM_HOST"
#endif

#endif /* DG_CHIPS_H */
