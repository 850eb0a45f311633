/* Integer-emulation kernels of third-party integer graphs (Deeploy):
 * Round (halves to even), RequantShift and the integer-only approximations
 * quantlib exports (iSoftmax, ITAMax, iRMSNorm, iLayerNorm, iHardswish,
 * iGELU, TrueIntegerDiv, IntegerDiv, iNoNorm; dg_k_quant.h states what
 * each computes). */
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
    return dg_f64_to_i64((double)((const float *)base)[i]);
}

static void store_(void *base, uint32_t dtype, uint32_t i, int64_t v)
{
    if (dtype == DG_DT_I32)
        ((int32_t *)base)[i] = (int32_t)v;
    else
        ((float *)base)[i] = (float)v;
}


/* floor(v / 2^s), whatever the compiler does with a negative `>>`. */
static int64_t floor_shift_(int64_t v, int32_t s)
{
    return v >= 0 ? v >> s : -((-v - 1) >> s) - 1;
}

/* a * b, a + b and a - b wrapping as two's complement: hostile values (an f32
 * far outside the integers these graphs hold) give a defined result. */
static int64_t mul_(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a * (uint64_t)b);
}

static int64_t add_(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

static int64_t sub_(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a - (uint64_t)b);
}

/* a / b truncated as C does, defined for b == -1 too (INT64_MIN / -1). */
static int64_t trunc_div_(int64_t a, int64_t b)
{
    return b == -1 ? mul_(a, -1) : a / b;
}

static int64_t clip_(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

/* Element i of a tensor broadcast to `shape` (ndim dims) with `strides`. */
static uint32_t bcast_offset_(uint32_t ndim, const uint32_t *shape, const uint32_t *strides, uint32_t i)
{
    uint32_t off = 0;
    uint32_t d;
    for (d = ndim; d-- > 0;) {
        off += (i % shape[d]) * strides[d];
        i /= shape[d];
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
        const uint32_t om = p->ndim ? bcast_offset_(p->ndim, p->shape, p->mul_strides, i) : 0;
        const uint32_t oa = p->ndim ? bcast_offset_(p->ndim, p->shape, p->add_strides, i) : 0;
        const int64_t t =
            value_(p->x, p->x_dtype, i) * value_(p->mul, p->mul_dtype, om) + value_(p->add, p->add_dtype, oa) + div / 2;
        const int64_t q = clip_(dg_floor_div_i64(t, div), p->lo, p->hi);
        if (p->y_dtype == DG_DT_I32)
            ((int32_t *)p->y)[i] = DG_FAULT_I(DG_FAULT_REQUANT_SHIFT, (int32_t)q);
        else
            ((float *)p->y)[i] = DG_FAULT(DG_FAULT_REQUANT_SHIFT, (float)q);
    }
}

/* ---- integer-only approximations ------------------------------------- */

static int64_t row_max_(const void *x, uint32_t dtype, uint32_t base, uint32_t len)
{
    int64_t m = value_(x, dtype, base);
    uint32_t j;
    for (j = 1; j < len; j++) {
        const int64_t v = value_(x, dtype, base + j);
        if (v > m)
            m = v;
    }
    return m;
}

/* I-BERT's exp of d = x - max <= 0, as uint32 (Deeploy's Softmax_s8_s8). */
static uint32_t iexp_(const dg_isoftmax_args_t *p, int64_t d)
{
    const int16_t xt = (int16_t)d;
    int32_t z = -(xt / p->log2);
    int16_t q;
    z = z < 0 ? 0 : (z > 31 ? 31 : z);
    q = (int16_t)(xt + z * p->log2);
    {
        /* int32 arithmetic as Deeploy's, wrapping where it would overflow. */
        const int64_t r = (int64_t)q + p->coeff_b;
        const int32_t sq = (int32_t)(uint32_t)(uint64_t)(r * r);
        const int32_t e32 = (int32_t)(uint32_t)((uint64_t)(int64_t)p->coeff_a * (uint64_t)(int64_t)sq);
        return (uint32_t)((uint64_t)add_(e32, p->coeff_c) >> z);
    }
}

void dg_isoftmax(void *args)
{
    const dg_isoftmax_args_t *p = (const dg_isoftmax_args_t *)args;
    dg_range_t r = dg_split(p->rows);
    uint32_t i, j;
    for (i = r.start; i < r.end; i++) {
        const uint32_t base = i * p->len;
        const int64_t m = row_max_(p->x, p->x_dtype, base, p->len);
        uint32_t sum = 0;
        for (j = 0; j < p->len; j++)
            sum += iexp_(p, sub_(value_(p->x, p->x_dtype, base + j), m));
        for (j = 0; j < p->len; j++) {
            const uint32_t e = iexp_(p, sub_(value_(p->x, p->x_dtype, base + j), m));
            const uint32_t y = sum ? (uint32_t)(e * (p->n_levels - 1u)) / sum : 0u;
            store_(p->y, p->y_dtype, base + j, DG_FAULT_I(DG_FAULT_ISOFTMAX, (int64_t)y));
        }
    }
}

/* ITA's power-of-two exponent of x against the maximum m >= x:
 * 256 >> shift, shift = (m - x + 16) >> 5 (at most 31). */
static uint32_t ita_shift_(int64_t m, int64_t x)
{
    const uint64_t diff = (uint64_t)m - (uint64_t)x;
    return diff >= (31u << 5) ? 31u : (uint32_t)((diff + 16u) >> 5);
}

/* The sum of a row's (or a group's) 256 >> shift against `m`. */
static uint32_t ita_sum_(const dg_isoftmax_args_t *p, uint32_t base, uint32_t len, int64_t m)
{
    uint32_t sum = 0, j;
    for (j = 0; j < len; j++)
        sum += 256u >> ita_shift_(m, value_(p->x, p->x_dtype, base + j));
    return sum;
}

void dg_itamax(void *args)
{
    const dg_isoftmax_args_t *p = (const dg_isoftmax_args_t *)args;
    dg_range_t r = dg_split(p->rows);
    uint32_t i, j;
    for (i = r.start; i < r.end; i++) {
        const uint32_t base = i * p->len;
        int64_t m;
        uint32_t sum, inv;
        if (p->group == 0) {
            m = row_max_(p->x, p->x_dtype, base, p->len);
            sum = ita_sum_(p, base, p->len, m);
            inv = ((p->n_levels - 1u) * 256u) / sum;
        } else {
            /* Groups left to right: a new maximum rescales the sum so far. */
            uint32_t g;
            sum = 0;
            m = value_(p->x, p->x_dtype, base);
            for (g = 0; g < p->len / p->group; g++) {
                const int64_t gm = row_max_(p->x, p->x_dtype, base + g * p->group, p->group);
                const uint32_t rescale = gm > m ? ita_shift_(gm, m) : 0u;
                if (gm > m)
                    m = gm;
                sum = (sum >> rescale) + ita_sum_(p, base + g * p->group, p->group, m);
            }
            inv = ((p->n_levels / 2u - 1u) * 256u) / sum;
        }
        for (j = 0; j < p->len; j++) {
            const uint32_t y = inv >> ita_shift_(m, value_(p->x, p->x_dtype, base + j));
            store_(p->y, p->y_dtype, base + j, DG_FAULT_I(DG_FAULT_ISOFTMAX, (int64_t)y));
        }
    }
}

/* floor(sqrt(v)) for v >= 0, bit by bit. */
static int64_t isqrt_(int64_t v)
{
    uint64_t n = (uint64_t)v, root = 0, bit = 1ull << 62;
    while (bit > n)
        bit >>= 2;
    while (bit) {
        if (n >= root + bit) {
            n -= root + bit;
            root = (root >> 1) + bit;
        } else {
            root >>= 1;
        }
        bit >>= 2;
    }
    return (int64_t)root;
}

/* Deeploy's normalisations: `mean_free` subtracts the row's mean first
 * (iLayerNorm), and b (when given) is added before the shift. */
static void inorm_(const dg_inorm_args_t *p, int mean_free)
{
    dg_range_t r = dg_split(p->rows);
    uint32_t i, j;
    for (i = r.start; i < r.end; i++) {
        const uint32_t base = i * p->len;
        int64_t mean = 0, sq = 0, root;
        if (mean_free) {
            for (j = 0; j < p->len; j++)
                mean = add_(mean, value_(p->x, p->x_dtype, base + j));
            mean /= (int64_t)p->len;
        }
        for (j = 0; j < p->len; j++) {
            const int16_t t = (int16_t)sub_(value_(p->x, p->x_dtype, base + j), mean);
            sq += (int32_t)t * t;
        }
        root = isqrt_(sq / (int64_t)p->len + 1);
        for (j = 0; j < p->len; j++) {
            const int64_t c = sub_(value_(p->x, p->x_dtype, base + j), mean);
            int64_t v = trunc_div_(mul_(c, value_(p->w, p->w_dtype, j)), root);
            if (p->b)
                v = add_(v, value_(p->b, p->b_dtype, j));
            v = clip_(floor_shift_(v, p->log2d), p->lo, p->hi);
            store_(p->y, p->y_dtype, base + j, DG_FAULT_I(DG_FAULT_INORM, v));
        }
    }
}

void dg_irmsnorm(void *args)
{
    inorm_((const dg_inorm_args_t *)args, 0);
}

void dg_ilayernorm(void *args)
{
    inorm_((const dg_inorm_args_t *)args, 1);
}

void dg_ihardswish(void *args)
{
    const dg_ipoint_args_t *p = (const dg_ipoint_args_t *)args;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++) {
        const int64_t x = value_(p->x, p->x_dtype, i);
        const int64_t y = mul_(x, clip_(add_(x, p->b), 0, p->c) * p->a);
        store_(p->y, p->y_dtype, i, DG_FAULT_I(DG_FAULT_IPOINT, y));
    }
}

void dg_igelu(void *args)
{
    const dg_ipoint_args_t *p = (const dg_ipoint_args_t *)args;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++) {
        const int64_t x = value_(p->x, p->x_dtype, i);
        const int64_t s = (x > 0) - (x < 0);
        const int64_t ax = mul_(s, x); /* |x|; negative only for INT64_MIN */
        const int64_t q = (ax < 0 || ax > -p->a) ? -p->a : ax;
        const int64_t l = s * (p->b - (q + p->a) * (q + p->a));
        const int64_t y = mul_(x, floor_shift_(p->b + l, 1));
        store_(p->y, p->y_dtype, i, DG_FAULT_I(DG_FAULT_IPOINT, y));
    }
}

void dg_itrue_div(void *args)
{
    const dg_ipoint_args_t *p = (const dg_ipoint_args_t *)args;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++) {
        const int64_t y = dg_floor_div_i64(mul_(value_(p->x, p->x_dtype, i), p->a), p->b);
        store_(p->y, p->y_dtype, i, DG_FAULT_I(DG_FAULT_IPOINT, y));
    }
}


void dg_inonorm(void *args)
{
    const dg_inonorm_args_t *p = (const dg_inonorm_args_t *)args;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++) {
        const uint32_t ow = p->ndim ? bcast_offset_(p->ndim, p->shape, p->w_strides, i) : 0;
        const uint32_t ob = p->ndim ? bcast_offset_(p->ndim, p->shape, p->b_strides, i) : 0;
        const int64_t t = add_(mul_(value_(p->x, p->x_dtype, i), value_(p->w, p->w_dtype, ow)),
                               value_(p->b, p->b_dtype, ob));
        const int64_t y = clip_(floor_shift_(mul_(t, p->mul), p->log2d), p->lo, p->hi);
        store_(p->y, p->y_dtype, i, DG_FAULT_I(DG_FAULT_INONORM, y));
    }
}

void dg_integer_div(void *args)
{
    const dg_integer_div_args_t *p = (const dg_integer_div_args_t *)args;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++) {
        const int64_t a = value_(p->a, p->a_dtype, bcast_offset_(p->ndim, p->shape, p->a_strides, i));
        const int64_t b = value_(p->b, p->b_dtype, bcast_offset_(p->ndim, p->shape, p->b_strides, i));
        const int64_t n = mul_(p->delta_eta, a), d = add_(mul_(p->eta, b), p->eps);
        int64_t y = 0;
        DG_DATA_CHECK(d != 0, "IntegerDiv: a divisor eta * b + eps is 0");
        if (d != 0)
            y = trunc_div_(add_(n, (n >= 0 ? 1 : -1) * (d >> 1)), d);
        store_(p->y, p->y_dtype, i, DG_FAULT_I(DG_FAULT_IPOINT, y));
    }
}
