/* Quantized kernels: QuantizeLinear, DequantizeLinear, QLinearGlobalAveragePool,
 * QLinearSoftmax, QLinearAdd / Mul and the table lookups of QLinearSigmoid /
 * QLinearLeakyRelu (dg_k_quant.h states the arithmetic;
 * QLinearMatMul / MatMulInteger / QGemm are in quant_matmul.c, QLinearConv /
 * ConvInteger in quant_conv.c). Each kernel splits its outer loop over the
 * team's cores. */
#include "dg_internal.h"
#include "quant_internal.h"

#include <stdint.h>

void dg_quantize_linear(void *args)
{
    const dg_quantize_args_t *p = (const dg_quantize_args_t *)args;
    const uint32_t n = p->outer * p->axis_len * p->inner;
    dg_range_t r = dg_split(n);
    uint32_t i;
    if (!p->per_axis) {
        const float s = p->scale[0], inv = q_inv(s);
        const int32_t zp = q_zp(p->zero_point, 0, p->y_dtype);
        for (i = r.start; i < r.end; i++)
            q_store(p->y, i, q_div_rne(p->x[i], s, inv), zp, p->y_dtype);
        return;
    }
    for (i = r.start; i < r.end; i++) {
        const uint32_t a = (i / p->inner) % p->axis_len;
        q_store(p->y, i, q_round(p->x[i] / p->scale[a]), q_zp(p->zero_point, a, p->y_dtype), p->y_dtype);
    }
}

void dg_dequantize_linear(void *args)
{
    const dg_dequantize_args_t *p = (const dg_dequantize_args_t *)args;
    const uint32_t n = p->outer * p->axis_len * p->inner;
    dg_range_t r = dg_split(n);
    uint32_t i;
    for (i = r.start; i < r.end; i++) {
        const uint32_t a = p->per_axis ? (i / p->inner) % p->axis_len : 0;
        const int32_t d = q_ld(p->x, i, p->x_dtype) - q_zp(p->zero_point, a, p->x_dtype);
        p->y[i] = (float)d * p->scale[a];
    }
}

void dg_qlinear_global_average_pool(void *args)
{
    const dg_qgap_args_t *p = (const dg_qgap_args_t *)args;
    const int32_t xzp = q_zp(p->x_zero_point, 0, p->dtype), yzp = q_zp(p->y_zero_point, 0, p->dtype);
    const float m = p->x_scale[0] / (p->y_scale[0] * (float)p->image);
    dg_range_t r = dg_split(p->planes);
    uint32_t c, i;
    for (c = r.start; c < r.end; c++) {
        int32_t s = 0;
        for (i = 0; i < p->image; i++)
            s += q_ld(p->x, c * p->image + i, p->dtype) - xzp;
        q_out(p->y, c, s, m, yzp, p->dtype);
    }
}

/* One row of QLinearSoftmax: its maximum's entry is the table's top one
 * (index 255 unsigned; 127, the top step of int8 read as a byte, signed). */
static void qsoftmax_row(const dg_qsoftmax_args_t *p, uint32_t row)
{
    const uint32_t base = row * p->d;
    const int sgn = p->dtype == DG_DT_I8;
    const int32_t yzp = q_zp(p->y_zero_point, 0, p->dtype);
    int32_t xmax = q_ld(p->x, base, p->dtype);
    float sum = 0.0f;
    uint32_t i;
    for (i = 1; i < p->d; i++) {
        const int32_t v = q_ld(p->x, base + i, p->dtype);
        xmax = v > xmax ? v : xmax;
    }
    /* Table index of a value v: 255 - xmax + v unsigned, (uint8)(127 - xmax + v) signed. */
#define QSM_INDEX(v) (sgn ? (uint8_t)(127 - xmax + (v)) : (uint32_t)(255 - xmax + (v)))
    for (i = 0; i < p->d; i++)
        sum += p->table[QSM_INDEX(q_ld(p->x, base + i, p->dtype))];
    if (sum == 0.0f)
        return;
    for (i = 0; i < p->d; i++) {
        const float e = p->table[QSM_INDEX(q_ld(p->x, base + i, p->dtype))];
        const int32_t q = q_round((e * p->y_scale_floor) / sum) + yzp;
        /* onnxruntime caps at 255 and keeps the low byte (int8 wraps). */
        if (sgn)
            ((int8_t *)p->y)[base + i] = (int8_t)(q > 255 ? 255 : q);
        else
            ((uint8_t *)p->y)[base + i] = (uint8_t)(q > 255 ? 255 : q);
    }
#undef QSM_INDEX
}

void dg_qlinear_softmax(void *args)
{
    const dg_qsoftmax_args_t *p = (const dg_qsoftmax_args_t *)args;
    dg_range_t r = dg_split(p->rows);
    uint32_t row;
    for (row = r.start; row < r.end; row++)
        qsoftmax_row(p, row);
}

/* QLinearAdd/Mul's per-call constants. */
typedef struct {
    int32_t azp, bzp, yzp;
    float as, bs, ys, inv;
    int mul;
} qbinary_k_t;

/* y[i] from a[ao] and b[bo]: each dequantized operand and their sum or
 * product is rounded to f32 on its own, as onnxruntime's. */
static DG_INLINE void qbinary_one(const dg_qbinary_args_t *p, const qbinary_k_t *k, uint32_t i, uint32_t ao,
                                  uint32_t bo)
{
    volatile float va, vb, v;
    va = k->as * (float)(q_ld(p->a, ao, p->dtype) - k->azp);
    vb = k->bs * (float)(q_ld(p->b, bo, p->dtype) - k->bzp);
    v = k->mul ? va * vb : va + vb;
    q_store(p->y, i, q_div_rne(v, k->ys, k->inv), k->yzp, p->dtype);
}

/* Same shapes (ndim 0) index all three alike; otherwise the operands'
 * offsets follow the shared broadcast walk. */
static void qbinary(const dg_qbinary_args_t *p, int mul)
{
    const qbinary_k_t k = {q_zp(p->a_zero_point, 0, p->dtype), q_zp(p->b_zero_point, 0, p->dtype),
                           q_zp(p->y_zero_point, 0, p->dtype), p->a_scale[0], p->b_scale[0], p->y_scale[0],
                           q_inv(p->y_scale[0]), mul};
    const uint32_t *const st[2] = {p->a_strides, p->b_strides};
    const dg_range_t r = dg_split(p->n);
    uint32_t i, idx[DG_MAX_DIMS], off[2];
    if (!p->ndim) {
        for (i = r.start; i < r.end; i++)
            qbinary_one(p, &k, i, i, i);
        return;
    }
    dg_bcast_start(idx, off, p->ndim, p->shape, 2, st, r.start);
    for (i = r.start; i < r.end; i++, dg_bcast_next(idx, off, p->ndim, p->shape, 2, st))
        qbinary_one(p, &k, i, off[0], off[1]);
}

void dg_qlinear_add(void *args)
{
    qbinary((const dg_qbinary_args_t *)args, 0);
}

void dg_qlinear_mul(void *args)
{
    qbinary((const dg_qbinary_args_t *)args, 1);
}

void dg_q_lookup(void *args)
{
    const dg_qlookup_args_t *p = (const dg_qlookup_args_t *)args;
    const uint8_t *x = (const uint8_t *)p->x;
    uint8_t *y = (uint8_t *)p->y;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++)
        y[i] = p->table[x[i]];
}
