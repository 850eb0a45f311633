/* Quantized kernels: QuantizeLinear, DequantizeLinear, QLinearMatMul /
 * MatMulInteger and QLinearConv / ConvInteger (dg_kernels.h states the
 * arithmetic). Each kernel splits its outer loop over the team's cores. */
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

/* The sum over k of (a[k] - azp)(b[k * sb] - bzp), one function per pair
 * of operand types, so that the loop loads plain bytes. */
#define DG_QDOT(NAME, AT, BT)                                                                                 \
    static int32_t NAME(const void *a, const void *b, uint32_t k, uint32_t sb, int32_t azp, int32_t bzp)    \
    {                                                                                                         \
        const AT *pa = (const AT *)a;                                                                         \
        const BT *pb = (const BT *)b;                                                                         \
        int32_t s = 0;                                                                                        \
        uint32_t i;                                                                                           \
        for (i = 0; i < k; i++)                                                                               \
            s += ((int32_t)pa[i] - azp) * ((int32_t)pb[i * sb] - bzp);                                        \
        return s;                                                                                             \
    }

DG_QDOT(qdot_ss, int8_t, int8_t)
DG_QDOT(qdot_us, uint8_t, int8_t)
DG_QDOT(qdot_su, int8_t, uint8_t)
DG_QDOT(qdot_uu, uint8_t, uint8_t)

typedef int32_t (*qdot_fn)(const void *, const void *, uint32_t, uint32_t, int32_t, int32_t);

/* The multiplier of B's column (or scale entry) c: alpha (QGemm) times
 * q_multiplier's. */
static float qmm_multiplier(const dg_qmatmul_args_t *p, uint32_t c)
{
    if (p->alpha != 0.0f && p->a_scale && p->b_scale)
        return p->y_scale ? p->alpha * p->a_scale[0] * p->b_scale[c] / p->y_scale[0]
                          : p->alpha * p->a_scale[0] * p->b_scale[c];
    return q_multiplier(p->a_scale, p->b_scale, p->y_scale, c);
}

/* Row `i` of one batch's product: y[i, :] = sum_k (a[i,k] - a_zp)(b[k,:] - b_zp). */
static void qmatmul_row(const dg_qmatmul_args_t *p, uint32_t aoff, uint32_t boff, uint32_t i, uint32_t yoff)
{
    const int32_t azp = q_zp(p->a_zero_point, p->a_zp_per_row ? i : 0, p->a_dtype);
    const int32_t yzp = q_zp(p->y_zero_point, 0, p->y_dtype);
    const int as = p->a_dtype == DG_DT_I8, bs = p->b_dtype == DG_DT_I8;
    const qdot_fn dot = as ? (bs ? qdot_ss : qdot_su) : (bs ? qdot_us : qdot_uu);
    /* B's element (k, j): stride along k and along j. */
    const uint32_t sk = p->trans_b ? 1 : p->n, sj = p->trans_b ? p->k : 1;
    uint32_t j;
    for (j = 0; j < p->n; j++) {
        const uint32_t c = p->b_per_col ? j : 0;
        const int32_t bzp = q_zp(p->b_zero_point, c, p->b_dtype);
        /* 8-bit operands: element offsets are byte offsets. */
        const uint8_t *a = (const uint8_t *)p->a + aoff + i * p->k;
        const uint8_t *b = (const uint8_t *)p->b + boff + j * sj;
        int32_t s = (p->bias ? p->bias[j] : 0) + dot(a, b, p->k, sk, azp, bzp);
        q_out(p->y, yoff + i * p->n + j, s, qmm_multiplier(p, c), yzp, p->y_dtype);
    }
}

/* Output columns computed at once: their int32 sums live on a worker's
 * small stack. */
#define QCONV_COLS 32u

/* The output columns [lo, hi) of a chunk starting at `ow0` whose input
 * column ow * stride + off lies inside the row (the others read the pad,
 * x_zp, which adds nothing). */
static void qconv_cols(const dg_qconv_args_t *p, int32_t off, uint32_t ow0, uint32_t n, uint32_t *lo, uint32_t *hi)
{
    const int32_t st = (int32_t)p->stride_w, w = (int32_t)p->in_w;
    int32_t a = off < 0 ? (-off + st - 1) / st : 0;
    int32_t b = w - off <= 0 ? 0 : (w - off + st - 1) / st;
    a = a < (int32_t)ow0 ? (int32_t)ow0 : a;
    b = b > (int32_t)(ow0 + n) ? (int32_t)(ow0 + n) : b;
    *lo = (uint32_t)a;
    *hi = (uint32_t)(b > a ? b : a);
}

/* The window sums of `n` output columns from `ow0` of output channel oc,
 * row oh, sample nb, into acc: for each kernel column (its range of
 * output columns that read inside the row found once), over the group's
 * input channels and the kernel rows. Integer sums: the order does not
 * change them. One function per pair of operand types, so that the inner
 * loop loads plain bytes. */
#define DG_QCONV_ROW(NAME, XT, WT)                                                                             \
    static void NAME(const dg_qconv_args_t *p, uint32_t nb, uint32_t oc, uint32_t oh, uint32_t ow0, uint32_t n, \
                     int32_t xzp, int32_t wzp, int32_t *acc)                                                    \
    {                                                                                                           \
        const uint32_t cpg = p->in_c / p->group, g = oc / (p->out_c / p->group), plane = p->in_h * p->in_w;    \
        const uint32_t kk = p->k_h * p->k_w, st = p->stride_w;                                                 \
        const XT *x = (const XT *)p->x + (nb * p->in_c + g * cpg) * plane;                                     \
        const WT *w = (const WT *)p->w + oc * cpg * kk;                                                        \
        const int32_t ih0 = (int32_t)(oh * p->stride_h) - (int32_t)p->pad_top;                                 \
        uint32_t i, ic, kh, kw, lo, hi;                                                                        \
        for (i = 0; i < n; i++)                                                                                 \
            acc[i] = 0;                                                                                         \
        for (kw = 0; kw < p->k_w; kw++) {                                                                       \
            const int32_t off = (int32_t)(kw * p->dil_w) - (int32_t)p->pad_left;                                \
            qconv_cols(p, off, ow0, n, &lo, &hi);                                                               \
            if (lo >= hi)                                                                                       \
                continue;                                                                                       \
            for (ic = 0; ic < cpg; ic++) {                                                                      \
                for (kh = 0; kh < p->k_h; kh++) {                                                               \
                    const int32_t ih = ih0 + (int32_t)(kh * p->dil_h);                                          \
                    const int32_t wv = (int32_t)w[ic * kk + kh * p->k_w + kw] - wzp;                            \
                    const XT *xp;                                                                               \
                    int32_t *a = acc + (lo - ow0);                                                              \
                    if (ih < 0 || ih >= (int32_t)p->in_h)                                                       \
                        continue;                                                                               \
                    xp = x + ic * plane + (uint32_t)ih * p->in_w + (uint32_t)((int32_t)(lo * st) + off);        \
                    for (i = lo; i < hi; i++, xp += st)                                                         \
                        *a++ += ((int32_t)*xp - xzp) * wv;                                                      \
                }                                                                                               \
            }                                                                                                   \
        }                                                                                                       \
    }

DG_QCONV_ROW(qconv_row_ss, int8_t, int8_t)
DG_QCONV_ROW(qconv_row_us, uint8_t, int8_t)
DG_QCONV_ROW(qconv_row_su, int8_t, uint8_t)
DG_QCONV_ROW(qconv_row_uu, uint8_t, uint8_t)

typedef void (*qconv_row_fn)(const dg_qconv_args_t *, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, int32_t,
                             int32_t, int32_t *);

/* ---- QLinearConv / ConvInteger, the packed path ---------------------------
 * Each core gathers the windows of QCONV_PIX output columns into its
 * scratch slot (pads read as x_zp) and multiplies them with W's rows four
 * bytes at a time. With the raw bytes, sum (x - xzp)(w - wzp) =
 * sum x w - wzp sum x - xzp sum w + K xzp wzp: the same int32 sum as the
 * direct loop (in two's complement, whatever the order). */
#define QCONV_PIX 4u
#define QCONV_SLOTS 8u

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

/* The packed path's geometry: W's row length k (0: the path cannot take
 * the node), k rounded up to 4 bytes, and whether each core keeps a
 * zero-padded copy of W (rows of kp bytes) because k is not. */
typedef struct {
    uint32_t k, kp, copy_w;
} qconv_packing_t;

static qconv_packing_t qconv_packing(const dg_qconv_args_t *p)
{
    qconv_packing_t g;
    g.k = p->in_c / p->group * p->k_h * p->k_w;
    g.kp = (g.k + 3u) & ~3u;
    g.copy_w = g.k != g.kp;
    if (!p->scratch || ((uintptr_t)p->scratch & 3u) != 0 || (!g.copy_w && ((uintptr_t)p->w & 3u) != 0))
        g.k = 0;
    return g;
}

/* The scratch: the per-channel tables (qconv_chan_t, four words per output
 * channel) and W's copy, shared by the cores, then one slot of QCONV_PIX
 * gathered windows per core. */
static uint32_t qconv_shared_bytes(const dg_qconv_args_t *p, const qconv_packing_t *g)
{
    return 16u * p->out_c + (g->copy_w ? p->out_c * g->kp : 0u);
}

/* The window of output pixel (oh, ow) of sample nb, group g, into
 * col[0, k) in W's (channel, row, column) order, then zeros up to kp;
 * returns the sum of its k values. Pads read as xzp. The fields are read
 * into locals once: col's byte stores may alias anything. */
#define DG_QCONV_GATHER(NAME, XT)                                                                                 \
    static int32_t NAME(const dg_qconv_args_t *p, uint32_t nb, uint32_t g, uint32_t oh, uint32_t ow, XT xzp,      \
                        XT *col, const qconv_packing_t *pk)                                                       \
    {                                                                                                             \
        const uint32_t cpg = p->in_c / p->group, in_h = p->in_h, in_w = p->in_w, plane = in_h * in_w;             \
        const uint32_t k_h = p->k_h, k_w = p->k_w, dil_h = p->dil_h, dil_w = p->dil_w, pad = pk->kp - pk->k;      \
        const XT *x = (const XT *)p->x + (nb * p->in_c + g * cpg) * plane;                                        \
        const int32_t ih0 = (int32_t)(oh * p->stride_h) - (int32_t)p->pad_top;                                    \
        const int32_t iw0 = (int32_t)(ow * p->stride_w) - (int32_t)p->pad_left;                                   \
        const int inner = ih0 >= 0 && iw0 >= 0 && ih0 + (int32_t)((k_h - 1u) * dil_h) < (int32_t)in_h &&          \
                          iw0 + (int32_t)((k_w - 1u) * dil_w) < (int32_t)in_w;                                    \
        int32_t sum = 0;                                                                                          \
        uint32_t ic, kh, kw;                                                                                      \
        if (inner) { /* the whole window inside: no tests */                                                     \
            for (ic = 0; ic < cpg; ic++, x += plane) {                                                            \
                const XT *r = x + (uint32_t)ih0 * in_w + (uint32_t)iw0;                                           \
                for (kh = 0; kh < k_h; kh++, r += dil_h * in_w) {                                                 \
                    for (kw = 0; kw < k_w; kw++) {                                                                \
                        const XT v = r[kw * dil_w];                                                               \
                        *col++ = v;                                                                               \
                        sum += v;                                                                                 \
                    }                                                                                             \
                }                                                                                                 \
            }                                                                                                     \
        } else {                                                                                                  \
            for (ic = 0; ic < cpg; ic++, x += plane) {                                                            \
                for (kh = 0; kh < k_h; kh++) {                                                                    \
                    const int32_t ih = ih0 + (int32_t)(kh * dil_h);                                               \
                    const int in_row = ih >= 0 && ih < (int32_t)in_h;                                             \
                    const XT *row = in_row ? x + (uint32_t)ih * in_w : x;                                         \
                    for (kw = 0; kw < k_w; kw++) {                                                                \
                        const int32_t iw = iw0 + (int32_t)(kw * dil_w);                                           \
                        const XT v = in_row && iw >= 0 && iw < (int32_t)in_w ? row[iw] : xzp;                     \
                        *col++ = v;                                                                               \
                        sum += v;                                                                                 \
                    }                                                                                             \
                }                                                                                                 \
            }                                                                                                     \
        }                                                                                                         \
        for (kw = 0; kw < pad; kw++)                                                                              \
            *col++ = 0;                                                                                           \
        return sum;                                                                                               \
    }

DG_QCONV_GATHER(qconv_gather_s, int8_t)
DG_QCONV_GATHER(qconv_gather_u, uint8_t)

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

/* A core's per-channel tables in its slot (the divisions once, not per
 * output: the cluster's cores share one divider). */
typedef struct {
    uint32_t *base; /* bias - xzp sum w + K xzp wzp */
    uint32_t *wzp;
    float *m;
    uint32_t *lim;
} qconv_chan_t;

/* Requantize n output pixels from pix0 of channel oc: acc holds sum x w
 * of each, sx its window's sum x. Unsigned arithmetic: the terms wrap as
 * the direct loop's sums would. */
static inline void qconv_store(void *y, uint32_t at, uint32_t n, const int32_t *acc, const int32_t *sx,
                               const qconv_chan_t *ch, uint32_t oc, int32_t yzp, uint32_t dt)
{
    const uint32_t base = ch->base[oc], wzp = ch->wzp[oc], lim = ch->lim[oc];
    const float m = ch->m[oc];
    uint32_t j;
    for (j = 0; j < n; j++)
        q_out8(y, at + j, (int32_t)((uint32_t)acc[j] - wzp * (uint32_t)sx[j] + base), m, lim, yzp, dt);
}

/* The tables of output channels [lo, hi) and their rows of W's copy (the
 * divisions once per channel, not per output: the cluster's cores share
 * one divider). */
#define DG_QCONV_ROWS(NAME, WSUM)                                                                                  \
    static void NAME(const dg_qconv_args_t *p, const qconv_packing_t *pk, const qconv_chan_t *ch, uint8_t *copy,  \
                     uint32_t lo, uint32_t hi, int32_t xzp)                                                       \
    {                                                                                                             \
        uint32_t oc, i;                                                                                           \
        for (oc = lo; oc < hi; oc++) {                                                                            \
            const uint8_t *w = (const uint8_t *)p->w + oc * pk->k;                                                \
            const uint32_t c = p->w_per_channel ? oc : 0;                                                         \
            const uint32_t wzp = (uint32_t)q_zp(p->w_zero_point, c, p->w_dtype);                                  \
            const uint32_t *r;                                                                                    \
            int32_t sw = 0;                                                                                       \
            if (pk->copy_w) {                                                                                     \
                memcpy(copy + oc * pk->kp, w, pk->k);                                                             \
                memset(copy + oc * pk->kp + pk->k, 0, pk->kp - pk->k);                                            \
                w = copy + oc * pk->kp;                                                                           \
            }                                                                                                     \
            r = (const uint32_t *)w;                                                                              \
            for (i = 0; xzp != 0 && i < pk->kp / 4u; i++)                                                         \
                WSUM(sw, r[i], Q_ONES);                                                                           \
            ch->base[oc] = (uint32_t)(p->b ? p->b[oc] : 0) - (uint32_t)xzp * (uint32_t)sw +                      \
                           pk->k * (uint32_t)xzp * wzp;                                                           \
            ch->wzp[oc] = wzp;                                                                                    \
            ch->m[oc] = q_multiplier(p->x_scale, p->w_scale, p->y_scale, c);                                      \
            ch->lim[oc] = q_lim(ch->m[oc], p->y_dtype);                                                           \
        }                                                                                                         \
    }

DG_QCONV_ROWS(qconv_rows_s, Q_DOT_SS)
DG_QCONV_ROWS(qconv_rows_u, Q_DOT_UU)

/* The units [u0, u1): QCONV_PIX consecutive output pixels of one sample
 * and group (row-major, so a narrow output fills every lane), for every
 * output channel of the group, two channels at a time. */
#define DG_QCONV_PACKED(NAME, XT, GATHER, XW)                                                                     \
    static void NAME(const dg_qconv_args_t *p, const qconv_packing_t *pk, const qconv_chan_t *chan,               \
                     const uint8_t *w, uint8_t *slot, uint32_t u0, uint32_t u1, int32_t xzp, int32_t yzp)         \
    {                                                                                                             \
        const uint32_t opg = p->out_c / p->group, k4 = pk->kp / 4u, hw = p->out_h * p->out_w;                     \
        const uint32_t blocks = (hw + QCONV_PIX - 1u) / QCONV_PIX;                                                \
        const qconv_chan_t ch = *chan;                                                                            \
        XT *col = (XT *)slot;                                                                                     \
        const uint32_t *c0 = (const uint32_t *)col, *c1 = c0 + k4, *c2 = c1 + k4, *c3 = c2 + k4;                \
        int32_t sx[QCONV_PIX], a[QCONV_PIX], b[QCONV_PIX];                                                        \
        uint32_t u, oc, j;                                                                                        \
        for (u = u0; u < u1; u++) {                                                                               \
            const uint32_t pix0 = (u % blocks) * QCONV_PIX, g = (u / blocks) % p->group;                          \
            const uint32_t nb = u / (blocks * p->group), n = hw - pix0 < QCONV_PIX ? hw - pix0 : QCONV_PIX;       \
            uint32_t oh = pix0 / p->out_w, ow = pix0 % p->out_w;                                                  \
            for (j = 0; j < QCONV_PIX; j++) {                                                                     \
                if (j < n)                                                                                        \
                    sx[j] = GATHER(p, nb, g, oh, ow, (XT)xzp, col + j * pk->kp, pk);                              \
                else /* a pixel past the plane: computed, never stored */                                         \
                    memcpy(col + j * pk->kp, col, pk->kp);                                                        \
                if (++ow == p->out_w)                                                                             \
                    ow = 0, oh++;                                                                                 \
            }                                                                                                     \
            for (oc = g * opg; oc < (g + 1u) * opg; oc += 2u) {                                                   \
                const int two = oc + 1u < (g + 1u) * opg;                                                         \
                const uint32_t *w0 = (const uint32_t *)(w + oc * pk->kp), *w1 = two ? w0 + k4 : w0;               \
                int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, b0 = 0, b1 = 0, b2 = 0, b3 = 0;                           \
                Q_DOT_2X4(XW, FOUR, k4, w0, w1, c0, c1, c2, c3, a0, a1, a2, a3, b0, b1, b2, b3);                   \
                a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3;                                                       \
                qconv_store(p->y, (nb * p->out_c + oc) * hw + pix0, n, a, sx, &ch, oc, yzp, p->y_dtype);          \
                if (two) {                                                                                        \
                    b[0] = b0, b[1] = b1, b[2] = b2, b[3] = b3;                                                   \
                    qconv_store(p->y, (nb * p->out_c + oc + 1u) * hw + pix0, n, b, sx, &ch, oc + 1u, yzp,         \
                                p->y_dtype);                                                                      \
                }                                                                                                 \
            }                                                                                                     \
        }                                                                                                         \
    }

DG_QCONV_PACKED(qconv_packed_ss, int8_t, qconv_gather_s, Q_XW_SS)
DG_QCONV_PACKED(qconv_packed_us, uint8_t, qconv_gather_u, Q_XW_US)
DG_QCONV_PACKED(qconv_packed_su, int8_t, qconv_gather_s, Q_XW_SU)
DG_QCONV_PACKED(qconv_packed_uu, uint8_t, qconv_gather_u, Q_XW_UU)

typedef void (*qconv_packed_fn)(const dg_qconv_args_t *, const qconv_packing_t *, const qconv_chan_t *,
                                const uint8_t *, uint8_t *, uint32_t, uint32_t, int32_t, int32_t);

/* The packed path: every core of the team fills its share of the tables
 * (and of W's copy), then the first QCONV_SLOTS cores compute, each in its
 * slot. */
static void qconv_packed(const dg_qconv_args_t *p, const qconv_packing_t *pk, int32_t xzp, int32_t yzp)
{
    const int xs = p->x_dtype == DG_DT_I8, ws = p->w_dtype == DG_DT_I8;
    const qconv_packed_fn f =
        xs ? (ws ? qconv_packed_ss : qconv_packed_su) : (ws ? qconv_packed_us : qconv_packed_uu);
    const uint32_t blocks = (p->out_h * p->out_w + QCONV_PIX - 1u) / QCONV_PIX;
    uint8_t *sc = (uint8_t *)p->scratch, *copy = sc + 16u * p->out_c;
    const dg_range_t rows = dg_split(p->out_c);
    const uint32_t slot = qconv_shared_bytes(p, pk) + QCONV_PIX * pk->kp * (uint32_t)pi_core_id();
    dg_range_t r;
    qconv_chan_t ch;
    ch.base = (uint32_t *)sc;
    ch.wzp = ch.base + p->out_c;
    ch.m = (float *)(ch.wzp + p->out_c);
    ch.lim = (uint32_t *)(ch.m + p->out_c);
    (ws ? qconv_rows_s : qconv_rows_u)(p, pk, &ch, copy, rows.start, rows.end, xzp);
    pi_cl_team_barrier();
    r = dg_split_among(p->batch * p->group * blocks, QCONV_SLOTS);
    if (r.start < r.end)
        f(p, pk, &ch, pk->copy_w ? copy : (const uint8_t *)p->w, sc + slot, r.start, r.end, xzp, yzp);
}

/* ---- depthwise (one input and one output channel per group) -------------
 * Too few products per window for the gathered dot products: each output
 * sums (x - xzp)(w - wzp) over its taps inside the input directly (a pad
 * reads as xzp and adds nothing). Rows (sample, channel, output row) split
 * among the cores; a channel's weights, multiplier and bound are set up
 * once per run of its rows. */
#define QDW_TAPS 25u

typedef struct {
    int32_t w[QDW_TAPS];
    int32_t bias, xw; /* xw: xzp times the sum of w - wzp */
    float m;
    uint32_t lim;
} qdw_chan_t;

static void qdw_channel(const dg_qconv_args_t *p, uint32_t c, qdw_chan_t *ch)
{
    const uint32_t k = p->k_h * p->k_w, wc = p->w_per_channel ? c : 0;
    const int32_t wzp = q_zp(p->w_zero_point, wc, p->w_dtype);
    uint32_t i;
    ch->xw = 0;
    for (i = 0; i < k; i++) {
        ch->w[i] = q_ld(p->w, c * k + i, p->w_dtype) - wzp;
        ch->xw += ch->w[i];
    }
    ch->xw *= q_zp(p->x_zero_point, 0, p->x_dtype);
    ch->bias = p->b ? p->b[c] : 0;
    ch->m = q_multiplier(p->x_scale, p->w_scale, p->y_scale, wc);
    ch->lim = q_lim(ch->m, p->y_dtype);
}

#define DG_QDW_ROW(NAME, XT)                                                                                    \
    static void NAME(const dg_qconv_args_t *p, const qdw_chan_t *ch, const XT *x, uint32_t oh, uint32_t yoff,   \
                     int32_t xzp, int32_t yzp)                                                                  \
    {                                                                                                          \
        const uint32_t in_h = p->in_h, in_w = p->in_w, k_h = p->k_h, k_w = p->k_w, out_w = p->out_w;          \
        const uint32_t dil_h = p->dil_h, dil_w = p->dil_w, s_w = p->stride_w, dt = p->y_dtype;                \
        const int32_t ih0 = (int32_t)(oh * p->stride_h) - (int32_t)p->pad_top, pl = (int32_t)p->pad_left;     \
        void *y = p->y;                                                                                        \
        uint32_t kh, kw, ow;                                                                                   \
        uint32_t lo = 0, hi = 0;                                                                               \
        if (k_h == 3u && k_w == 3u && dil_h == 1u && dil_w == 1u && ih0 >= 0 && ih0 + 2 < (int32_t)in_h) {     \
            /* 3x3 rows inside: the weights in registers, xzp taken out once */                                \
            const int32_t w0 = ch->w[0], w1 = ch->w[1], w2 = ch->w[2], w3 = ch->w[3], w4 = ch->w[4];           \
            const int32_t w5 = ch->w[5], w6 = ch->w[6], w7 = ch->w[7], w8 = ch->w[8];                          \
            const int32_t base = ch->bias - ch->xw;                                                            \
            const float m = ch->m;                                                                             \
            const uint32_t lim = ch->lim;                                                                      \
            for (lo = 0; lo < out_w && (int32_t)(lo * s_w) < pl; lo++)                                         \
                ;                                                                                              \
            for (hi = lo; hi < out_w && (int32_t)(hi * s_w) - pl + 2 < (int32_t)in_w; hi++) {                 \
                const XT *r0 = x + (uint32_t)ih0 * in_w + (hi * s_w - (uint32_t)pl), *r1 = r0 + in_w,          \
                         *r2 = r1 + in_w;                                                                      \
                const int32_t acc = base + r0[0] * w0 + r0[1] * w1 + r0[2] * w2 + r1[0] * w3 + r1[1] * w4 +   \
                                    r1[2] * w5 + r2[0] * w6 + r2[1] * w7 + r2[2] * w8;                         \
                q_out8(y, yoff + hi, acc, m, lim, yzp, dt);                                                    \
            }                                                                                                  \
        }                                                                                                      \
        for (ow = 0; ow < out_w; ow++) {                                                                       \
            const int32_t iw0 = (int32_t)(ow * s_w) - pl;                                                      \
            const int inner_w = iw0 >= 0 && iw0 + (int32_t)((k_w - 1u) * dil_w) < (int32_t)in_w;              \
            int32_t acc = ch->bias;                                                                            \
            if (ow == lo && hi > lo) { /* done above */                                                        \
                ow = hi - 1u;                                                                                  \
                continue;                                                                                      \
            }                                                                                                  \
            for (kh = 0; kh < k_h; kh++) {                                                                     \
                const int32_t ih = ih0 + (int32_t)(kh * dil_h);                                                \
                const XT *r = x + (uint32_t)ih * in_w;                                                         \
                const int32_t *w = ch->w + kh * k_w;                                                           \
                if (ih < 0 || ih >= (int32_t)in_h)                                                             \
                    continue;                                                                                  \
                if (inner_w) {                                                                                 \
                    for (kw = 0; kw < k_w; kw++)                                                               \
                        acc += ((int32_t)r[iw0 + (int32_t)(kw * dil_w)] - xzp) * w[kw];                        \
                    continue;                                                                                  \
                }                                                                                              \
                for (kw = 0; kw < k_w; kw++) {                                                                 \
                    const int32_t iw = iw0 + (int32_t)(kw * dil_w);                                            \
                    if (iw >= 0 && iw < (int32_t)in_w)                                                         \
                        acc += ((int32_t)r[iw] - xzp) * w[kw];                                                 \
                }                                                                                              \
            }                                                                                                  \
            q_out8(y, yoff + ow, acc, ch->m, ch->lim, yzp, dt);                                                \
        }                                                                                                      \
    }

DG_QDW_ROW(qdw_row_s, int8_t)
DG_QDW_ROW(qdw_row_u, uint8_t)

static void qconv_depthwise(const dg_qconv_args_t *p, int32_t xzp, int32_t yzp)
{
    const uint32_t plane = p->in_h * p->in_w, oplane = p->out_h * p->out_w;
    const dg_range_t r = dg_split(p->batch * p->out_c * p->out_h);
    uint32_t u, c = UINT32_MAX, oh = r.start % p->out_h, nc = r.start / p->out_h;
    qdw_chan_t ch;
    for (u = r.start; u < r.end; u++) {
        const uint32_t cc = nc % p->out_c;
        if (cc != c) { /* set up once per run of the channel's rows */
            c = cc;
            qdw_channel(p, c, &ch);
        }
        if (p->x_dtype == DG_DT_I8)
            qdw_row_s(p, &ch, (const int8_t *)p->x + nc * plane, oh, nc * oplane + oh * p->out_w, xzp, yzp);
        else
            qdw_row_u(p, &ch, (const uint8_t *)p->x + nc * plane, oh, nc * oplane + oh * p->out_w, xzp, yzp);
        if (++oh == p->out_h)
            oh = 0, nc++;
    }
}

void dg_qlinear_conv(void *args)
{
    const dg_qconv_args_t *p = (const dg_qconv_args_t *)args;
    const int32_t xzp = q_zp(p->x_zero_point, 0, p->x_dtype);
    const int32_t yzp = q_zp(p->y_zero_point, 0, p->y_dtype);
    const int xs = p->x_dtype == DG_DT_I8, ws = p->w_dtype == DG_DT_I8;
    const qconv_row_fn row = xs ? (ws ? qconv_row_ss : qconv_row_su) : (ws ? qconv_row_us : qconv_row_uu);
    const qconv_packing_t pk = qconv_packing(p);
    dg_range_t r;
    int32_t acc[QCONV_COLS];
    uint32_t u, ow, i;
    if (pk.k && p->in_c == p->group && p->out_c == p->group && p->k_h * p->k_w <= QDW_TAPS) {
        qconv_depthwise(p, xzp, yzp);
        return;
    }
    if (pk.k) {
        qconv_packed(p, &pk, xzp, yzp);
        return;
    }
    /* One unit of work: an output row (sample, channel, row). */
    r = dg_split(p->batch * p->out_c * p->out_h);
    for (u = r.start; u < r.end; u++) {
        const uint32_t oh = u % p->out_h, oc = (u / p->out_h) % p->out_c, nb = u / (p->out_h * p->out_c);
        const uint32_t c = p->w_per_channel ? oc : 0;
        const int32_t wzp = q_zp(p->w_zero_point, c, p->w_dtype);
        const int32_t bias = p->b ? p->b[oc] : 0;
        const float m = q_multiplier(p->x_scale, p->w_scale, p->y_scale, c);
        for (ow = 0; ow < p->out_w; ow += QCONV_COLS) {
            const uint32_t n = p->out_w - ow < QCONV_COLS ? p->out_w - ow : QCONV_COLS;
            row(p, nb, oc, oh, ow, n, xzp, wzp, acc);
            for (i = 0; i < n; i++)
                q_out(p->y, u * p->out_w + ow + i, acc[i] + bias, m, yzp, p->y_dtype);
        }
    }
}

/* ---- QLinearMatMul / MatMulInteger / QGemm, the packed path ---------------
 * With one B for every batch and k a multiple of 4, the team first copies
 * B as [n, k] rows (transposed unless trans_b) into the scratch and fills
 * per-column tables; then each core takes pairs of A's rows and multiplies
 * them with 4 of B's rows at a time, 4 bytes per packed dot product. The
 * zero points come out of the sum as the convolution's do. */
typedef struct {
    int32_t *sumb; /* sum of B's column j */
    uint32_t *bzp, *lim;
    float *m;
} qmm_chan_t;

/* The scratch bytes the packed path needs, 0 when it cannot take the node. */
static uint32_t qmm_packed_bytes(const dg_qmatmul_args_t *p)
{
    uint32_t d;
    if (!p->scratch || p->k % 4u != 0 || ((uintptr_t)p->a & 3u) != 0 || ((uintptr_t)p->scratch & 3u) != 0)
        return 0;
    for (d = 0; d < p->nbatch_dims; d++)
        if (p->b_bstrides[d] != 0)
            return 0;
    return p->n * p->k + 16u * p->n;
}

/* Columns [lo, hi): B's rows [n, k] and the tables. */
#define DG_QMM_ROWS(NAME, WSUM)                                                                                    \
    static void NAME(const dg_qmatmul_args_t *p, uint8_t *bt, const qmm_chan_t *ch, uint32_t lo, uint32_t hi)      \
    {                                                                                                             \
        const uint8_t *b = (const uint8_t *)p->b;                                                                 \
        uint32_t j, i;                                                                                            \
        for (j = lo; j < hi; j++) {                                                                               \
            const uint32_t c = p->b_per_col ? j : 0;                                                              \
            const uint32_t *r = (const uint32_t *)(bt + j * p->k);                                                \
            int32_t s = 0;                                                                                        \
            for (i = 0; i < p->k; i++)                                                                            \
                bt[j * p->k + i] = p->trans_b ? b[j * p->k + i] : b[i * p->n + j];                                \
            for (i = 0; i < p->k / 4u; i++)                                                                       \
                WSUM(s, r[i], Q_ONES);                                                                            \
            ch->sumb[j] = s;                                                                                      \
            ch->bzp[j] = (uint32_t)q_zp(p->b_zero_point, c, p->b_dtype);                                          \
            ch->m[j] = qmm_multiplier(p, c);                                                                      \
            ch->lim[j] = q_lim(ch->m[j], p->y_dtype);                                                             \
        }                                                                                                         \
    }

DG_QMM_ROWS(qmm_rows_s, Q_DOT_SS)
DG_QMM_ROWS(qmm_rows_u, Q_DOT_UU)

/* Output (row, j) from acc = sum a b and sa = sum of the row's a. */
static inline void qmm_store(const dg_qmatmul_args_t *p, const qmm_chan_t *ch, uint32_t at, uint32_t j, int32_t acc,
                             int32_t sa, uint32_t azp, int32_t yzp)
{
    const uint32_t bzp = ch->bzp[j];
    const uint32_t s = (uint32_t)acc - bzp * (uint32_t)sa - azp * (uint32_t)ch->sumb[j] + p->k * azp * bzp +
                       (uint32_t)(p->bias ? p->bias[j] : 0);
    q_out8(p->y, at + j, (int32_t)s, ch->m[j], ch->lim[j], yzp, p->y_dtype);
}

/* Rows [r0, r1) (over batch * m) in pairs, 4 columns at a time. */
#define DG_QMM_PACKED(NAME, AT, XW, ASUM)                                                                          \
    static void NAME(const dg_qmatmul_args_t *p, const uint8_t *bt, const qmm_chan_t *ch, uint32_t r0, uint32_t r1) \
    {                                                                                                             \
        const uint32_t k4 = p->k / 4u, n = p->n;                                                                  \
        const int32_t yzp = q_zp(p->y_zero_point, 0, p->y_dtype);                                                 \
        uint32_t row, j, i, d;                                                                                    \
        for (row = r0; row < r1; row += 2u) {                                                                     \
            const int two = row + 1u < r1;                                                                        \
            uint32_t aoff[2], rr, azp[2];                                                                         \
            int32_t sa[2];                                                                                        \
            const uint32_t *a0, *a1;                                                                              \
            for (rr = 0; rr < 2u; rr++) {                                                                         \
                const uint32_t ro = two || rr == 0 ? row + rr : row, bi = ro / p->m;                              \
                uint32_t rem = bi, off = 0;                                                                       \
                const uint32_t *ar;                                                                               \
                int32_t s = 0;                                                                                    \
                for (d = p->nbatch_dims; d-- > 0;) {                                                              \
                    off += rem % p->batch_shape[d] * p->a_bstrides[d];                                            \
                    rem /= p->batch_shape[d];                                                                     \
                }                                                                                                 \
                aoff[rr] = off + ro % p->m * p->k;                                                                \
                ar = (const uint32_t *)((const AT *)p->a + aoff[rr]);                                             \
                for (i = 0; i < k4; i++)                                                                          \
                    ASUM(s, ar[i], Q_ONES);                                                                       \
                sa[rr] = s;                                                                                       \
                azp[rr] = (uint32_t)q_zp(p->a_zero_point, p->a_zp_per_row ? ro % p->m : 0, p->a_dtype);           \
            }                                                                                                     \
            a0 = (const uint32_t *)((const AT *)p->a + aoff[0]);                                                  \
            a1 = (const uint32_t *)((const AT *)p->a + aoff[1]);                                                  \
            for (j = 0; j < n; j += 4u) {                                                                         \
                const uint32_t *b0 = (const uint32_t *)(bt + j * p->k);                                           \
                const uint32_t *b1 = j + 1u < n ? b0 + k4 : b0, *b2 = j + 2u < n ? b0 + 2u * k4 : b0;             \
                const uint32_t *b3 = j + 3u < n ? b0 + 3u * k4 : b0;                                              \
                int32_t x0 = 0, x1 = 0, x2 = 0, x3 = 0, y0 = 0, y1 = 0, y2 = 0, y3 = 0;                           \
                const uint32_t nj = n - j < 4u ? n - j : 4u;                                                      \
                int32_t xs[4], ys[4];                                                                             \
                Q_DOT_2X4(XW, TWO, k4, a0, a1, b0, b1, b2, b3, x0, x1, x2, x3, y0, y1, y2, y3);                   \
                xs[0] = x0, xs[1] = x1, xs[2] = x2, xs[3] = x3;                                                   \
                ys[0] = y0, ys[1] = y1, ys[2] = y2, ys[3] = y3;                                                   \
                for (i = 0; i < nj; i++) {                                                                        \
                    qmm_store(p, ch, row * n, j + i, xs[i], sa[0], azp[0], yzp);                                  \
                    if (two)                                                                                      \
                        qmm_store(p, ch, (row + 1u) * n, j + i, ys[i], sa[1], azp[1], yzp);                       \
                }                                                                                                 \
            }                                                                                                     \
        }                                                                                                         \
    }

DG_QMM_PACKED(qmm_packed_ss, int8_t, Q_XW_SS, Q_DOT_SS)
DG_QMM_PACKED(qmm_packed_us, uint8_t, Q_XW_US, Q_DOT_UU)
DG_QMM_PACKED(qmm_packed_su, int8_t, Q_XW_SU, Q_DOT_SS)
DG_QMM_PACKED(qmm_packed_uu, uint8_t, Q_XW_UU, Q_DOT_UU)

typedef void (*qmm_packed_fn)(const dg_qmatmul_args_t *, const uint8_t *, const qmm_chan_t *, uint32_t, uint32_t);

/* The packed path: the team fills B's copy and the tables, then splits
 * the row pairs. */
static void qmm_packed(const dg_qmatmul_args_t *p)
{
    const int as = p->a_dtype == DG_DT_I8, bs = p->b_dtype == DG_DT_I8;
    const qmm_packed_fn f = as ? (bs ? qmm_packed_ss : qmm_packed_su) : (bs ? qmm_packed_us : qmm_packed_uu);
    uint8_t *bt = (uint8_t *)p->scratch;
    const uint32_t pairs = (p->batch * p->m + 1u) / 2u;
    const dg_range_t cols = dg_split(p->n);
    dg_range_t r;
    qmm_chan_t ch;
    ch.sumb = (int32_t *)(bt + p->n * p->k);
    ch.bzp = (uint32_t *)(ch.sumb + p->n);
    ch.m = (float *)(ch.bzp + p->n);
    ch.lim = (uint32_t *)(ch.m + p->n);
    (bs ? qmm_rows_s : qmm_rows_u)(p, bt, &ch, cols.start, cols.end);
    pi_cl_team_barrier();
    r = dg_split(pairs);
    if (r.start < r.end)
        f(p, bt, &ch, 2u * r.start, 2u * r.end < p->batch * p->m ? 2u * r.end : p->batch * p->m);
}

void dg_qlinear_matmul(void *args)
{
    const dg_qmatmul_args_t *p = (const dg_qmatmul_args_t *)args;
    dg_range_t r;
    uint32_t row, d;
    if (qmm_packed_bytes(p)) {
        qmm_packed(p);
        return;
    }
    r = dg_split(p->batch * p->m);
    for (row = r.start; row < r.end; row++) {
        const uint32_t bi = row / p->m;
        uint32_t aoff = 0, boff = 0, rem = bi;
        for (d = p->nbatch_dims; d-- > 0;) {
            const uint32_t id = rem % p->batch_shape[d];
            rem /= p->batch_shape[d];
            aoff += id * p->a_bstrides[d];
            boff += id * p->b_bstrides[d];
        }
        qmatmul_row(p, aoff, boff, row % p->m, bi * p->m * p->n);
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
