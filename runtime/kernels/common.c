/* Work splitting shared by all kernels, and their run-time error status. */
#include "dg_internal.h"

/* The last run-time error's message (dg_kernels.h). Cores that fail at
 * once all store a string literal's address: whichever lands, the message
 * names the error (no atomics: the cluster cores may have none). */
static const char *volatile dg_kernel_err;

const char *dg_kernel_error(void)
{
    return dg_kernel_err;
}

void dg_kernel_error_clear(void)
{
    dg_kernel_err = NULL;
}

void dg_kernel_error_set(const char *msg)
{
    dg_kernel_err = msg;
}

#ifdef DG_FAULT_INJECTION
volatile int dg_fault_id;
#endif

/* Inlined into both entry points: a call from dg_split would add a frame
 * to every kernel's stack (runtime/kernels/stack_usage.txt). */
static inline dg_range_t split(uint32_t n, uint32_t most)
{
    dg_range_t r;
    uint32_t nc, id, chunk;
#ifdef DG_PMSIS_HOST
    /* A kernel called without pi_cl_team_fork would run on the controller
     * alone and, on GAP9 (core id 8), compute nothing: make that loud. */
    DG_CHECK(dg_host_in_fork(), "a dg_* kernel was called outside pi_cl_team_fork");
#endif
    nc = (uint32_t)pi_cl_team_nb_cores();
    id = pi_core_id();
    if (nc > most)
        nc = most;
    if (nc == 0)
        nc = 1;
    chunk = (n + nc - 1) / nc;
    r.start = id * chunk < n ? id * chunk : n;
    r.end = r.start + chunk < n ? r.start + chunk : n;
    if (id >= nc)
        r.start = r.end = n;
    return r;
}

dg_range_t dg_split(uint32_t n)
{
    return split(n, 0xFFFFFFFFu);
}

dg_range_t dg_split_among(uint32_t n, uint32_t most)
{
    return split(n, most);
}
