/* Conv forward (NCHW, groups, strides, dilations, pads): the general
 * path in register tiles, and on the 32-bit cores the weight panels.
 * Every output element is owned by one core and summed in a fixed order. */
#include "dg_internal.h"
#include "conv_internal.h"

/* ---- forward ---------------------------------------------------------------
 * y[n, m, oh, ow] = (sum over c < cg, kh, kw in this order, skipping taps
 * outside the input, of x * w, from 0.0f) + b[m]. The work items are
 * (n, group, block of up to 4 output channels, oh); inside an item the
 * output row is computed in register tiles of several channels x several
 * columns, interior tiles without bounds checks. */
/* Columns per tile for strided convolutions: the loads are not contiguous,
 * so there is nothing to vectorize and 4 x 4 accumulators fit the
 * registers. */
#define DG_CONV_NS 4

typedef struct {
    const float *x;  /* x[n, first channel of the group, 0, 0] */
    const float *w;  /* w[m0, 0, 0, 0] */
    float *y;        /* y[n, m0, oh, 0] */
    uint32_t wk;       /* weights per output channel: cg * k_h * k_w */
    uint32_t x_hw;     /* in_h * in_w */
    uint32_t y_hw;     /* out_h * out_w */
    uint32_t cg, in_w, k_h, k_w, dil_w, stride_w, pad_left;
    uint32_t kh_lo, kh_hi; /* taps kh with an input row inside the image */
    int32_t ih0;           /* input row of kh = 0: oh * stride_h - pad_top */
    uint32_t dil_h;
    uint32_t acc;          /* continue the sums already in y */
    uint32_t last;         /* (panel path) the last channel chunk: add the bias */
    float bias[DG_TILE_M];
    const float *wflip; /* (panel path) dX form: the weights of the convolution */
    int fault;          /* the fault hook of the stored outputs */
} conv_row_t;

/* 4 channels x NR columns starting at ow0, every tap inside the input; SW
 * is the stride_w the body is specialised for (0: read q->stride_w). The
 * column loop is innermost so the host compiler can vectorize it. */
#define DG_CONV_TILE4(NAME, NR, SW)                                                         \
    static void NAME(const conv_row_t *q, uint32_t ow0)                                     \
    {                                                                                       \
        float c0[NR], c1[NR], c2[NR], c3[NR];                                               \
        const uint32_t sw = (SW) ? (SW) : q->stride_w, wk = q->wk;                            \
        uint32_t c, kh, kw, t;                                                              \
        for (t = 0; t < (NR); t++) {                                                        \
            c0[t] = q->acc ? q->y[ow0 + t] : 0.0f;                                          \
            c1[t] = q->acc ? q->y[q->y_hw + ow0 + t] : 0.0f;                                \
            c2[t] = q->acc ? q->y[2 * q->y_hw + ow0 + t] : 0.0f;                            \
            c3[t] = q->acc ? q->y[3 * q->y_hw + ow0 + t] : 0.0f;                            \
        }                                                                                   \
        for (c = 0; c < q->cg; c++) {                                                       \
            const float *xc = q->x + c * q->x_hw + ow0 * sw - q->pad_left;                  \
            const float *wc = q->w + (uint32_t)c * q->k_h * q->k_w;                           \
            for (kh = q->kh_lo; kh < q->kh_hi; kh++) {                                      \
                const float *xr =                                                           \
                    xc + (uint32_t)(q->ih0 + (int32_t)(kh * q->dil_h)) * q->in_w;   \
                const float *wr = wc + kh * q->k_w;                                         \
                for (kw = 0; kw < q->k_w; kw++) {                                           \
                    const float *xb = xr + kw * q->dil_w;                                   \
                    const float w0 = wr[kw], w1 = wr[wk + kw], w2 = wr[2 * wk + kw];        \
                    const float w3 = wr[3 * wk + kw];                                       \
                    DG_UNROLL_TILE                                                          \
                    for (t = 0; t < (NR); t++) {                                            \
                        const float xv = xb[t * sw];                                        \
                        c0[t] += w0 * xv;                                                   \
                        c1[t] += w1 * xv;                                                   \
                        c2[t] += w2 * xv;                                                   \
                        c3[t] += w3 * xv;                                                   \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        for (t = 0; t < (NR); t++) {                                                        \
            q->y[ow0 + t] = DG_FAULT(DG_FAULT_CONV, c0[t] + q->bias[0]);                    \
            q->y[q->y_hw + ow0 + t] = DG_FAULT(DG_FAULT_CONV, c1[t] + q->bias[1]);          \
            q->y[2 * q->y_hw + ow0 + t] = DG_FAULT(DG_FAULT_CONV, c2[t] + q->bias[2]);      \
            q->y[3 * q->y_hw + ow0 + t] = DG_FAULT(DG_FAULT_CONV, c3[t] + q->bias[3]);      \
        }                                                                                   \
    }

/* 1 channel x NR columns (depthwise, and channels left over from blocks
 * of 4). */
#define DG_CONV_TILE1(NAME, NR, SW)                                                         \
    static void NAME(const conv_row_t *q, uint32_t ow0)                                     \
    {                                                                                       \
        float c0[NR];                                                                       \
        const uint32_t sw = (SW) ? (SW) : q->stride_w;                                        \
        uint32_t c, kh, kw, t;                                                              \
        for (t = 0; t < (NR); t++)                                                          \
            c0[t] = q->acc ? q->y[ow0 + t] : 0.0f;                                          \
        for (c = 0; c < q->cg; c++) {                                                       \
            const float *xc = q->x + c * q->x_hw + ow0 * sw - q->pad_left;                  \
            const float *wc = q->w + (uint32_t)c * q->k_h * q->k_w;                           \
            for (kh = q->kh_lo; kh < q->kh_hi; kh++) {                                      \
                const float *xr =                                                           \
                    xc + (uint32_t)(q->ih0 + (int32_t)(kh * q->dil_h)) * q->in_w;   \
                const float *wr = wc + kh * q->k_w;                                         \
                for (kw = 0; kw < q->k_w; kw++) {                                           \
                    const float *xb = xr + kw * q->dil_w;                                   \
                    const float w0 = wr[kw];                                                \
                    DG_UNROLL_TILE                                                          \
                    for (t = 0; t < (NR); t++)                                              \
                        c0[t] += w0 * xb[t * sw];                                           \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        for (t = 0; t < (NR); t++)                                                          \
            q->y[ow0 + t] = DG_FAULT(DG_FAULT_CONV, c0[t] + q->bias[0]);                    \
    }

DG_CONV_TILE4(conv_4xn_s1, DG_TILE_N, 1)
DG_CONV_TILE4(conv_4xn_s2, DG_CONV_NS, 2)
DG_CONV_TILE4(conv_4xn_sx, DG_CONV_NS, 0)
DG_CONV_TILE4(conv_4x1, 1, 0)
DG_CONV_TILE1(conv_1xn_s1, 2 * DG_TILE_N, 1)
DG_CONV_TILE1(conv_1xn_s2, DG_TILE_N, 2)
DG_CONV_TILE1(conv_1xn_sx, DG_TILE_N, 0)
DG_CONV_TILE1(conv_1x1, 1, 0)

/* One output column of mr channels in the padded border: the kw taps
 * inside the input are a contiguous range, found once per column. */
static void conv_col_border(const conv_row_t *q, uint32_t mr, uint32_t ow)
{
    float a0 = q->acc ? q->y[ow] : 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    const int32_t iw0 = (int32_t)(ow * q->stride_w) - (int32_t)q->pad_left;
    const uint32_t wk = q->wk;
    uint32_t c, kh, kw, kw_lo, kw_hi;
    if (q->acc && mr == DG_TILE_M) {
        a1 = q->y[q->y_hw + ow];
        a2 = q->y[2 * q->y_hw + ow];
        a3 = q->y[3 * q->y_hw + ow];
    }
    for (kw_lo = 0; kw_lo < q->k_w && iw0 + (int32_t)(kw_lo * q->dil_w) < 0; kw_lo++)
        ;
    for (kw_hi = kw_lo; kw_hi < q->k_w && iw0 + (int32_t)(kw_hi * q->dil_w) < (int32_t)q->in_w;
         kw_hi++)
        ;
    for (c = 0; c < q->cg; c++) {
        const float *xc = q->x + c * q->x_hw;
        const float *wc = q->w + (uint32_t)c * q->k_h * q->k_w;
        for (kh = q->kh_lo; kh < q->kh_hi; kh++) {
            const float *xr = xc + (uint32_t)(q->ih0 + (int32_t)(kh * q->dil_h)) * q->in_w;
            const float *wr = wc + kh * q->k_w;
            for (kw = kw_lo; kw < kw_hi; kw++) {
                const float xv = xr[(uint32_t)(iw0 + (int32_t)(kw * q->dil_w))];
                a0 += xv * wr[kw];
                if (mr == DG_TILE_M) {
                    a1 += xv * wr[wk + kw];
                    a2 += xv * wr[2 * wk + kw];
                    a3 += xv * wr[3 * wk + kw];
                }
            }
        }
    }
    q->y[ow] = DG_FAULT(DG_FAULT_CONV, a0 + q->bias[0]);
    if (mr == DG_TILE_M) {
        q->y[q->y_hw + ow] = DG_FAULT(DG_FAULT_CONV, a1 + q->bias[1]);
        q->y[2 * q->y_hw + ow] = DG_FAULT(DG_FAULT_CONV, a2 + q->bias[2]);
        q->y[3 * q->y_hw + ow] = DG_FAULT(DG_FAULT_CONV, a3 + q->bias[3]);
    }
}

/* Columns [lo, hi) of one output row, all taps inside the input: tiles of
 * nr columns (the last one shifted left to end at hi; it recomputes a few
 * outputs of this row with the same order, hence the same values). */
static void conv_interior(const conv_row_t *q, uint32_t mr, uint32_t lo, uint32_t hi)
{
    /* (recursion depth 1: the inner calls cover exactly nr columns) */
    const uint32_t s = q->stride_w;
    const uint32_t nr = mr == DG_TILE_M ? (s == 1 ? DG_TILE_N : DG_CONV_NS)
                                        : (s == 1 ? 2 * DG_TILE_N : DG_TILE_N);
    uint32_t ow;
    /* accumulating, a recomputed output would add its terms twice */
    if (q->acc && hi - lo >= nr) {
        for (ow = lo; ow + nr <= hi; ow += nr)
            conv_interior(q, mr, ow, ow + nr);
        lo = ow;
    }
    if (hi - lo >= nr) {
        for (ow = lo;; ow += nr) {
            if (ow + nr > hi)
                ow = hi - nr;
            if (mr == DG_TILE_M)
                s == 1 ? conv_4xn_s1(q, ow) : s == 2 ? conv_4xn_s2(q, ow) : conv_4xn_sx(q, ow);
            else
                s == 1 ? conv_1xn_s1(q, ow) : s == 2 ? conv_1xn_s2(q, ow) : conv_1xn_sx(q, ow);
            if (ow + nr == hi)
                break;
        }
        return;
    }
    for (ow = lo; ow < hi; ow++) {
        if (mr == DG_TILE_M)
            conv_4x1(q, ow);
        else
            conv_1x1(q, ow);
    }
}

/* The rows of the input that output row oh reads: ih0 and [kh_lo, kh_hi). */
static void conv_row_taps(const dg_conv_args_t *p, conv_row_t *q, uint32_t oh)
{
    uint32_t kh;
    q->ih0 = (int32_t)(oh * p->stride_h) - (int32_t)p->pad_top;
    for (kh = 0; kh < p->k_h && q->ih0 + (int32_t)(kh * p->dil_h) < 0; kh++)
        ;
    q->kh_lo = kh;
    for (; kh < p->k_h && q->ih0 + (int32_t)(kh * p->dil_h) < (int32_t)p->in_h; kh++)
        ;
    q->kh_hi = kh;
}

#if defined(__riscv) || defined(DG_CONV_PANEL)
/* The 32-bit cores (floats in the integer registers, loads with immediate
 * offsets only): the weights of a block of 4 output channels are copied, a
 * few input channels at a time, into a panel wp[((c * k_h + kh) * k_w +
 * kw) * 4 + r] (at most DG_CONV_PANEL_FLOATS floats of stack), once for all
 * the output rows a core computes of that block, so the tiles read all 4
 * channels' weights at immediate offsets from one pointer. Between channel
 * chunks the partial sums wait in y; the order of each output's sum (c, kh,
 * kw) and the bias last are unchanged. -DDG_CONV_PANEL builds it on the
 * host, where the tests check it. */
#define DG_CP_FMA4(r, wv, xa, xb, xc, xd)                                                   \
    c##r##0 += wv * xa, c##r##1 += wv * xb, c##r##2 += wv * xc, c##r##3 += wv * xd;

/* 4 channels x NC (4 or 2) columns from ow0, every tap inside the input; SW
 * is the stride_w the body is specialised for (0: read q->stride_w). */
#define DG_CONV_PANEL_TILE(NAME, NC, SW)                                                    \
    static DG_NOINLINE void NAME(const conv_row_t *q, uint32_t ow0)                         \
    {                                                                                       \
        const uint32_t sw = (SW) ? (SW) : q->stride_w, kwn = 4 * q->k_w;                    \
        const uint32_t row = q->dil_h * q->in_w, skip = (q->k_h - (q->kh_hi - q->kh_lo)) * kwn; \
        const float *xc = q->x + ow0 * sw - q->pad_left +                                   \
                          (uint32_t)(q->ih0 + (int32_t)(q->kh_lo * q->dil_h)) * q->in_w;    \
        const float *w = q->w + q->kh_lo * kwn;                                             \
        float *y = q->y + ow0;                                                              \
        float c00 = 0.0f, c01 = 0.0f, c02 = 0.0f, c03 = 0.0f, c10 = 0.0f, c11 = 0.0f;      \
        float c12 = 0.0f, c13 = 0.0f, c20 = 0.0f, c21 = 0.0f, c22 = 0.0f, c23 = 0.0f;      \
        float c30 = 0.0f, c31 = 0.0f, c32 = 0.0f, c33 = 0.0f;                              \
        uint32_t c, kh, t;                                                                  \
        if (q->acc) {                                                                       \
            const float *y1 = y + q->y_hw, *y2 = y1 + q->y_hw, *y3 = y2 + q->y_hw;          \
            c00 = y[0], c10 = y1[0], c20 = y2[0], c30 = y3[0];                              \
            c01 = y[1], c11 = y1[1], c21 = y2[1], c31 = y3[1];                              \
            if ((NC) == 4) {                                                                \
                c02 = y[2], c12 = y1[2], c22 = y2[2], c32 = y3[2];                          \
                c03 = y[3], c13 = y1[3], c23 = y2[3], c33 = y3[3];                          \
            }                                                                               \
        }                                                                                   \
        for (c = 0; c < q->cg; c++, xc += q->x_hw, w += skip) {                             \
            const float *xr = xc;                                                           \
            for (kh = q->kh_lo; kh < q->kh_hi; kh++, xr += row) {                           \
                const float *xb = xr, *wend = w + kwn;                                      \
                for (; w != wend; w += 4, xb += q->dil_w) {                                 \
                    const float x0 = xb[0], x1 = xb[sw];                                    \
                    const float x2 = (NC) == 4 ? xb[2 * sw] : 0.0f;                         \
                    const float x3 = (NC) == 4 ? xb[3 * sw] : 0.0f;                         \
                    const float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];                 \
                    DG_CP_FMA4(0, w0, x0, x1, x2, x3)                                       \
                    DG_CP_FMA4(1, w1, x0, x1, x2, x3)                                       \
                    DG_CP_FMA4(2, w2, x0, x1, x2, x3)                                       \
                    DG_CP_FMA4(3, w3, x0, x1, x2, x3)                                       \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        {                                                                                   \
            const float cs[4][4] = {{c00, c01, c02, c03}, {c10, c11, c12, c13},             \
                                    {c20, c21, c22, c23}, {c30, c31, c32, c33}};            \
            for (c = 0; c < 4; c++, y += q->y_hw)                                           \
                for (t = 0; t < (NC); t++)                                                  \
                    y[t] = q->last ? DG_FAULT(q->fault, cs[c][t] + q->bias[c])         \
                                   : cs[c][t];                                              \
        }                                                                                   \
    }

/* 4 channels x 4 columns, k_w = 3 and dil_w = 1 unrolled: the 6 inputs and
 * 12 weights of a kernel row are all at immediate offsets. */
#define DG_CONV_PANEL_TILE_K3(NAME, NC, SW)                                                 \
    static DG_NOINLINE void NAME(const conv_row_t *q, uint32_t ow0)                         \
    {                                                                                       \
        const uint32_t row = q->dil_h * q->in_w, skip = (q->k_h - (q->kh_hi - q->kh_lo)) * 12; \
        const float *xc = q->x + ow0 * (SW) - q->pad_left +                                 \
                          (uint32_t)(q->ih0 + (int32_t)(q->kh_lo * q->dil_h)) * q->in_w;    \
        const float *w = q->w + q->kh_lo * 12;                                              \
        float *y = q->y + ow0;                                                              \
        float c00 = 0.0f, c01 = 0.0f, c02 = 0.0f, c03 = 0.0f, c10 = 0.0f, c11 = 0.0f;      \
        float c12 = 0.0f, c13 = 0.0f, c20 = 0.0f, c21 = 0.0f, c22 = 0.0f, c23 = 0.0f;      \
        float c30 = 0.0f, c31 = 0.0f, c32 = 0.0f, c33 = 0.0f;                              \
        uint32_t c, kh, kw, t;                                                              \
        if (q->acc) {                                                                       \
            const float *y1 = y + q->y_hw, *y2 = y1 + q->y_hw, *y3 = y2 + q->y_hw;          \
            c00 = y[0], c10 = y1[0], c20 = y2[0], c30 = y3[0];                              \
            c01 = y[1], c11 = y1[1], c21 = y2[1], c31 = y3[1];                              \
            if ((NC) == 4) {                                                                \
                c02 = y[2], c12 = y1[2], c22 = y2[2], c32 = y3[2];                          \
                c03 = y[3], c13 = y1[3], c23 = y2[3], c33 = y3[3];                          \
            }                                                                               \
        }                                                                                   \
        for (c = 0; c < q->cg; c++, xc += q->x_hw, w += skip) {                             \
            const float *xr = xc;                                                           \
            for (kh = q->kh_lo; kh < q->kh_hi; kh++, xr += row, w += 12) {                  \
                for (kw = 0; kw < 3; kw++) {                                                \
                    const float x0 = xr[kw], x1 = xr[kw + (SW)];                            \
                    const float x2 = (NC) == 4 ? xr[kw + 2 * (SW)] : 0.0f;                  \
                    const float x3 = (NC) == 4 ? xr[kw + 3 * (SW)] : 0.0f;                  \
                    const float w0 = w[4 * kw], w1 = w[4 * kw + 1], w2 = w[4 * kw + 2];     \
                    const float w3 = w[4 * kw + 3];                                         \
                    DG_CP_FMA4(0, w0, x0, x1, x2, x3)                                       \
                    DG_CP_FMA4(1, w1, x0, x1, x2, x3)                                       \
                    DG_CP_FMA4(2, w2, x0, x1, x2, x3)                                       \
                    DG_CP_FMA4(3, w3, x0, x1, x2, x3)                                       \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        {                                                                                   \
            const float cs[4][4] = {{c00, c01, c02, c03}, {c10, c11, c12, c13},             \
                                    {c20, c21, c22, c23}, {c30, c31, c32, c33}};            \
            for (c = 0; c < 4; c++, y += q->y_hw)                                           \
                for (t = 0; t < (NC); t++)                                                  \
                    y[t] = q->last ? DG_FAULT(q->fault, cs[c][t] + q->bias[c])         \
                                   : cs[c][t];                                              \
        }                                                                                   \
    }

DG_CONV_PANEL_TILE_K3(cp_4x4_s1_k3, 4, 1)
DG_CONV_PANEL_TILE_K3(cp_4x4_s2_k3, 4, 2)
DG_CONV_PANEL_TILE_K3(cp_4x2_s1_k3, 2, 1)
DG_CONV_PANEL_TILE_K3(cp_4x2_s2_k3, 2, 2)
DG_CONV_PANEL_TILE(cp_4x4_s1, 4, 1)
DG_CONV_PANEL_TILE(cp_4x4_s2, 4, 2)
DG_CONV_PANEL_TILE(cp_4x4_sx, 4, 0)
DG_CONV_PANEL_TILE(cp_4x2_sx, 2, 0)

/* One column of the 4 channels, any column (its kw range found once). */
static DG_NOINLINE void cp_col(const conv_row_t *q, uint32_t ow)
{
    const int32_t iw0 = (int32_t)(ow * q->stride_w) - (int32_t)q->pad_left;
    const uint32_t kwn = 4 * q->k_w, row = q->dil_h * q->in_w, dil = q->dil_w;
    float *y = q->y + ow;
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    const float *xc, *wc;
    uint32_t c, kh, kw_lo, kw_hi;
    if (q->acc)
        a0 = y[0], a1 = y[q->y_hw], a2 = y[2 * q->y_hw], a3 = y[3 * q->y_hw];
    for (kw_lo = 0; kw_lo < q->k_w && iw0 + (int32_t)(kw_lo * dil) < 0; kw_lo++)
        ;
    for (kw_hi = kw_lo; kw_hi < q->k_w && iw0 + (int32_t)(kw_hi * dil) < (int32_t)q->in_w; kw_hi++)
        ;
    xc = q->x + (uint32_t)(q->ih0 + (int32_t)(q->kh_lo * q->dil_h)) * q->in_w +
         (uint32_t)(iw0 + (int32_t)(kw_lo * dil));
    wc = q->w + q->kh_lo * kwn + kw_lo * 4;
    for (c = 0; c < q->cg; c++, xc += q->x_hw, wc += q->k_h * kwn) {
        const float *xr = xc, *wr = wc;
        for (kh = q->kh_lo; kh < q->kh_hi; kh++, xr += row, wr += kwn) {
            const float *xb = xr, *w = wr, *wend = wr + 4 * (kw_hi - kw_lo);
            if (dil == 1 && kw_hi - kw_lo == 2) {
                const float x0 = xb[0], x1 = xb[1];
                a0 += x0 * w[0], a1 += x0 * w[1], a2 += x0 * w[2], a3 += x0 * w[3];
                a0 += x1 * w[4], a1 += x1 * w[5], a2 += x1 * w[6], a3 += x1 * w[7];
                continue;
            }
            for (; w != wend; w += 4, xb += dil) {
                const float xv = xb[0];
                a0 += xv * w[0];
                a1 += xv * w[1];
                a2 += xv * w[2];
                a3 += xv * w[3];
            }
        }
    }
    if (q->last) {
        a0 = DG_FAULT(q->fault, a0 + q->bias[0]);
        a1 = DG_FAULT(q->fault, a1 + q->bias[1]);
        a2 = DG_FAULT(q->fault, a2 + q->bias[2]);
        a3 = DG_FAULT(q->fault, a3 + q->bias[3]);
    }
    y[0] = a0, y[q->y_hw] = a1, y[2 * q->y_hw] = a2, y[3 * q->y_hw] = a3;
}

#if defined(__riscv_zfinx) && !defined(DG_NO_ASM)
/* The 32-bit cores (floats in the integer registers): k_w = 3, dil_w = 1,
 * ntile tiles of 4 channels x 4 columns side by side, written out in one
 * block (clang, keeping its frame pointer, would spill accumulators; and
 * the code between two tiles stays short for the 512-byte instruction
 * caches). Per kernel row: the 4 weights of a tap kw, its inputs (stride 1:
 * a sliding window, 6 loads for the 3 taps), then its 16 multiply-adds in
 * one block (cores 0-3 share their FPUs with cores 4-7). Each sum takes
 * (c, kh, kw) in order from 0.0f or y, as cp_4x4_*_k3; the bias comes last
 * on the last channel chunk. Loop state not in a register is read from the
 * parameter block on the stack. */
typedef struct {
    const float *x;  /* the first tile's input at its first tap row, column ow0 * s - pad_left */
    const float *w;  /* the panel at kh_lo */
    float *y;        /* the first tile's output, channel m0 */
    uint32_t ntile, nkh, cb, c_left;
    uint32_t xrow;   /* bytes between two tap rows of the input */
    uint32_t xc;     /* bytes from after a channel's last tap row to the next channel's first */
    uint32_t wc;     /* panel bytes skipped per channel (taps of rows outside the input) */
    uint32_t ym;     /* bytes between output channels */
    uint32_t xt;     /* bytes between two tiles' inputs */
    uint32_t acc, last;
    uint32_t el, er; /* the first tile is a left-edge one, the last a right-edge one */
    float bias[4];
} cpa_t;

#define CP_F(c, w, x) "fmadd.s %[" #c "], %[" #w "], %[" #x "], %[" #c "]\n\t"
#define CP_T(t, x) CP_F(c0##t, w0, x) CP_F(c1##t, w1, x) CP_F(c2##t, w2, x) CP_F(c3##t, w3, x)
#define CP_16(xa, xb, xc, xd) CP_T(0, xa) CP_T(1, xb) CP_T(2, xc) CP_T(3, xd)
#define CP_LW(o) "lw %[w0], " #o "(%[w])\n\t" "lw %[w1], " #o "+4(%[w])\n\t"                       \
    "lw %[w2], " #o "+8(%[w])\n\t" "lw %[w3], " #o "+12(%[w])\n\t"
#define CP_LX(r, o) "lw %[" #r "], " #o "(%[x])\n\t"
/* one kernel row, stride 1: window x0..x3, then x1..x3 x4, then x2..x3 x4 x5 */
#define CP_ROW_S1                                                                           \
    CP_LW(0) CP_LX(x0, 0) CP_LX(x1, 4) CP_LX(x2, 8) CP_LX(x3, 12) CP_16(x0, x1, x2, x3)       \
    CP_LW(16) CP_LX(x0, 16) CP_16(x1, x2, x3, x0)                                            \
    CP_LW(32) CP_LX(x1, 20) CP_16(x2, x3, x0, x1)
/* the tile at the left edge (pad 1: its first column has no tap kw = 0) and
 * at the right edge (its last column has no tap kw = 2): the missing input
 * is a 0.0f register instead of a load, so its products add exact zeros */
#define CP_ROW_S1_EL                                                                        \
    CP_LW(0) "li %[x0], 0\n\t" CP_LX(x1, 4) CP_LX(x2, 8) CP_LX(x3, 12) CP_16(x0, x1, x2, x3)  \
    CP_LW(16) CP_LX(x0, 16) CP_16(x1, x2, x3, x0)                                            \
    CP_LW(32) CP_LX(x1, 20) CP_16(x2, x3, x0, x1)
#define CP_ROW_S1_ER                                                                        \
    CP_LW(0) CP_LX(x0, 0) CP_LX(x1, 4) CP_LX(x2, 8) CP_LX(x3, 12) CP_16(x0, x1, x2, x3)       \
    CP_LW(16) CP_LX(x0, 16) CP_16(x1, x2, x3, x0)                                            \
    CP_LW(32) "li %[x1], 0\n\t" CP_16(x2, x3, x0, x1)
/* stride 2: the columns of tap kw are kw, kw + 2, kw + 4, kw + 6 */
#define CP_ROW_S2                                                                           \
    CP_LW(0) CP_LX(x0, 0) CP_LX(x1, 8) CP_LX(x2, 16) CP_LX(x3, 24) CP_16(x0, x1, x2, x3)      \
    CP_LW(16) CP_LX(x0, 4) CP_LX(x1, 12) CP_LX(x2, 20) CP_LX(x3, 28) CP_16(x0, x1, x2, x3)    \
    CP_LW(32) CP_LX(x0, 8) CP_LX(x1, 16) CP_LX(x2, 24) CP_LX(x3, 32) CP_16(x0, x1, x2, x3)
#define CP_ROW_S2_EL                                                                        \
    CP_LW(0) "li %[x0], 0\n\t" CP_LX(x1, 8) CP_LX(x2, 16) CP_LX(x3, 24) CP_16(x0, x1, x2, x3)  \
    CP_LW(16) CP_LX(x0, 4) CP_LX(x1, 12) CP_LX(x2, 20) CP_LX(x3, 28) CP_16(x0, x1, x2, x3)    \
    CP_LW(32) CP_LX(x0, 8) CP_LX(x1, 16) CP_LX(x2, 24) CP_LX(x3, 32) CP_16(x0, x1, x2, x3)
#define CP_ROW_S2_ER                                                                        \
    CP_LW(0) CP_LX(x0, 0) CP_LX(x1, 8) CP_LX(x2, 16) CP_LX(x3, 24) CP_16(x0, x1, x2, x3)      \
    CP_LW(16) CP_LX(x0, 4) CP_LX(x1, 12) CP_LX(x2, 20) CP_LX(x3, 28) CP_16(x0, x1, x2, x3)    \
    CP_LW(32) CP_LX(x0, 8) CP_LX(x1, 16) CP_LX(x2, 24) "li %[x3], 0\n\t" CP_16(x0, x1, x2, x3)
#define CP_Y(op)                                                                            \
    "lw %[w0], %[y]\n\t" "lw %[w1], %[ym]\n\t"                                               \
    #op " %[c00], 0(%[w0])\n\t" #op " %[c01], 4(%[w0])\n\t" #op " %[c02], 8(%[w0])\n\t"       \
    #op " %[c03], 12(%[w0])\n\t" "add %[w0], %[w0], %[w1]\n\t"                                \
    #op " %[c10], 0(%[w0])\n\t" #op " %[c11], 4(%[w0])\n\t" #op " %[c12], 8(%[w0])\n\t"       \
    #op " %[c13], 12(%[w0])\n\t" "add %[w0], %[w0], %[w1]\n\t"                                \
    #op " %[c20], 0(%[w0])\n\t" #op " %[c21], 4(%[w0])\n\t" #op " %[c22], 8(%[w0])\n\t"       \
    #op " %[c23], 12(%[w0])\n\t" "add %[w0], %[w0], %[w1]\n\t"                                \
    #op " %[c30], 0(%[w0])\n\t" #op " %[c31], 4(%[w0])\n\t" #op " %[c32], 8(%[w0])\n\t"       \
    #op " %[c33], 12(%[w0])\n\t"
#define CP_B(r) "fadd.s %[c" #r "0], %[c" #r "0], %[w" #r "]\n\t"                                  \
    "fadd.s %[c" #r "1], %[c" #r "1], %[w" #r "]\n\t" "fadd.s %[c" #r "2], %[c" #r "2], %[w" #r "]\n\t" \
    "fadd.s %[c" #r "3], %[c" #r "3], %[w" #r "]\n\t"
/* the channel loop (label 4) and kernel-row loop (label 5) of one tile,
 * ROW the row body; L a label suffix */
#define CP_CLOOP(ROW, L)                                                                    \
    "4" #L ":\n\t"                                                                          \
    "lw %[n], %[nkh]\n"                                                                     \
    "5" #L ":\n\t"                                                                          \
    ROW                                                                                     \
    "lw %[w0], %[xrow]\n\t" "addi %[w], %[w], 48\n\t" "addi %[n], %[n], -1\n\t"              \
    "add %[x], %[x], %[w0]\n\t" "bnez %[n], 5" #L "b\n\t"                                    \
    "lw %[w0], %[xc]\n\t" "lw %[w1], %[wc]\n\t" "lw %[w2], %[cl]\n\t"                        \
    "add %[x], %[x], %[w0]\n\t" "add %[w], %[w], %[w1]\n\t" "addi %[w2], %[w2], -1\n\t"       \
    "sw %[w2], %[cl]\n\t" "bnez %[w2], 4" #L "b\n\t"
/* ntile tiles: the first one with ROW_L when a.el, the last one with
 * ROW_R when a.er, the others with ROW */
#define CP_TILES(ROW, ROW_L, ROW_R)                                                         \
    "0:\n\t"                                                                                \
    "lw %[x], %[px]\n\t" "lw %[w], %[pw]\n\t" "lw %[w0], %[acc]\n\t"                         \
    "beqz %[w0], 2f\n\t" CP_Y(lw) "j 3f\n"                                                   \
    "2:\n\t"                                                                                \
    "li %[c00], 0\n\t" "li %[c01], 0\n\t" "li %[c02], 0\n\t" "li %[c03], 0\n\t"               \
    "li %[c10], 0\n\t" "li %[c11], 0\n\t" "li %[c12], 0\n\t" "li %[c13], 0\n\t"               \
    "li %[c20], 0\n\t" "li %[c21], 0\n\t" "li %[c22], 0\n\t" "li %[c23], 0\n\t"               \
    "li %[c30], 0\n\t" "li %[c31], 0\n\t" "li %[c32], 0\n\t" "li %[c33], 0\n"                \
    "3:\n\t"                                                                                \
    "lw %[w0], %[cb]\n\t" "lw %[w1], %[el]\n\t" "lw %[w2], %[nt]\n\t" "lw %[w3], %[er]\n\t"  \
    "sw %[w0], %[cl]\n\t"                                                                    \
    "bnez %[w1], 7f\n\t"                                                                     \
    "addi %[w2], %[w2], -1\n\t"                                                              \
    "bnez %[w2], 1f\n\t"                                                                     \
    "bnez %[w3], 8f\n"                                                                       \
    "1:\n\t"                                                                                \
    CP_CLOOP(ROW, 0) "j 6f\n"                                                                \
    "7:\n\t" "sw zero, %[el]\n\t"                                                            \
    CP_CLOOP(ROW_L, 1) "j 6f\n"                                                              \
    "8:\n\t"                                                                                \
    CP_CLOOP(ROW_R, 2)                                                                       \
    "6:\n\t"                                                                                \
    "lw %[w0], %[last]\n\t" "beqz %[w0], 9f\n\t"                                             \
    "lw %[w0], %[b0]\n\t" "lw %[w1], %[b1]\n\t" "lw %[w2], %[b2]\n\t" "lw %[w3], %[b3]\n\t"  \
    CP_B(0) CP_B(1) CP_B(2) CP_B(3)                                                          \
    "9:\n\t" CP_Y(sw)                                                                        \
    "lw %[w0], %[px]\n\t" "lw %[w1], %[xt]\n\t" "lw %[w2], %[y]\n\t" "lw %[w3], %[nt]\n\t"    \
    "add %[w0], %[w0], %[w1]\n\t" "addi %[w2], %[w2], 16\n\t" "addi %[w3], %[w3], -1\n\t"     \
    "sw %[w0], %[px]\n\t" "sw %[w2], %[y]\n\t" "sw %[w3], %[nt]\n\t" "bnez %[w3], 0b\n\t"
#define CP_OPS                                                                              \
    : [c00] "=&r"(c00), [c01] "=&r"(c01), [c02] "=&r"(c02), [c03] "=&r"(c03),                \
      [c10] "=&r"(c10), [c11] "=&r"(c11), [c12] "=&r"(c12), [c13] "=&r"(c13),                \
      [c20] "=&r"(c20), [c21] "=&r"(c21), [c22] "=&r"(c22), [c23] "=&r"(c23),                \
      [c30] "=&r"(c30), [c31] "=&r"(c31), [c32] "=&r"(c32), [c33] "=&r"(c33),                \
      [x0] "=&r"(x0), [x1] "=&r"(x1), [x2] "=&r"(x2), [x3] "=&r"(x3), [w0] "=&r"(w0),        \
      [w1] "=&r"(w1), [w2] "=&r"(w2), [w3] "=&r"(w3), [x] "=&r"(x), [w] "=&r"(w),            \
      [n] "=&r"(n), [px] "+m"(a.x), [y] "+m"(a.y), [nt] "+m"(a.ntile), [cl] "+m"(a.c_left),  \
      [el] "+m"(a.el)                                                                       \
    : [pw] "m"(a.w), [acc] "m"(a.acc), [cb] "m"(a.cb), [nkh] "m"(a.nkh), [xrow] "m"(a.xrow), \
      [xc] "m"(a.xc), [wc] "m"(a.wc), [last] "m"(a.last), [b0] "m"(a.bias[0]),               \
      [b1] "m"(a.bias[1]), [b2] "m"(a.bias[2]), [b3] "m"(a.bias[3]), [ym] "m"(a.ym),         \
      [xt] "m"(a.xt), [er] "m"(a.er)                                                        \
    : "memory"

static DG_NOINLINE void cp_tiles_asm(const conv_row_t *q, uint32_t ow0, uint32_t ntile,
                                     uint32_t el, uint32_t er)
{
    const uint32_t s = q->stride_w, nkh = q->kh_hi - q->kh_lo;
    cpa_t a;
    float c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33;
    float x0, x1, x2, x3, w0, w1, w2, w3;
    const float *x, *w;
    uint32_t n, r;
    a.x = q->x + ow0 * s - q->pad_left +
          (uint32_t)(q->ih0 + (int32_t)(q->kh_lo * q->dil_h)) * q->in_w;
    a.w = q->w + q->kh_lo * 12;
    a.y = q->y + ow0;
    a.ntile = ntile, a.nkh = nkh, a.cb = q->cg;
    a.xrow = 4 * q->dil_h * q->in_w;
    a.xc = 4 * q->x_hw - nkh * a.xrow;
    a.wc = (q->k_h - nkh) * 48;
    a.ym = 4 * q->y_hw;
    a.xt = 16 * s;
    a.acc = q->acc, a.last = q->last, a.el = el, a.er = er;
    for (r = 0; r < 4; r++)
        a.bias[r] = q->bias[r];
    if (s == 1)
        __asm__ volatile(CP_TILES(CP_ROW_S1, CP_ROW_S1_EL, CP_ROW_S1_ER) CP_OPS);
    else
        __asm__ volatile(CP_TILES(CP_ROW_S2, CP_ROW_S2_EL, CP_ROW_S2_ER) CP_OPS);
    (void)c00, (void)x, (void)w, (void)n;
}

/* The columns of one row the tiles above take: [0, *done) and [*end,
 * out_w), the left / right edge tiles included where pad 1 leaves out one
 * tap of their outer column only. */
static void cp_row_asm(const conv_row_t *q, uint32_t lo, uint32_t hi, uint32_t out_w,
                       uint32_t *done, uint32_t *end)
{
    const uint32_t s = q->stride_w;
    const uint32_t el = q->pad_left == 1 && lo == 1 && out_w >= 4;
    uint32_t start = el ? 0 : lo, stop = hi, er = 0, nt;
    *done = 0, *end = out_w;
    if (hi + 1 == out_w && (out_w - 1) * s + 2 == q->in_w + q->pad_left && out_w >= start + (el ? 8 : 4) &&
        (out_w - start) % 4 == 0)
        er = 1, stop = out_w;
    nt = (stop - start) / 4;
    if (nt == 0 || (el && hi < 4) || start > lo)
        return;
    cp_tiles_asm(q, start, nt, el, er);
    if (er) {
        *done = *end = out_w;
        return;
    }
    *done = start + 4 * nt;
}
#define DG_CP_ASM 1
#else
#define DG_CP_ASM 0
#define cp_row_asm(q, lo, hi, out_w, done, end) ((void)0)
#endif

/* One output row of the 4 channels of q; interior columns [lo, hi). */
static void cp_row(const conv_row_t *q, uint32_t lo, uint32_t hi, uint32_t out_w)
{
    const uint32_t s = q->stride_w;
    uint32_t ow = 0, end = out_w, top;
    if (DG_CP_ASM && q->k_w == 3 && q->dil_w == 1 && s <= 2 && q->kh_hi > q->kh_lo)
        cp_row_asm(q, lo, hi, out_w, &ow, &end);
    for (; ow < lo && ow < end; ow++)
        cp_col(q, ow);
    top = hi < end ? hi : end;
    if (q->k_w == 3 && q->dil_w == 1 && s <= 2) {
        for (; ow + 4 <= top; ow += 4)
            s == 1 ? cp_4x4_s1_k3(q, ow) : cp_4x4_s2_k3(q, ow);
        for (; ow + 2 <= top; ow += 2)
            s == 1 ? cp_4x2_s1_k3(q, ow) : cp_4x2_s2_k3(q, ow);
    }
    for (; ow + 4 <= top; ow += 4)
        s == 1 ? cp_4x4_s1(q, ow) : s == 2 ? cp_4x4_s2(q, ow) : cp_4x4_sx(q, ow);
    for (; ow + 2 <= top; ow += 2)
        cp_4x2_sx(q, ow);
    for (; ow < end; ow++)
        cp_col(q, ow);
}

/* The dX form (p is the convolution of dy with the flipped weights, see
 * conv_grad_dx.c): panel entries of its output channels m0 .. m0 + 3
 * (dX's input channels) and input channels c0 .. c0 + cb - 1 (dY's
 * channels) from the weights w[m, c, kh, kw] of the original convolution,
 * kh and kw reversed. */
static void cp_pack_flipped(const dg_conv_args_t *p, const conv_row_t *q, float *wp, uint32_t m0,
                            uint32_t c0, uint32_t cb)
{
    const uint32_t kk = p->k_h * p->k_w, mg = p->out_c / p->group, cg = p->in_c / p->group;
    const uint32_t g = m0 / mg;
    uint32_t cc, t, r;
    for (cc = 0; cc < cb; cc++)
        for (r = 0; r < 4; r++) {
            const float *w = q->wflip + ((g * cg + c0 + cc) * mg + m0 % mg + r) * kk;
            for (t = 0; t < kk; t++)
                wp[(cc * kk + t) * 4 + r] = w[kk - 1 - t];
        }
}

/* Output rows [oh0, oh1) of the 4 channels from m0 (one sample, one group):
 * q->x is x[n, first channel of the group], q->y is y[n, m0, 0, 0]. */
/* (a call of its own: the panel is not on the stack of the other paths) */
static DG_NOINLINE void conv_rows_panel(const dg_conv_args_t *p, conv_row_t *q, uint32_t m0, uint32_t oh0,
                            uint32_t oh1, uint32_t lo, uint32_t hi)
{
    float wp[DG_CONV_PANEL_FLOATS];
    const uint32_t kk = p->k_h * p->k_w, cg = q->cg, cbm = DG_CONV_PANEL_FLOATS / (4 * kk);
    const float *x = q->x, *w = p->w + m0 * q->wk;
    float *y = q->y;
    const uint32_t acc = q->acc;
    uint32_t c0, cb, i, r, oh;
    for (r = 0; r < 4; r++)
        q->bias[r] = p->b ? p->b[m0 + r] : 0.0f;
    for (c0 = 0; c0 < cg; c0 += cb) {
        cb = cg - c0 < cbm ? cg - c0 : cbm;
        if (q->wflip)
            cp_pack_flipped(p, q, wp, m0, c0, cb);
        else
            for (i = 0; i < cb * kk; i++)
                for (r = 0; r < 4; r++)
                    wp[i * 4 + r] = w[r * q->wk + c0 * kk + i];
        q->x = x + c0 * q->x_hw;
        q->w = wp;
        q->cg = cb;
        q->acc = acc || c0 > 0;
        q->last = c0 + cb == cg;
        for (oh = oh0; oh < oh1; oh++) {
            conv_row_taps(p, q, oh);
            q->y = y + oh * p->out_w;
            cp_row(q, lo, hi, p->out_w);
        }
    }
    q->x = x;
    q->y = y;
    q->cg = cg;
    q->acc = acc;
}
#else
#define conv_rows_panel(p, q, m0, oh0, oh1, lo, hi) ((void)0)
#endif

/* ReLU (act 1) over `len` outputs of mr channels from y: a pass over the
 * rows an item has just finished. */
static void conv_relu(const dg_conv_args_t *p, float *y, uint32_t mr, uint32_t len)
{
    const uint32_t y_hw = p->out_h * p->out_w;
    uint32_t m, i;
    for (m = 0; m < mr; m++, y += y_hw)
        for (i = 0; i < len; i++)
            y[i] = y[i] < 0.0f ? 0.0f : y[i];
}

/* One output row oh of channels m0 .. m0 + mr - 1 of sample n (q->x is
 * x[n, first channel of the group]): blocks of 4 channels, or the 1..3
 * left over one at a time. */
static void conv_row_blocks(const dg_conv_args_t *p, conv_row_t *q, uint32_t n, uint32_t m0,
                            uint32_t mr, uint32_t oh, uint32_t ow_lo, uint32_t ow_hi)
{
    const uint32_t cm = mr == DG_TILE_M ? DG_TILE_M : 1;
    uint32_t m, ow, j;
    conv_row_taps(p, q, oh);
    for (m = 0; m < mr; m += cm) {
        q->w = p->w + (m0 + m) * q->wk;
        q->y = p->y + ((n * p->out_c + m0 + m) * p->out_h + oh) * p->out_w;
        for (j = 0; j < cm; j++)
            q->bias[j] = p->b ? p->b[m0 + m + j] : 0.0f;
        for (ow = 0; ow < ow_lo; ow++)
            conv_col_border(q, cm, ow);
        conv_interior(q, cm, ow_lo, ow_hi);
        for (ow = ow_hi; ow < p->out_w; ow++)
            conv_col_border(q, cm, ow);
    }
}

/* The general convolution: work items (n, group, block of 4 output
 * channels, output row), runs of rows of one block per core. wflip: the
 * dX form (see conv_grad_dx.c), with every block on the panel path. */
void dg_conv_items(const dg_conv_args_t *p, const float *wflip, int fault)
{
    const uint32_t cg = p->in_c / p->group, mg = p->out_c / p->group;
    const uint32_t mblocks = (mg + DG_TILE_M - 1) / DG_TILE_M;
    const uint32_t span_w = (p->k_w - 1) * p->dil_w; /* last tap's offset */
    uint32_t ow_lo, ow_hi, it, it_end;
    dg_range_t r;
    conv_row_t q;
    int panel;
    /* interior columns: every kw tap inside [0, in_w) */
    ow_lo = (p->pad_left + p->stride_w - 1) / p->stride_w;
    if (p->in_w + p->pad_left >= span_w + 1)
        ow_hi = (p->in_w + p->pad_left - span_w - 1) / p->stride_w + 1;
    else
        ow_hi = 0;
    if (ow_hi > p->out_w)
        ow_hi = p->out_w;
    if (ow_lo > ow_hi)
        ow_lo = ow_hi;
    q.wk = (uint32_t)cg * p->k_h * p->k_w;
    q.x_hw = (uint32_t)p->in_h * p->in_w;
    q.y_hw = (uint32_t)p->out_h * p->out_w;
    q.cg = cg;
    q.in_w = p->in_w;
    q.k_h = p->k_h;
    q.k_w = p->k_w;
    q.dil_w = p->dil_w;
    q.dil_h = p->dil_h;
    q.stride_w = p->stride_w;
    q.pad_left = p->pad_left;
    q.acc = p->accumulate;
    q.wflip = wflip;
    q.fault = fault;
    panel = DG_CONV_PANEL_FITS(p);
    r = dg_split(p->batch * p->group * mblocks * p->out_h);
    /* runs of items of one (n, group, channel block): output rows oh0.. */
    for (it = r.start; it < r.end; it = it_end) {
        const uint32_t oh0 = it % p->out_h, mb = (it / p->out_h) % mblocks;
        const uint32_t g = (it / (p->out_h * mblocks)) % p->group;
        const uint32_t n = it / (p->out_h * mblocks * p->group);
        const uint32_t m0 = g * mg + mb * DG_TILE_M;
        const uint32_t mr = mg - mb * DG_TILE_M < DG_TILE_M ? mg - mb * DG_TILE_M : DG_TILE_M;
        uint32_t oh;
        it_end = it - oh0 + p->out_h < r.end ? it - oh0 + p->out_h : r.end;
        q.x = p->x + (n * p->in_c + g * cg) * q.x_hw;
        if (mr == DG_TILE_M && panel) {
            q.y = p->y + (n * p->out_c + m0) * q.y_hw;
            conv_rows_panel(p, &q, m0, oh0, oh0 + (it_end - it), ow_lo, ow_hi);
        } else {
            for (oh = oh0; oh < oh0 + (it_end - it); oh++)
                conv_row_blocks(p, &q, n, m0, mr, oh, ow_lo, ow_hi);
        }
        if (p->act == 1)
            conv_relu(p, p->y + (n * p->out_c + m0) * q.y_hw + oh0 * p->out_w, mr,
                      (it_end - it) * p->out_w);
    }
}

void dg_conv_f32(void *args)
{
    const dg_conv_args_t *p = (const dg_conv_args_t *)args;
    if (dg_conv_is_pointwise(p)) {
        dg_conv_pointwise(p);
        return;
    }
    if (dg_conv_dw3_applies(p)) {
        dg_conv_dw3_run(p, p->x, p->y, p->in_h, p->in_w, p->out_h, p->out_w, p->pad_top, p->pad_left, 0,
                DG_FAULT_CONV);
        return;
    }
    dg_conv_items(p, NULL, DG_FAULT_CONV);
}
