/* Not on bool, ArgMax / ArgMin (int64 indices), the fill of
 * ConstantOfShape and Tile (see dg_kernels.h). */
#include "dg_internal.h"

#include <string.h>

void dg_not_bool(void *args)
{
    const dg_unary_typed_args_t *p = (const dg_unary_typed_args_t *)args;
    const uint8_t *x = (const uint8_t *)p->x;
    uint8_t *y = (uint8_t *)p->y;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++)
        y[i] = (uint8_t)DG_FAULT_I(DG_FAULT_NOT, x[i] ? 0 : 1);
}

/* Whether v replaces the best so far: strictly better, or equal when the
 * last index is wanted; a NaN beats every number and is never replaced. */
static inline int better(float v, float best, int is_min, int last)
{
    if (best != best)
        return 0;
    if (v != v)
        return 1;
    if (is_min ? v < best : v > best)
        return 1;
    return last && v == best;
}

static void arg_reduce(const dg_arg_reduce_args_t *p, int is_min)
{
    int64_t *y = (int64_t *)p->y;
    dg_range_t r = dg_split(p->outer * p->inner);
    uint32_t row, j;
    DG_CHECK(p->dim > 0, "ArgMax/ArgMin over an empty axis");
    for (row = r.start; row < r.end; row++) {
        const uint32_t base = (uint32_t)(row / p->inner) * p->dim * p->inner + row % p->inner;
        const float *x = p->x + base;
        float best = x[0];
        uint32_t at = 0;
        for (j = 1; j < p->dim; j++) {
            const float v = x[(uint32_t)j * p->inner];
            if (better(v, best, is_min, (int)p->select_last)) {
                best = v;
                at = j;
            }
        }
        y[row] = DG_FAULT_I(DG_FAULT_ARG, (int64_t)at);
    }
}

void dg_argmax_f32(void *args)
{
    arg_reduce((const dg_arg_reduce_args_t *)args, 0);
}

void dg_argmin_f32(void *args)
{
    arg_reduce((const dg_arg_reduce_args_t *)args, 1);
}

void dg_fill(void *args)
{
    const dg_fill_args_t *p = (const dg_fill_args_t *)args;
    uint8_t *y = (uint8_t *)p->y;
    uint8_t v[8];
    uint32_t i, b;
    dg_range_t r = dg_split(p->n);
    DG_CHECK(p->elem_size == 1 || p->elem_size == 4 || p->elem_size == 8, "fill: element size must be 1, 4 or 8");
    for (b = 0; b < 8; b++)
        v[b] = (uint8_t)((uint64_t)p->value >> (8 * b));
    for (i = r.start; i < r.end; i++)
        memcpy(y + (uint32_t)i * p->elem_size, v, p->elem_size);
    if (r.start == 0 && r.end > 0)
        y[0] = (uint8_t)DG_FAULT_I(DG_FAULT_FILL, y[0]);
}

void dg_tile(void *args)
{
    const dg_tile_args_t *p = (const dg_tile_args_t *)args;
    const uint8_t *x = (const uint8_t *)p->x;
    uint8_t *y = (uint8_t *)p->y;
    uint32_t n = 1, d, i;
    dg_range_t r;
    DG_CHECK(p->ndim <= DG_MAX_DIMS, "Tile: too many dims");
    for (d = 0; d < p->ndim; d++)
        n *= p->out_shape[d];
    r = dg_split(n);
    for (i = r.start; i < r.end; i++) {
        uint32_t rem = i, off = 0, stride = 1;
        for (d = p->ndim; d-- > 0;) {
            off += (rem % p->out_shape[d]) % p->in_shape[d] * stride;
            rem /= p->out_shape[d];
            stride *= p->in_shape[d];
        }
        memcpy(y + i * p->elem_size, x + off * p->elem_size, p->elem_size);
    }
    if (r.start == 0 && r.end > 0)
        y[0] = (uint8_t)DG_FAULT_I(DG_FAULT_TILE, y[0]);
}
