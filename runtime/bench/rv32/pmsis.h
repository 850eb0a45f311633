/*
 * The PMSIS subset the kernels call, for the rv32 instruction-count
 * instrument (runtime/bench/rv32_bench.c). A team is emulated as a loop over
 * core ids on one hart: the harness sets the core id and team size before
 * each call, so every core's share runs, and is counted, on its own.
 * A barrier cannot wait in a loop; it is a no-op here (kernels with a
 * barrier read other cores' phase-one results before they exist, which
 * changes values, not the instructions executed).
 */
#ifndef DG_RV32_PMSIS_H
#define DG_RV32_PMSIS_H

#include <stdint.h>

extern uint32_t dg_rv32_core_id;
extern uint32_t dg_rv32_team_size;

static inline uint32_t pi_core_id(void) { return dg_rv32_core_id; }
static inline int pi_cl_team_nb_cores(void) { return (int)dg_rv32_team_size; }
static inline void pi_cl_team_barrier(void) {}

#endif /* DG_RV32_PMSIS_H */
