/* What the quantized kernels (quant.c, quant_conv.c, quant_matmul.c)
 * share: element access, rounding and requantization, and the packed dot
 * products. Static inline functions and macros only, so that each kernel
 * file that includes it defines nothing twice. */
#ifndef DG_QUANT_INTERNAL_H
#define DG_QUANT_INTERNAL_H

#include "dg_internal.h"

#include <stdint.h>

/* Element i of an int8 / uint8 / int32 operand as int32. */
static inline int32_t q_ld(const void *p, uint32_t i, uint32_t dt)
{
    switch (dt) {
    case DG_DT_I8:
        return ((const int8_t *)p)[i];
    case DG_DT_U8:
        return ((const uint8_t *)p)[i];
    default:
        return ((const int32_t *)p)[i];
    }
}

/* A zero point's entry i; NULL means 0. */
static inline int32_t q_zp(const void *zp, uint32_t i, uint32_t dt)
{
    return zp ? q_ld(zp, i, dt) : 0;
}

static inline int32_t q_min(uint32_t dt)
{
    return dt == DG_DT_I8 ? -128 : 0;
}

static inline int32_t q_max(uint32_t dt)
{
    return dt == DG_DT_I8 ? 127 : 255;
}

/* v rounded to nearest, ties to even, for |v| <= 2^22: adding and taking
 * away 1.5 * 2^23 leaves no fraction bits, and the FPU rounds the sum
 * to nearest even (the default mode, which deploygen never changes). The
 * clamp keeps the trick exact; every such value saturates an 8-bit
 * result anyway. NaN gives 0. */
static inline int32_t q_round(float v)
{
    const float magic = 12582912.0f;
    if (!(v == v))
        return 0;
    if (v > 4194304.0f)
        v = 4194304.0f;
    else if (v < -4194304.0f)
        v = -4194304.0f;
    return (int32_t)((v + magic) - magic);
}

/* v rounded to nearest, ties to even, for |v| < 2^31. On the RISC-V FPUs
 * one fcvt.w.s with a static rne mode: the product that feeds the asm is
 * rounded to float on its own, as onnxruntime's is. Elsewhere q_round,
 * with the product kept apart from its addition (see q_out). */
static inline int32_t q_rne(float v)
{
    int32_t r;
#if defined(__riscv) && defined(__riscv_zfinx)
    __asm__("fcvt.w.s %0, %1, rne" : "=r"(r) : "r"(v));
#elif defined(__riscv) && defined(__riscv_flen)
    __asm__("fcvt.w.s %0, %1, rne" : "=r"(r) : "f"(v));
#else
    volatile float u = v;
    r = q_round(u);
#endif
    return r;
}

/* The reciprocal of a scale for q_div_rne, or NaN (every quotient then
 * divides) where it would lose precision (subnormal or infinite). */
static inline float q_inv(float s)
{
    const float inv = 1.0f / s;
    return (inv > 1e-30f && inv < 1e30f) || (inv < -1e-30f && inv > -1e30f) ? inv : __builtin_nanf("");
}

/* q_round(x / s) with the division only where it can matter: q = x * inv
 * lies within 2^-12 of the rounded quotient when |q| < 1024 (inv and the
 * product each off by at most half an ulp), so a q farther than 0.4995
 * from a half-integer rounds as the quotient does. Otherwise (near a tie,
 * large, NaN) the division itself. The cluster's cores share one divider:
 * a division per element serializes them. */
static inline int32_t q_div_rne(float x, float s, float inv)
{
    const float q = x * inv;
    if (q > -1024.0f && q < 1024.0f) {
        const int32_t n = q_rne(q);
        const float f = q - (float)n;
        if (f < 0.4995f && f > -0.4995f)
            return n;
    }
    return q_round(x / s);
}

/* Store the rounded value r + zp, saturated to y's type, at y[i]. */
static inline void q_store(void *y, uint32_t i, int32_t r, int32_t zp, uint32_t dt)
{
    int32_t v = r + zp;
    const int32_t lo = q_min(dt), hi = q_max(dt);
    v = v < lo ? lo : (v > hi ? hi : v);
    if (dt == DG_DT_I8)
        ((int8_t *)y)[i] = (int8_t)v;
    else
        ((uint8_t *)y)[i] = (uint8_t)v;
}

/* The int32 sum s (bias included) as output element i of y: stored as
 * int32 (MatMulInteger, ConvInteger) or requantized with multiplier m. */
static inline void q_out(void *y, uint32_t i, int32_t s, float m, int32_t zp, uint32_t dt)
{
    /* Rounded to float on its own: fused into the rounding's addition
     * (an FMA, which -ffp-contract=fast allows on the chips) it would
     * round once where onnxruntime rounds twice. */
    volatile float v;
    if (dt == DG_DT_I32) {
        ((int32_t *)y)[i] = s;
        return;
    }
    v = (float)s * m;
    if (dt == DG_DT_F32) {
        ((float *)y)[i] = v;
        return;
    }
    q_store(y, i, q_round(v), zp, dt);
}

/* The requantization multiplier for scale entry `c` of W (or B); without
 * y_scale (a float result) the product of the input scales. */
static inline float q_multiplier(const float *xs, const float *ws, const float *ys, uint32_t c)
{
    if (!xs || !ws)
        return 0.0f;
    return ys ? xs[0] * ws[c] / ys[0] : xs[0] * ws[c];
}

/* s * m as an 8-bit output at y[i] when |s| < lim, with lim below
 * 2^21 / m: the product then lies well inside q_rne's range, so the
 * float clamps and NaN test go (m is finite and positive, or lim is 0).
 * Otherwise, and for int32 and float outputs, q_out. */
static inline void q_out8(void *y, uint32_t i, int32_t s, float m, uint32_t lim, int32_t zp, uint32_t dt)
{
    const uint32_t mag = s < 0 ? 0u - (uint32_t)s : (uint32_t)s;
    if (mag >= lim) {
        q_out(y, i, s, m, zp, dt);
        return;
    }
    q_store(y, i, q_rne((float)s * m), zp, dt);
}

/* q_out8's bound for multiplier m (0: every value takes q_out). */
static inline uint32_t q_lim(float m, uint32_t dt)
{
    float l;
    if ((dt != DG_DT_I8 && dt != DG_DT_U8) || !(m > 0.0f) || !(m < 1e30f))
        return 0;
    l = 2097152.0f / m;
    return l >= 2147483648.0f ? 0x7FFFFFFFu : (uint32_t)l;
}

#if defined(DG_XPULP)
/* Xpulpv2's pv.sdotsp.b / pv.sdotup.b / pv.sdotusp.b rd, rs1, rs2: rd plus
 * the four byte products (signed x signed, unsigned x unsigned, unsigned
 * rs1 x signed rs2). The stock assemblers do not know the names; .insn
 * spells the encoding (OP-V 0x57, funct3 1: bytes; funct7 0x5C / 0x50 /
 * 0x54). */
#define Q_SDOT(F7, acc, a, b) __asm__(".insn r 0x57, 1, " #F7 ", %0, %1, %2" : "+r"(acc) : "r"(a), "r"(b))
#define Q_DOT_SS(acc, a, b) Q_SDOT(0x5C, acc, a, b)
#define Q_DOT_UU(acc, a, b) Q_SDOT(0x50, acc, a, b)
#define Q_DOT_US(acc, a, b) Q_SDOT(0x54, acc, a, b)
#else
/* The same sums in plain C: the host emulation's and the fallback's. */
#define Q_BYTE(v, i, T) ((int32_t)(T)(uint8_t)((v) >> (8u * (i))))
#define Q_DOT4(T, U, a, b)                                                                                    \
    (Q_BYTE(a, 0, T) * Q_BYTE(b, 0, U) + Q_BYTE(a, 1, T) * Q_BYTE(b, 1, U) + Q_BYTE(a, 2, T) * Q_BYTE(b, 2, U) + \
     Q_BYTE(a, 3, T) * Q_BYTE(b, 3, U))
#define Q_DOT_SS(acc, a, b) ((acc) += Q_DOT4(int8_t, int8_t, a, b))
#define Q_DOT_UU(acc, a, b) ((acc) += Q_DOT4(uint8_t, uint8_t, a, b))
#define Q_DOT_US(acc, a, b) ((acc) += Q_DOT4(uint8_t, int8_t, a, b))
#endif
/* x times w for each pair of operand types (su: the unsigned one first). */
#define Q_XW_SS(acc, x, w) Q_DOT_SS(acc, x, w)
#define Q_XW_UU(acc, x, w) Q_DOT_UU(acc, x, w)
#define Q_XW_US(acc, x, w) Q_DOT_US(acc, x, w)
#define Q_XW_SU(acc, x, w) Q_DOT_US(acc, w, x)
#define Q_ONES 0x01010101u

/* The packed products' register block: two rows t0, t1 times four rows
 * f0..f3, k4 words each, into a0..a3 (t0's) and b0..b3 (t1's). XW takes
 * the activation's word first; X_IS says which side holds the activations
 * (TWO: a matrix product's rows of A; FOUR: a convolution's windows). */
#define Q_PAIR_TWO(XW, acc, t, f) XW(acc, t, f)
#define Q_PAIR_FOUR(XW, acc, t, f) XW(acc, f, t)
#define Q_DOT_2X4(XW, X_IS, k4, t0, t1, f0, f1, f2, f3, a0, a1, a2, a3, b0, b1, b2, b3)                        \
    do {                                                                                                       \
        uint32_t q_i;                                                                                          \
        for (q_i = 0; q_i < (k4); q_i++) {                                                                     \
            const uint32_t q_t0 = (t0)[q_i], q_t1 = (t1)[q_i];                                                 \
            const uint32_t q_f0 = (f0)[q_i], q_f1 = (f1)[q_i], q_f2 = (f2)[q_i], q_f3 = (f3)[q_i];             \
            Q_PAIR_##X_IS(XW, a0, q_t0, q_f0);                                                                 \
            Q_PAIR_##X_IS(XW, a1, q_t0, q_f1);                                                                 \
            Q_PAIR_##X_IS(XW, a2, q_t0, q_f2);                                                                 \
            Q_PAIR_##X_IS(XW, a3, q_t0, q_f3);                                                                 \
            Q_PAIR_##X_IS(XW, b0, q_t1, q_f0);                                                                 \
            Q_PAIR_##X_IS(XW, b1, q_t1, q_f1);                                                                 \
            Q_PAIR_##X_IS(XW, b2, q_t1, q_f2);                                                                 \
            Q_PAIR_##X_IS(XW, b3, q_t1, q_f3);                                                                 \
        }                                                                                                      \
    } while (0)

#endif /* DG_QUANT_INTERNAL_H */
