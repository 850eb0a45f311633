/* Integer-emulation kernels of third-party integer graphs (Deeploy):
 * Round (halves to even) and RequantShift. */
#include "dg_internal.h"

/* Nearest integer, halves to even, whatever the rounding mode; NaN and
 * infinities pass through (their difference from the floor is NaN). */
static float round_even_(float v)
{
    float r = floorf(v);
    const float d = v - r;
    if (d > 0.5f || (d == 0.5f && fmodf(r, 2.0f) != 0.0f))
        r += 1.0f;
    return r;
}

void dg_round_f32(void *args)
{
    const dg_unary_args_t *p = (const dg_unary_args_t *)args;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++)
        p->y[i] = DG_FAULT(DG_FAULT_ROUND, round_even_(p->x[i]));
}

static int64_t value_(const void *base, uint32_t dtype, uint32_t i)
{
    if (dtype == DG_DT_I32)
        return (int64_t)((const int32_t *)base)[i];
    return (int64_t)((const float *)base)[i];
}

/* Element i of a tensor broadcast to `shape` with `strides`. */
static uint32_t offset_(const dg_requant_shift_args_t *p, const uint32_t *strides, uint32_t i)
{
    uint32_t off = 0;
    uint32_t d;
    for (d = p->ndim; d-- > 0;) {
        off += (i % p->shape[d]) * strides[d];
        i /= p->shape[d];
    }
    return off;
}

void dg_requant_shift(void *args)
{
    const dg_requant_shift_args_t *p = (const dg_requant_shift_args_t *)args;
    dg_range_t r = dg_split(p->n);
    const int64_t div = p->div > 0 ? (int64_t)p->div : 1;
    uint32_t i;
    for (i = r.start; i < r.end; i++) {
        const uint32_t om = p->ndim ? offset_(p, p->mul_strides, i) : 0;
        const uint32_t oa = p->ndim ? offset_(p, p->add_strides, i) : 0;
        const int64_t t =
            value_(p->x, p->x_dtype, i) * value_(p->mul, p->mul_dtype, om) + value_(p->add, p->add_dtype, oa) + div / 2;
        /* Floor division (C's truncates toward zero). */
        int64_t q = t / div;
        if (t % div != 0 && t < 0)
            q -= 1;
        if (q < p->lo)
            q = p->lo;
        if (q > p->hi)
            q = p->hi;
        if (p->y_dtype == DG_DT_I32)
            ((int32_t *)p->y)[i] = DG_FAULT_I(DG_FAULT_REQUANT_SHIFT, (int32_t)q);
        else
            ((float *)p->y)[i] = DG_FAULT(DG_FAULT_REQUANT_SHIFT, (float)q);
    }
}
