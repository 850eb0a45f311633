/* ReduceSum / ReduceMean (and quantlib's IntegerMean) over any set of
 * axes. Outputs are split across cores; each output sums its reduced
 * elements in row-major order. */
#include "dg_internal.h"

/* The reduction walk both forms share: the element counts, the offset of
 * output o's first reduced element, and the step to its next one in
 * row-major order over red_shape (idx: the reduced index, zeroed first). */
typedef struct {
    uint32_t nkeep, nred;
    const uint32_t *keep_shape, *keep_strides, *red_shape, *red_strides;
} walk_t;

static uint32_t walk_count_(const uint32_t *shape, uint32_t n)
{
    uint32_t c = 1, d;
    for (d = 0; d < n; d++)
        c *= shape[d];
    return c;
}

static uint32_t walk_base_(const walk_t *w, uint32_t o, uint32_t *idx)
{
    uint32_t base = 0, rem = o, d;
    for (d = w->nkeep; d-- > 0;) {
        base += (uint32_t)(rem % w->keep_shape[d]) * w->keep_strides[d];
        rem /= w->keep_shape[d];
    }
    for (d = 0; d < w->nred; d++)
        idx[d] = 0;
    return base;
}

static uint32_t walk_next_(const walk_t *w, uint32_t off, uint32_t *idx)
{
    uint32_t d;
    for (d = w->nred; d-- > 0;) {
        off += w->red_strides[d];
        if (++idx[d] < w->red_shape[d])
            break;
        off -= (uint32_t)w->red_strides[d] * w->red_shape[d];
        idx[d] = 0;
    }
    return off;
}

static void reduce(const dg_reduce_args_t *p, int mean, int fault)
{
    const walk_t w = { p->nkeep, p->nred, p->keep_shape, p->keep_strides, p->red_shape, p->red_strides };
    const uint32_t n_red = walk_count_(p->red_shape, p->nred);
    dg_range_t r = dg_split(walk_count_(p->keep_shape, p->nkeep));
    uint32_t o, k;
    (void)fault;
    for (o = r.start; o < r.end; o++) {
        uint32_t idx[DG_MAX_DIMS];
        uint32_t off = walk_base_(&w, o, idx);
        float acc = 0.0f;
        for (k = 0; k < n_red; k++) {
            acc += p->x[off];
            off = walk_next_(&w, off, idx);
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

void dg_integer_mean(void *args)
{
    const dg_reduce_int_args_t *p = (const dg_reduce_int_args_t *)args;
    const walk_t w = { p->nkeep, p->nred, p->keep_shape, p->keep_strides, p->red_shape, p->red_strides };
    const int64_t n = (int64_t)walk_count_(p->red_shape, p->nred);
    const int pow2 = (n & (n - 1)) == 0;
    dg_range_t r = dg_split(walk_count_(p->keep_shape, p->nkeep));
    uint32_t o, k;
    for (o = r.start; o < r.end; o++) {
        uint32_t idx[DG_MAX_DIMS];
        uint32_t off = walk_base_(&w, o, idx);
        int64_t s = 0, m;
        for (k = 0; k < (uint32_t)n; k++) {
            const int64_t v = p->x_dtype == DG_DT_I32 ? (int64_t)((const int32_t *)p->x)[off]
                                                      : dg_f64_to_i64((double)((const float *)p->x)[off]);
            s = (int64_t)((uint64_t)s + (uint64_t)v); /* wraps on hostile values */
            off = walk_next_(&w, off, idx);
        }
        if (pow2) {
            m = (int64_t)((uint64_t)s + (uint64_t)(n / 2));
            m = dg_floor_div_i64(m, n);
        } else {
            m = (int64_t)((uint64_t)s + (uint64_t)((s >= 0 ? 1 : -1) * (n / 2))) / n;
        }
        m = DG_FAULT_I(DG_FAULT_REDUCE_MEAN, m);
        if (p->y_dtype == DG_DT_I32)
            ((int32_t *)p->y)[o] = (int32_t)m;
        else
            ((float *)p->y)[o] = (float)m;
    }
}
