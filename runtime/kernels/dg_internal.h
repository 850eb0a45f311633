/* Helpers shared by the kernel sources (not part of the kernel API). */
#ifndef DG_INTERNAL_H
#define DG_INTERNAL_H

#include "dg_kernels.h"

#include <math.h>
#include <string.h>

/* A kernel-level invariant. On the host emulation a violation aborts with
 * the message; on the chips it is not checked. */
#ifdef DG_PMSIS_HOST
#define DG_CHECK(cond, msg)            \
    do {                               \
        if (!(cond))                   \
            dg_host_fatal(msg);        \
    } while (0)
#else
#define DG_CHECK(cond, msg) ((void)0)
#endif

/* Multi-dimensional position used to walk strided views in row-major order
 * starting at a flat output index. */
typedef struct {
    uint32_t ndim;
    uint32_t idx[DG_MAX_DIMS];
} dg_pos_t;

static inline void dg_pos_set(dg_pos_t *p, uint32_t ndim, const uint32_t *shape, uint32_t flat)
{
    uint32_t d;
    p->ndim = ndim;
    for (d = ndim; d-- > 0;) {
        p->idx[d] = flat % shape[d];
        flat /= shape[d];
    }
}

static inline int64_t dg_pos_offset(const dg_pos_t *p, const int64_t *strides)
{
    int64_t off = 0;
    uint32_t d;
    for (d = 0; d < p->ndim; d++)
        off += (int64_t)p->idx[d] * strides[d];
    return off;
}

/* Advances the position by one; returns the dimension that changed least
 * significantly (ndim when wrapping around). */
static inline void dg_pos_next(dg_pos_t *p, const uint32_t *shape)
{
    uint32_t d;
    for (d = p->ndim; d-- > 0;) {
        if (++p->idx[d] < shape[d])
            return;
        p->idx[d] = 0;
    }
}

#endif /* DG_INTERNAL_H */
