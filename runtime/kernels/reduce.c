/* ReduceSum / ReduceMean over any set of axes. Outputs are split across
 * cores; each output sums its reduced elements in row-major order. */
#include "dg_internal.h"

static void reduce(const dg_reduce_args_t *p, int mean, int fault)
{
    uint32_t n_out = 1, n_red = 1, d, o, k;
    dg_range_t r;
    for (d = 0; d < p->nkeep; d++)
        n_out *= p->keep_shape[d];
    for (d = 0; d < p->nred; d++)
        n_red *= p->red_shape[d];
    (void)fault;
    r = dg_split(n_out);
    for (o = r.start; o < r.end; o++) {
        uint32_t base = 0;
        uint32_t rem = o, idx[DG_MAX_DIMS];
        uint32_t off;
        float acc = 0.0f;
        for (d = p->nkeep; d-- > 0;) {
            base += (uint32_t)(rem % p->keep_shape[d]) * p->keep_strides[d];
            rem /= p->keep_shape[d];
        }
        for (d = 0; d < p->nred; d++)
            idx[d] = 0;
        off = base;
        for (k = 0; k < n_red; k++) {
            acc += p->x[off];
            for (d = p->nred; d-- > 0;) {
                off += p->red_strides[d];
                if (++idx[d] < p->red_shape[d])
                    break;
                off -= (uint32_t)p->red_strides[d] * p->red_shape[d];
                idx[d] = 0;
            }
        }
        if (mean)
            acc /= (float)n_red;
        p->y[o] = DG_FAULT(fault, acc);
    }
}

void dg_reduce_sum_f32(void *args)
{
    reduce((const dg_reduce_args_t *)args, 0, DG_FAULT_REDUCE_SUM);
}

void dg_reduce_mean_f32(void *args)
{
    reduce((const dg_reduce_args_t *)args, 1, DG_FAULT_REDUCE_MEAN);
}
