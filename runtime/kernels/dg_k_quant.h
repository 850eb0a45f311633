/* Quantized kernels (quant.c, quant_conv.c, quant_matmul.c) and the
 * integer-emulation operators (requant.c). Included by dg_kernels.h,
 * which states the calling convention. */
#ifndef DG_K_QUANT_H
#define DG_K_QUANT_H

#include "dg_kernels.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * Quantized kernels (quant*.c): ONNX's QuantizeLinear, DequantizeLinear,
 * QLinearMatMul, QLinearConv, MatMulInteger and ConvInteger.
 *
 * A quantized operand is int8_t or uint8_t, named by its `*_dtype` field
 * (DG_DT_I8 / DG_DT_U8; an integer result DG_DT_I32). Scales are float;
 * a zero point has its operand's type, NULL meaning 0. Per-axis scales and
 * zero points: the tensor is a [outer, axis_len, inner] view and element
 * (o, a, i) takes entry a; per tensor, axis_len is the tensor's and
 * `per_axis` 0 (entry 0 for all).
 *
 * Products sum (x - x_zp) * (w - w_zp) in int32 over the window, in the
 * fp32 kernels' order (input channel, kernel row, kernel column; k for
 * matrices), then add the int32 bias. Requantization (QLinear*) multiplies
 * the sum, converted to float, by x_scale * w_scale / y_scale (computed in
 * fp32 in that order), rounds to nearest even, adds y_zp and saturates:
 * onnxruntime's arithmetic, so the results are its results exactly.
 * QuantizeLinear rounds x / scale (a division, as the reference does) to
 * nearest even, adds the zero point and saturates; DequantizeLinear is
 * (x - zp) * scale.
 * ====================================================================== */
typedef struct {
    const float *x;
    const float *scale;
    const void *zero_point; /* optional: NULL where the kernel does not read it */
    void *y;
    uint32_t outer, axis_len, inner;
    uint32_t per_axis; /* optional: 0 = one scale for the tensor */
    uint32_t y_dtype;
} dg_quantize_args_t;
void dg_quantize_linear(void *args);

typedef struct {
    const void *x;
    const float *scale;
    const void *zero_point; /* optional: NULL where the kernel does not read it */
    float *y;
    uint32_t outer, axis_len, inner;
    uint32_t per_axis; /* optional: 0 = one scale for the tensor */
    uint32_t x_dtype;
} dg_dequantize_args_t;
void dg_dequantize_linear(void *args);

/* QLinearMatMul (y quantized) and MatMulInteger (y int32, no scales), with
 * dg_matmul_args_t's batch broadcasting. b_per_col: B's scale and zero
 * point hold n values (one per column); a_zp_per_row: A's zero point holds
 * m values (MatMulInteger). */
typedef struct {
    const void *a;
    const void *b;
    void *y;
    const float *a_scale; /* optional: NULL where the kernel does not read it */
    const float *b_scale; /* optional: NULL where the kernel does not read it */
    const float *y_scale; /* optional: NULL where the kernel does not read it */
    const void *a_zero_point; /* optional: NULL where the kernel does not read it */
    const void *b_zero_point; /* optional: NULL where the kernel does not read it */
    const void *y_zero_point; /* optional: NULL where the kernel does not read it */
    uint32_t m, n, k;
    uint32_t batch;
    uint32_t nbatch_dims;
    uint32_t batch_shape[4];
    uint32_t a_bstrides[4];
    uint32_t b_bstrides[4];
    uint32_t a_dtype, b_dtype, y_dtype;
    uint32_t b_per_col; /* optional: 0 = one scale and zero point for B */
    uint32_t a_zp_per_row; /* optional: 0 = one zero point for A */
    /* QGemm (com.microsoft): B stored [n, k] when trans_b; the int32 bias
     * (n values) joins the sum; alpha scales the multiplier, which is
     * alpha * a_scale * b_scale / y_scale; with y_dtype DG_DT_F32 (no
     * y_scale) y is the sum times alpha * a_scale * b_scale, in float. */
    uint32_t trans_b; /* optional: 0 = as stored */
    const int32_t *bias; /* optional: NULL where the kernel does not read it */
    float alpha; /* optional: 0 = 1 */
    /* optional: NULL where the kernel does not read it. With one B for
     * every batch, k a multiple of 4 and A word-aligned: n * k bytes (B as
     * [n, k] rows) and 4 * n words of per-column tables; the team fills
     * them, then each core multiplies pairs of A's rows with 4 of B's rows
     * at a time, 4 bytes per packed dot product (DG_XPULP). Without it, a
     * direct loop gives the same sums. */
    void *scratch;
} dg_qmatmul_args_t;
void dg_qlinear_matmul(void *args);

/* QLinearAdd / QLinearMul (com.microsoft) with dg_binary_args_t's
 * broadcasting: a and b dequantized to float (scale * (v - zp)), added or
 * multiplied, divided by y_scale, rounded to nearest even, plus y_zp,
 * saturated. */
typedef struct {
    const void *a;
    const void *b;
    void *y;
    const float *a_scale;
    const float *b_scale;
    const float *y_scale;
    const void *a_zero_point; /* optional: NULL where the kernel does not read it */
    const void *b_zero_point; /* optional: NULL where the kernel does not read it */
    const void *y_zero_point; /* optional: NULL where the kernel does not read it */
    uint32_t n;
    uint32_t ndim;
    uint32_t shape[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t a_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t b_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t dtype;
} dg_qbinary_args_t;
void dg_qlinear_add(void *args);
void dg_qlinear_mul(void *args);
void dg_q_lookup(void *args);

/* QLinearGlobalAveragePool (com.microsoft, NCHW): y[c] is the sum of
 * x[c, :] - x_zp over the `image` values of a channel, requantized with
 * x_scale / (y_scale * image). `planes` = batch x channels. */
typedef struct {
    const void *x;
    void *y;
    const float *x_scale;
    const float *y_scale;
    const void *x_zero_point; /* optional: NULL where the kernel does not read it */
    const void *y_zero_point; /* optional: NULL where the kernel does not read it */
    uint32_t planes, image;
    uint32_t dtype;
} dg_qgap_args_t;
void dg_qlinear_global_average_pool(void *args);

/* QLinearSoftmax (com.microsoft) over the last `d` values of each of
 * `rows` rows, as onnxruntime computes it: `table` holds exp of the 256
 * input steps (the generator's, from x_scale and d), a row sums its
 * values' entries (shifted so that its maximum reads the top one) in
 * float, and y = round(entry * y_scale_floor / sum) + y_zp, where
 * y_scale_floor = floor(1 / y_scale). */
typedef struct {
    const void *x;
    void *y;
    const float *table;
    const void *y_zero_point; /* optional: NULL where the kernel does not read it */
    float y_scale_floor;
    uint32_t rows, d;
    uint32_t dtype;
} dg_qsoftmax_args_t;

/* QLinearSigmoid / QLinearLeakyRelu (com.microsoft): y[i] = table[x[i]],
 * x and y int8 or uint8 read as bytes, the 256-entry table built by the
 * generator as onnxruntime builds it (dequantize, the function in f32,
 * quantize). */
typedef struct {
    const void *x;
    void *y;
    const uint8_t *table;
    uint32_t n;
} dg_qlookup_args_t;
void dg_qlinear_softmax(void *args);

/* QLinearConv (y quantized, optional int32 bias b) and ConvInteger (y
 * int32, no scales, no bias) on dg_conv_args_t's 1-D / 2-D geometry. The
 * input's pads read as x_zp (a real zero). w_per_channel: W's scale and
 * zero point hold out_c values. */
typedef struct {
    const void *x;
    const void *w;
    const int32_t *b; /* optional: NULL where the kernel does not read it */
    void *y;
    const float *x_scale; /* optional: NULL where the kernel does not read it */
    const float *w_scale; /* optional: NULL where the kernel does not read it */
    const float *y_scale; /* optional: NULL where the kernel does not read it */
    const void *x_zero_point; /* optional: NULL where the kernel does not read it */
    const void *w_zero_point; /* optional: NULL where the kernel does not read it */
    const void *y_zero_point; /* optional: NULL where the kernel does not read it */
    uint32_t batch, in_c, in_h, in_w;
    uint32_t out_c, out_h, out_w;
    uint32_t k_h, k_w;
    uint32_t stride_h, stride_w;
    uint32_t dil_h, dil_w;
    uint32_t pad_top, pad_left;
    uint32_t group;
    uint32_t x_dtype, w_dtype, y_dtype;
    uint32_t w_per_channel; /* optional: 0 = one scale and zero point for W */
    /* optional: NULL where the kernel does not read it. With K = in_c /
     * group * k_h * k_w and KP = K rounded up to 4: 4 * out_c words of
     * per-channel tables, out_c * KP bytes (W's rows zero-padded, when KP
     * != K), then 8 slots (cores past the 8th idle) of 4 * KP bytes. Each
     * core gathers the windows of 4 output pixels into its slot and
     * multiplies them with W's rows 4 bytes at a time (packed dot products
     * with DG_XPULP). Without it, a direct loop gives the same sums. */
    void *scratch;
} dg_qconv_args_t;
void dg_qlinear_conv(void *args);

/* ######################################################################
 * Integer-emulation operators of third-party integer graphs (Deeploy):
 * Round and RequantShift, on tensors that hold integer values.
 * ###################################################################### */

/* Round (dg_unary_args_t): to the nearest integer, halves to even. */
void dg_round_f32(void *args);

/* Deeploy's RequantShift: y = clip(floor((x * mul + add + div / 2) / div),
 * lo, hi), computed exactly in 64-bit integers (x, mul and add hold
 * integer values; a fraction is truncated toward zero). div >= 1; signed:
 * lo = -(n_levels / 2), hi = n_levels / 2 - 1; unsigned: lo = 0, hi =
 * n_levels - 1. mul and add broadcast to x: ndim == 0: one value each
 * (their strides unread); else `shape` is x's shape and mul_strides /
 * add_strides their element strides per dimension (0 on a broadcast
 * dimension). x, mul, add and y are DG_DT_F32 or DG_DT_I32 each. */
typedef struct {
    const void *x;
    const void *mul;
    const void *add;
    void *y;
    uint32_t n;
    uint32_t ndim;
    uint32_t shape[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t mul_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t add_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    int32_t div;
    int32_t lo, hi;
    uint32_t x_dtype, mul_dtype, add_dtype, y_dtype;
} dg_requant_shift_args_t;
void dg_requant_shift(void *args);

/* ---- Deeploy's integer-only approximations (requant.c) ----------------
 * Operators quantlib exports for integerised transformers and Deeploy runs
 * on its Generic target. Every operand holds integer values, as DG_DT_F32
 * or DG_DT_I32 (the `*_dtype` fields); each kernel computes as Deeploy's
 * Generic C kernel does, in the operand's real values (Deeploy stores an
 * unsigned tensor shifted by n_levels / 2 and adds the shift back: the
 * real values are what the references hold). C's division truncates
 * toward zero, `>>` floors. */

/* Softmax over the last axis, rows of `len` values each.
 * dg_isoftmax (iSoftmax, I-BERT's polynomial): per value d = x - max(row),
 * z = min(-d / log2, 31), p = d + z * log2,
 * e = (uint32)((coeff_a * (p + coeff_b)^2 + coeff_c) >> z);
 * y = (uint32)(e * (n_levels - 1)) / sum(e), all in uint32 as Deeploy.
 * dg_itamax (ITAMax, group == 0, and ITAPartialMax, group > 0): shift =
 * (max - x + 16) >> 5, e = 256 >> shift, y = inv >> shift with inv =
 * ((n_levels - 1) * 256) / sum(e), or for groups a running maximum with
 * the partial sums rescaled and inv = ((n_levels / 2 - 1) * 256) / sum. */
typedef struct {
    const void *x;
    void *y;
    uint32_t rows, len;
    int32_t coeff_a, coeff_b, log2;
    int64_t coeff_c;
    uint32_t n_levels;
    uint32_t group;
    uint32_t x_dtype, y_dtype;
} dg_isoftmax_args_t;
void dg_isoftmax(void *args);
void dg_itamax(void *args);

/* Normalisation over rows of `len` values, weight (and bias) of `len`
 * values. dg_irmsnorm (iRMSNorm): s = sum(x^2) / len + 1, r = isqrt(s),
 * y = clip((x * w / r) >> log2d, lo, hi). dg_ilayernorm (iLayerNorm):
 * m = sum(x) / len, s = sum((x - m)^2) / len + 1, r = isqrt(s),
 * y = clip(((x - m) * w / r + b) >> log2d, lo, hi). */
typedef struct {
    const void *x;
    const void *w;
    const void *b; /* NULL for dg_irmsnorm */
    void *y;
    uint32_t rows, len;
    int32_t log2d;
    int32_t lo, hi;
    uint32_t x_dtype, w_dtype, b_dtype, y_dtype;
} dg_inorm_args_t;
void dg_irmsnorm(void *args);
void dg_ilayernorm(void *args);

/* Elementwise, n values, constants a, b, c as each kernel reads them.
 * dg_ihardswish (iHardswish): y = x * (clip(x + b, 0, c) * a), a =
 * one_over_six, b = three, c = six. dg_igelu (iGELU): s = sign(x),
 * q = min(|x|, -a), l = s * (b - (q + a)^2), y = x * ((b + l) >> 1), a = b
 * (negative), b = one. dg_itrue_div (TrueIntegerDiv): y = floor(x * a / b),
 * a = Delta * eta, b = y * eta + eps > 0. */
typedef struct {
    const void *x;
    void *y;
    uint32_t n;
    int64_t a, b, c;
    uint32_t x_dtype, y_dtype;
} dg_ipoint_args_t;
void dg_ihardswish(void *args);
void dg_igelu(void *args);
void dg_itrue_div(void *args);

/* iNoNorm: y = clip(((x * w + b) * mul) >> log2d, lo, hi), w and b
 * broadcast to x as dg_requant_shift's mul and add (ndim == 0: one value
 * each). */
typedef struct {
    const void *x;
    const void *w;
    const void *b;
    void *y;
    uint32_t n;
    uint32_t ndim;
    uint32_t shape[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t w_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t b_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    int32_t mul, log2d;
    int32_t lo, hi;
    uint32_t x_dtype, w_dtype, b_dtype, y_dtype;
} dg_inonorm_args_t;
void dg_inonorm(void *args);

/* IntegerDiv: n = delta_eta * a, d = eta * b + eps,
 * y = (n + sign(n) * (d >> 1)) / d (C's truncation: halves away from zero;
 * sign(0) = 1; d == 0 is a data error and gives 0). a and b broadcast to
 * `shape` with their element strides. */
typedef struct {
    const void *a;
    const void *b;
    void *y;
    uint32_t n;
    uint32_t ndim;
    uint32_t shape[DG_MAX_DIMS];
    uint32_t a_strides[DG_MAX_DIMS];
    uint32_t b_strides[DG_MAX_DIMS];
    int64_t delta_eta, eta, eps;
    uint32_t a_dtype, b_dtype, y_dtype;
} dg_integer_div_args_t;
void dg_integer_div(void *args);

#ifdef __cplusplus
}
#endif

#endif /* DG_K_QUANT_H */
