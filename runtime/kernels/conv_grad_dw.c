/* ConvGrad dW: the gradient of a convolution with respect to its weights.
 * Every dW element is owned by one core: no cross-core reduction. */
#include "dg_internal.h"
#include "conv_internal.h"

/* ---- dW ---------------------------------------------------------------------
 * dw[m, c, kh, kw] = sum over n, oh, ow (in this order) of dy[n, m, oh, ow]
 * x[n, g*cg + c, ih, iw], skipping positions outside the input, from
 * 0.0f. Work items are (group, block of up to 4 output channels, c, kh);
 * an item computes its channels x all kw in tiles of up to 4 kw, and for
 * one tile the ow where every tap of the tile is inside the input run
 * without checks (the input row is checked once per (n, oh)). */
typedef struct {
    const float *dy; /* dy[0, m0, 0, 0] */
    const float *x;  /* x[0, ci, 0, 0] */
    float *dw;       /* dw[m0, c, kh, 0] */
    uint32_t dy_n, x_n;  /* per-sample strides: out_c * out_hw, in_c * in_hw */
    uint32_t y_hw, w_m;  /* out_h * out_w; weights per output channel */
    uint32_t batch, out_h, out_w, in_h, in_w;
    uint32_t stride_h, stride_w, dil_w, pad_left;
    uint32_t acc; /* continue the sums already in dw */
    int32_t ih0;  /* input row of oh = 0: kh * dil_h - pad_top */
} dw_item_t;

/* MR channels x NT taps kw0 .. kw0 + NT - 1. */
#define DG_DW_TILE(NAME, MR, NT)                                                            \
    static void NAME(const dw_item_t *q, uint32_t kw0)                                      \
    {                                                                                       \
        float acc[MR][NT];                                                                  \
        int32_t off[NT];                                                                    \
        const uint32_t sw = q->stride_w;                                                      \
        uint32_t lo = 0, hi = q->out_w, n, oh, ow, r, t;                                    \
        for (t = 0; t < (NT); t++) {                                                        \
            /* ow with 0 <= ow * sw + off[t] < in_w */                                      \
            uint32_t a, b;                                                                  \
            off[t] = (int32_t)((kw0 + t) * q->dil_w) - (int32_t)q->pad_left;                \
            a = off[t] >= 0 ? 0 : ((uint32_t)(-off[t]) + q->stride_w - 1) / q->stride_w;    \
            b = (int32_t)q->in_w > off[t]                                                   \
                    ? ((uint32_t)((int32_t)q->in_w - off[t]) + q->stride_w - 1) / q->stride_w \
                    : 0;                                                                    \
            if (a > lo)                                                                     \
                lo = a;                                                                     \
            if (b < hi)                                                                     \
                hi = b;                                                                     \
        }                                                                                   \
        DG_UNROLL_TILE                                                                      \
        for (r = 0; r < (MR); r++)                                                          \
            DG_UNROLL_TILE                                                                  \
            for (t = 0; t < (NT); t++)                                                      \
                acc[r][t] = q->acc ? q->dw[r * q->w_m + kw0 + t] : 0.0f;                    \
        if (lo > hi)                                                                        \
            lo = hi;                                                                        \
        for (n = 0; n < q->batch; n++) {                                                    \
            const float *dyn = q->dy + n * q->dy_n, *xn = q->x + n * q->x_n;                \
            for (oh = 0; oh < q->out_h; oh++) {                                             \
                const int32_t ih = (int32_t)(oh * q->stride_h) + q->ih0;                    \
                const float *dyr = dyn + oh * q->out_w, *xr, *xp;                           \
                if (ih < 0 || ih >= (int32_t)q->in_h)                                       \
                    continue;                                                               \
                xr = xn + (uint32_t)ih * q->in_w;                                           \
                for (ow = 0; ow < lo; ow++)                                                 \
                    DG_UNROLL_TILE                                                          \
                    for (t = 0; t < (NT); t++) {                                            \
                        const int32_t iw = (int32_t)(ow * sw) + off[t];                     \
                        if (iw >= 0 && iw < (int32_t)q->in_w) {                             \
                            DG_UNROLL_TILE                                                  \
                            for (r = 0; r < (MR); r++)                                      \
                                acc[r][t] += dyr[r * q->y_hw + ow] * xr[iw];                \
                        }                                                                   \
                    }                                                                       \
                xp = xr + ((int32_t)(lo * sw) + off[0]);                                   \
                for (ow = lo; ow < hi; ow++) {                                              \
                    float d[MR];                                                            \
                    DG_UNROLL_TILE                                                          \
                    for (r = 0; r < (MR); r++)                                              \
                        d[r] = dyr[r * q->y_hw + ow];                                       \
                    DG_UNROLL_TILE                                                          \
                    for (t = 0; t < (NT); t++) {                                            \
                        const float xv = xp[t * q->dil_w];                                  \
                        DG_UNROLL_TILE                                                      \
                        for (r = 0; r < (MR); r++)                                          \
                            acc[r][t] += d[r] * xv;                                         \
                    }                                                                       \
                    xp += sw;                                                               \
                }                                                                           \
                for (ow = hi > lo ? hi : lo; ow < q->out_w; ow++)                           \
                    DG_UNROLL_TILE                                                          \
                    for (t = 0; t < (NT); t++) {                                            \
                        const int32_t iw = (int32_t)(ow * sw) + off[t];                     \
                        if (iw >= 0 && iw < (int32_t)q->in_w) {                             \
                            DG_UNROLL_TILE                                                  \
                            for (r = 0; r < (MR); r++)                                      \
                                acc[r][t] += dyr[r * q->y_hw + ow] * xr[iw];                \
                        }                                                                   \
                    }                                                                       \
            }                                                                               \
        }                                                                                   \
        DG_UNROLL_TILE                                                                      \
        for (r = 0; r < (MR); r++)                                                          \
            DG_UNROLL_TILE                                                                  \
            for (t = 0; t < (NT); t++)                                                      \
                q->dw[r * q->w_m + kw0 + t] = DG_FAULT(DG_FAULT_CONV_GRAD_DW, acc[r][t]);   \
    }

DG_DW_TILE(dw_4x1, 4, 1)
DG_DW_TILE(dw_4x2, 4, 2)
DG_DW_TILE(dw_4x3, 4, 3)
DG_DW_TILE(dw_4x4, 4, 4)
DG_DW_TILE(dw_1x1, 1, 1)
DG_DW_TILE(dw_1x2, 1, 2)
DG_DW_TILE(dw_1x3, 1, 3)
DG_DW_TILE(dw_1x4, 1, 4)

#if defined(__riscv_zfinx) && !defined(DG_NO_ASM)
/* The 32-bit cores: dW of 4 channels x the 3 taps kw of one (c, kh) for
 * k_w = 3, stride_w 1, dil_w 1, pad_left 1 and out_w = in_w >= 3 (the
 * common "same" convolution), written out like the forward tiles. Per
 * output column ow: the 4 dy values, then 12 multiply-adds with the input
 * window x[ow - 1 .. ow + 1] (3 registers taking turns, one load per
 * column), then the next input. Columns 0 and out_w - 1 take the zero
 * register for the tap outside the input (an exact 0 added). The first
 * out_w - 2 columns run 3 per pass, entered at the pass's step e so that
 * they fit; the last two follow. Sums in (rows, ow) order, as dw_4x3. */
typedef struct {
    uint32_t dy, x;     /* row addresses, lowered by 4 e bytes */
    uint32_t ym;        /* bytes between the 4 dy channels */
    uint32_t dys, xs;   /* bytes from one row to the next */
    uint32_t nrow, npass, e;
    float acc[12];      /* acc[m * 3 + kw] */
} dwa_t;

#define DWA_F(m, kw, d, x) "fmadd.s %[a" #m #kw "], %[" #d "], %[" #x "], %[a" #m #kw "]\n\t"
#define DWA_LD(o) "lw %[d0], " #o "(%[p0])\n\t" "lw %[d1], " #o "(%[p1])\n\t"                  \
    "lw %[d2], " #o "(%[p2])\n\t" "lw %[d3], " #o "(%[p3])\n\t"
#define DWA_12(u, v, w)                                                                     \
    DWA_F(0, 0, d0, u) DWA_F(1, 0, d1, u) DWA_F(2, 0, d2, u) DWA_F(3, 0, d3, u)              \
    DWA_F(0, 1, d0, v) DWA_F(1, 1, d1, v) DWA_F(2, 1, d2, v) DWA_F(3, 1, d3, v)              \
    DWA_F(0, 2, d0, w) DWA_F(1, 2, d1, w) DWA_F(2, 2, d2, w) DWA_F(3, 2, d3, w)
/* the last column: its tap kw = 2 takes the zero register */
#define DWA_FZ(m, d) "fmadd.s %[a" #m "2], %[" #d "], zero, %[a" #m "2]\n\t"
#define DWA_12Z(u, v)                                                                       \
    DWA_F(0, 0, d0, u) DWA_F(1, 0, d1, u) DWA_F(2, 0, d2, u) DWA_F(3, 0, d3, u)              \
    DWA_F(0, 1, d0, v) DWA_F(1, 1, d1, v) DWA_F(2, 1, d2, v) DWA_F(3, 1, d3, v)              \
    DWA_FZ(0, d0) DWA_FZ(1, d1) DWA_FZ(2, d2) DWA_FZ(3, d3)
/* step j of a pass: window (u, v, w), then the next input into u */
#define DWA_STEP(j, o, on, u, v, w) #j ":\n\t" DWA_LD(o) DWA_12(u, v, w) "lw %[" #u "], " #on "(%[x])\n\t"
#define DWA_ACC(op)                                                                         \
    #op " %[a00], %[m0]\n\t" #op " %[a01], %[m1]\n\t" #op " %[a02], %[m2]\n\t"                \
    #op " %[a10], %[m3]\n\t" #op " %[a11], %[m4]\n\t" #op " %[a12], %[m5]\n\t"                \
    #op " %[a20], %[m6]\n\t" #op " %[a21], %[m7]\n\t" #op " %[a22], %[m8]\n\t"                \
    #op " %[a30], %[m9]\n\t" #op " %[a31], %[m10]\n\t" #op " %[a32], %[m11]\n\t"

/* the rows of a.nrow (> 0) of one sample into a.acc */
static DG_NOINLINE void dw_rows_asm(dwa_t *ap)
{
    dwa_t a = *ap;
    float a00, a01, a02, a10, a11, a12, a20, a21, a22, a30, a31, a32;
    float d0, d1, d2, d3, xa, xb, xc;
    uint32_t p0, p1, p2, p3, x, n;
    __asm__ volatile(
        DWA_ACC(lw)
        "0:\n\t"
        "lw %[p0], %[dy]\n\t" "lw %[d0], %[ym]\n\t" "lw %[x], %[xr]\n\t" "lw %[n], %[np]\n\t"
        "add %[p1], %[p0], %[d0]\n\t" "add %[p2], %[p1], %[d0]\n\t" "add %[p3], %[p2], %[d0]\n\t"
        "lw %[d1], %[e]\n\t"
        /* window of the first column: 0 (the padding), x[0], x[1] */
        "beqz %[d1], 10f\n\t"
        "addi %[d1], %[d1], -1\n\t"
        "beqz %[d1], 11f\n\t"
        "mv %[xc], zero\n\t" "lw %[xa], 8(%[x])\n\t" "lw %[xb], 12(%[x])\n\t" "j 2f\n"
        "11:\n\t"
        "mv %[xb], zero\n\t" "lw %[xc], 4(%[x])\n\t" "lw %[xa], 8(%[x])\n\t" "j 1f\n"
        "10:\n\t"
        "mv %[xa], zero\n\t" "lw %[xb], 0(%[x])\n\t" "lw %[xc], 4(%[x])\n\t"
        DWA_STEP(5, 0, 8, xa, xb, xc)
        DWA_STEP(1, 4, 12, xb, xc, xa)
        DWA_STEP(2, 8, 16, xc, xa, xb)
        "addi %[p0], %[p0], 12\n\t" "addi %[p1], %[p1], 12\n\t" "addi %[p2], %[p2], 12\n\t"
        "addi %[p3], %[p3], 12\n\t" "addi %[x], %[x], 12\n\t" "addi %[n], %[n], -1\n\t"
        "bnez %[n], 5b\n\t"
        /* the last two columns: x[out_w - 3 .. out_w - 1], then 0 */
        "lw %[xa], -4(%[x])\n\t" "lw %[xb], 0(%[x])\n\t" "lw %[xc], 4(%[x])\n\t"
        DWA_LD(0) DWA_12(xa, xb, xc)
        DWA_LD(4) DWA_12Z(xb, xc)
        /* next row */
        "lw %[d0], %[dy]\n\t" "lw %[d1], %[dys]\n\t" "lw %[d2], %[xr]\n\t" "lw %[d3], %[xs]\n\t"
        "add %[d0], %[d0], %[d1]\n\t" "add %[d2], %[d2], %[d3]\n\t" "lw %[d1], %[nr]\n\t"
        "sw %[d0], %[dy]\n\t" "sw %[d2], %[xr]\n\t" "addi %[d1], %[d1], -1\n\t"
        "sw %[d1], %[nr]\n\t" "bnez %[d1], 0b\n\t"
        DWA_ACC(sw)
        : [a00] "=&r"(a00), [a01] "=&r"(a01), [a02] "=&r"(a02), [a10] "=&r"(a10),
          [a11] "=&r"(a11), [a12] "=&r"(a12), [a20] "=&r"(a20), [a21] "=&r"(a21),
          [a22] "=&r"(a22), [a30] "=&r"(a30), [a31] "=&r"(a31), [a32] "=&r"(a32),
          [d0] "=&r"(d0), [d1] "=&r"(d1), [d2] "=&r"(d2), [d3] "=&r"(d3), [xa] "=&r"(xa),
          [xb] "=&r"(xb), [xc] "=&r"(xc), [p0] "=&r"(p0), [p1] "=&r"(p1), [p2] "=&r"(p2),
          [p3] "=&r"(p3), [x] "=&r"(x), [n] "=&r"(n), [dy] "+m"(a.dy), [xr] "+m"(a.x),
          [nr] "+m"(a.nrow), [m0] "+m"(a.acc[0]), [m1] "+m"(a.acc[1]), [m2] "+m"(a.acc[2]),
          [m3] "+m"(a.acc[3]), [m4] "+m"(a.acc[4]), [m5] "+m"(a.acc[5]), [m6] "+m"(a.acc[6]),
          [m7] "+m"(a.acc[7]), [m8] "+m"(a.acc[8]), [m9] "+m"(a.acc[9]), [m10] "+m"(a.acc[10]),
          [m11] "+m"(a.acc[11])
        : [ym] "m"(a.ym), [dys] "m"(a.dys), [xs] "m"(a.xs), [np] "m"(a.npass), [e] "m"(a.e)
        : "memory");
    for (n = 0; n < 12; n++)
        ap->acc[n] = a.acc[n];
}

/* dw_4x3 for kw0 = 0 through dw_rows_asm; 0 when it does not apply. */
static int dw_4x3_asm(const dw_item_t *q)
{
    const uint32_t L = q->out_w - 2, e = (3 - L % 3) % 3;
    uint32_t oh_lo, oh_hi, n, r, t;
    dwa_t a;
    if (q->stride_w != 1 || q->dil_w != 1 || q->pad_left != 1 || q->out_w != q->in_w ||
        q->out_w < 3)
        return 0;
    /* rows with 0 <= oh * stride_h + ih0 < in_h */
    for (oh_lo = 0; oh_lo < q->out_h && (int32_t)(oh_lo * q->stride_h) + q->ih0 < 0; oh_lo++)
        ;
    for (oh_hi = oh_lo; oh_hi < q->out_h && (int32_t)(oh_hi * q->stride_h) + q->ih0 < (int32_t)q->in_h;
         oh_hi++)
        ;
    for (r = 0; r < 4; r++)
        for (t = 0; t < 3; t++)
            a.acc[r * 3 + t] = q->acc ? q->dw[r * q->w_m + t] : 0.0f;
    a.ym = 4 * q->y_hw, a.dys = 4 * q->out_w, a.xs = 4 * q->stride_h * q->in_w;
    a.npass = (L + e) / 3, a.e = e;
    for (n = 0; n < q->batch && oh_hi > oh_lo; n++) {
        a.dy = (uint32_t)(uintptr_t)(q->dy + n * q->dy_n + oh_lo * q->out_w) - 4 * e;
        a.x = (uint32_t)(uintptr_t)(q->x + n * q->x_n +
                                    (uint32_t)((int32_t)(oh_lo * q->stride_h) + q->ih0) * q->in_w) -
              4 * e;
        a.nrow = oh_hi - oh_lo;
        dw_rows_asm(&a);
    }
    for (r = 0; r < 4; r++)
        for (t = 0; t < 3; t++)
            q->dw[r * q->w_m + t] = DG_FAULT(DG_FAULT_CONV_GRAD_DW, a.acc[r * 3 + t]);
    return 1;
}
#else
#define dw_4x3_asm(q) 0
#endif

void dg_conv_grad_dw_f32(void *args)
{
    const dg_conv_args_t *p = (const dg_conv_args_t *)args;
    const uint32_t cg = p->in_c / p->group, mg = p->out_c / p->group;
    const uint32_t mblocks = (mg + 3) / 4;
    dg_range_t r;
    dw_item_t q;
    uint32_t it;
    if (dg_conv_is_pointwise(p)) {
        dg_conv_grad_dw_pointwise(p);
        return;
    }
    if (dg_conv_dw3_applies(p)) {
        dg_conv_dw3_grad_w(p);
        return;
    }
    q.y_hw = (uint32_t)p->out_h * p->out_w;
    q.dy_n = (uint32_t)p->out_c * q.y_hw;
    q.x_n = (uint32_t)p->in_c * p->in_h * p->in_w;
    q.w_m = (uint32_t)cg * p->k_h * p->k_w;
    q.batch = p->batch;
    q.out_h = p->out_h;
    q.out_w = p->out_w;
    q.in_h = p->in_h;
    q.in_w = p->in_w;
    q.stride_h = p->stride_h;
    q.stride_w = p->stride_w;
    q.dil_w = p->dil_w;
    q.pad_left = p->pad_left;
    q.acc = p->accumulate;
    r = dg_split(p->group * mblocks * cg * p->k_h);
    for (it = r.start; it < r.end; it++) {
        const uint32_t kh = it % p->k_h, c = (it / p->k_h) % cg;
        const uint32_t mb = (it / (p->k_h * cg)) % mblocks, g = it / (p->k_h * cg * mblocks);
        const uint32_t m0 = g * mg + mb * 4, mr = mg - mb * 4 < 4 ? mg - mb * 4 : 4;
        uint32_t m, kw;
        q.ih0 = (int32_t)(kh * p->dil_h) - (int32_t)p->pad_top;
        q.x = p->x + ((uint32_t)g * cg + c) * p->in_h * p->in_w;
        for (m = 0; m < mr; m += (mr == 4 ? 4 : 1)) {
            q.dy = p->dy + (uint32_t)(m0 + m) * q.y_hw;
            q.dw = p->dw + (uint32_t)(m0 + m) * q.w_m + ((uint32_t)c * p->k_h + kh) * p->k_w;
            for (kw = 0; kw < p->k_w; kw += 4) {
                const uint32_t nt = p->k_w - kw < 4 ? p->k_w - kw : 4;
                if (mr == 4 && nt == 3 && kw == 0 && dw_4x3_asm(&q))
                    continue;
                if (mr == 4)
                    nt == 4 ? dw_4x4(&q, kw) : nt == 3 ? dw_4x3(&q, kw)
                    : nt == 2 ? dw_4x2(&q, kw) : dw_4x1(&q, kw);
                else
                    nt == 4 ? dw_1x4(&q, kw) : nt == 3 ? dw_1x3(&q, kw)
                    : nt == 2 ? dw_1x2(&q, kw) : dw_1x1(&q, kw);
            }
        }
    }
}
