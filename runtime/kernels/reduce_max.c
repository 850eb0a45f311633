/* ReduceMax (any axes) and GlobalMaxPool. Outputs are split across cores;
 * each output scans its elements in row-major order. A NaN input gives NaN,
 * as onnxruntime's ReduceMax. */
#include "dg_internal.h"

static inline float max_nan(float acc, float v)
{
    return (v > acc || v != v) && acc == acc ? v : acc;
}

void dg_reduce_max_f32(void *args)
{
    const dg_reduce_args_t *p = (const dg_reduce_args_t *)args;
    uint32_t n_out = 1, n_red = 1, d, o, k;
    dg_range_t r;
    for (d = 0; d < p->nkeep; d++)
        n_out *= p->keep_shape[d];
    for (d = 0; d < p->nred; d++)
        n_red *= p->red_shape[d];
    DG_CHECK(n_red > 0, "ReduceMax over an empty set");
    r = dg_split(n_out);
    for (o = r.start; o < r.end; o++) {
        uint32_t rem = o, idx[DG_MAX_DIMS], off = 0;
        float acc;
        for (d = p->nkeep; d-- > 0;) {
            off += (rem % p->keep_shape[d]) * p->keep_strides[d];
            rem /= p->keep_shape[d];
        }
        for (d = 0; d < p->nred; d++)
            idx[d] = 0;
        acc = p->x[off];
        for (k = 0; k < n_red; k++) {
            acc = max_nan(acc, p->x[off]);
            for (d = p->nred; d-- > 0;) {
                off += p->red_strides[d];
                if (++idx[d] < p->red_shape[d])
                    break;
                off -= p->red_strides[d] * p->red_shape[d];
                idx[d] = 0;
            }
        }
        p->y[o] = DG_FAULT(DG_FAULT_REDUCE_MAX, acc);
    }
}

void dg_global_maxpool_f32(void *args)
{
    const dg_pool_args_t *p = (const dg_pool_args_t *)args;
    const uint32_t hw = p->in_h * p->in_w;
    dg_range_t r = dg_split(p->batch * p->channels);
    uint32_t c, i;
    for (c = r.start; c < r.end; c++) {
        const float *x = p->x + c * hw;
        float acc = x[0];
        for (i = 1; i < hw; i++)
            acc = max_nan(acc, x[i]);
        p->y[c] = DG_FAULT(DG_FAULT_GLOBAL_MAXPOOL, acc);
    }
}
