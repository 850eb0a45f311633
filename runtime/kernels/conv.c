/* 2-D convolution (NCHW, groups, strides, dilations, pads) and its three
 * gradients. Every output element is owned by one core and summed in a
 * fixed order, so the gradients need no cross-core reduction. */
#include "dg_internal.h"

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
#define DG_CONV_PANEL_FLOATS 144

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
 * dg_conv_grad_dx_f32): panel entries of its output channels m0 .. m0 + 3
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
#define DG_CONV_PANEL_FITS(p) (4 * (p)->k_h * (p)->k_w <= DG_CONV_PANEL_FLOATS)
#else
#define DG_CONV_PANEL_FITS(p) 0
#define conv_rows_panel(p, q, m0, oh0, oh1, lo, hi) ((void)0)
#endif

/* ---- depthwise 3 x 3 -------------------------------------------------------
 * One input channel per output channel (group = in_c = out_c), k 3 x 3,
 * dilation 1, stride 1 or 2: one call per run of output rows of a channel
 * computes each row in tiles of up to 8 outputs, reading inputs and
 * weights at immediate offsets. Each output's sum is (kh, kw) in order
 * from 0.0f (or y), skipping taps outside the input, then the bias, as in
 * the general path. The dX of a stride-1 depthwise convolution is the same
 * kernel run on dy with the weights rotated by 180 degrees. */
typedef struct {
    const float *x; /* x[n, c, 0, 0] */
    float *y;       /* y[n, c, 0, 0] */
    float w[9];     /* the channel's weights, row-major */
    float bias;
    uint32_t in_h, in_w, out_h, out_w, stride, pad_top, pad_left;
    uint32_t lo, hi; /* columns whose three taps are inside the input */
    uint32_t acc, act;
    int fault;
} dw3_t;

/* The stored value of one output: bias added, the fault hook, then the
 * activation (act 1: ReLU). */
static DG_INLINE float dw3_out(const dw3_t *q, float v)
{
    v = DG_FAULT(q->fault, v + q->bias);
    return q->act == 1 && v < 0.0f ? 0.0f : v;
}

/* One output column with any of its taps outside the input: nr rows of
 * taps from xr (the first row inside) with weights w. */
static DG_INLINE void dw3_col(const dw3_t *q, const float *xr, const float *w, uint32_t nr,
                              float *y, uint32_t ow)
{
    const int32_t iw0 = (int32_t)(ow * q->stride) - (int32_t)q->pad_left;
    const int32_t ka = iw0 < 0 ? -iw0 : 0;
    const int32_t kb = (int32_t)q->in_w - iw0 < 3 ? (int32_t)q->in_w - iw0 : 3;
    float a = q->acc ? y[ow] : 0.0f;
    uint32_t r;
    if (kb <= ka)
        nr = 0;
    xr += iw0 + ka, w += ka;
    for (r = 0; r < nr; r++, xr += q->in_w, w += 3) {
        a += w[0] * xr[0]; /* the taps in order, kb - ka of them */
        if (kb - ka > 1)
            a += w[1] * xr[1];
        if (kb - ka > 2)
            a += w[2] * xr[2];
    }
    y[ow] = dw3_out(q, a);
}

/* One tap kw of every output of a tile; EL: output 0 has no tap 0 (the
 * left border column of pad 1), ER: output 7 has no tap 2 (the right
 * border column). */
#define DW3_TAP(kw, S, NC, EL, ER)                                                          \
    {                                                                                       \
        const float wv = wp[kw];                                                            \
        if (!((EL) && (kw) == 0))                                                           \
            c0 += wv * xp[kw];                                                              \
        if ((NC) >= 2)                                                                      \
            c1 += wv * xp[(kw) + (S)];                                                      \
        if ((NC) >= 4)                                                                      \
            c2 += wv * xp[(kw) + 2 * (S)], c3 += wv * xp[(kw) + 3 * (S)];                   \
        if ((NC) == 8) {                                                                    \
            c4 += wv * xp[(kw) + 4 * (S)], c5 += wv * xp[(kw) + 5 * (S)];                   \
            c6 += wv * xp[(kw) + 6 * (S)];                                                  \
            if (!((ER) && (kw) == 2))                                                       \
                c7 += wv * xp[(kw) + 7 * (S)];                                              \
        }                                                                                   \
    }
#define DW3_STORE(t) y[t] = DG_FAULT(q->fault, c##t + bias);

/* NC (8, 4, 2 or 1) outputs of a row from y, every tap inside the input
 * but those EL / ER leave out: the input rows from x (the first row inside,
 * at the column of output 0's tap 0), weights w .. wend (of those rows),
 * stride S. */
#define DW3_TILE(NC, S, EL, ER)                                                             \
    {                                                                                       \
        const float *wp = w, *xp = x;                                                       \
        float c0 = 0.0f, c1 = 0.0f, c2 = 0.0f, c3 = 0.0f, c4 = 0.0f, c5 = 0.0f, c6 = 0.0f;  \
        float c7 = 0.0f;                                                                    \
        if (acc) {                                                                          \
            c0 = y[0];                                                                      \
            if ((NC) >= 2)                                                                  \
                c1 = y[1];                                                                  \
            if ((NC) >= 4)                                                                  \
                c2 = y[2], c3 = y[3];                                                       \
            if ((NC) == 8)                                                                  \
                c4 = y[4], c5 = y[5], c6 = y[6], c7 = y[7];                                 \
        }                                                                                   \
        for (; wp != wend; wp += 3, xp += in_w) {                                           \
            DW3_TAP(0, S, NC, EL, ER)                                                       \
            DW3_TAP(1, S, NC, EL, ER)                                                       \
            DW3_TAP(2, S, NC, EL, ER)                                                       \
        }                                                                                   \
        DW3_STORE(0)                                                                        \
        if ((NC) >= 2) {                                                                    \
            DW3_STORE(1)                                                                    \
        }                                                                                   \
        if ((NC) >= 4) {                                                                    \
            DW3_STORE(2) DW3_STORE(3)                                                       \
        }                                                                                   \
        if ((NC) == 8) {                                                                    \
            DW3_STORE(4) DW3_STORE(5) DW3_STORE(6) DW3_STORE(7)                             \
        }                                                                                   \
        if (act)                                                                            \
            for (t = 0; t < (NC); t++)                                                      \
                y[t] = y[t] < 0.0f ? 0.0f : y[t];                                           \
        (void)c1, (void)c2, (void)c3, (void)c4, (void)c5, (void)c6, (void)c7;               \
        y += (NC), x += (NC) * (S);                                                         \
    }

/* Output rows [oh0, oh1) of one channel: per row the taps kh inside the
 * input, the border columns one at a time, the interior columns in tiles
 * of 8, 4, 2, 1. With pad 1 the first 8 outputs (and, when the row ends
 * one column into the padding, the last 8) are an 8-wide tile that leaves
 * out the border column's missing tap. One call per run of rows keeps the
 * set-up out of the rows. */
#define DG_DW3_ROWS(NAME, S)                                                                \
    static DG_NOINLINE void NAME(const dw3_t *q, uint32_t oh0, uint32_t oh1)                \
    {                                                                                       \
        const uint32_t in_w = q->in_w, acc = q->acc, act = q->act == 1;                     \
        const uint32_t el = q->lo == 1 && q->pad_left == 1 && q->hi >= 8;                   \
        const uint32_t start = el ? 8 : q->lo;                                              \
        const uint32_t er = q->hi + 1 == q->out_w && q->out_w >= start + 8 &&               \
                            (q->out_w - 1) * (S) + 2 == in_w + q->pad_left;                 \
        const uint32_t end = er ? q->out_w - 8 : q->hi;                                     \
        const float bias = q->bias;                                                         \
        uint32_t oh, ow, t;                                                                 \
        for (oh = oh0; oh < oh1; oh++) {                                                    \
            const int32_t ih0 = (int32_t)(oh * q->stride) - (int32_t)q->pad_top;            \
            const int32_t lo = ih0 < 0 ? -ih0 : 0;                                          \
            const int32_t hi = ih0 + 3 > (int32_t)q->in_h ? (int32_t)q->in_h - ih0 : 3;     \
            const uint32_t nr = hi > lo ? (uint32_t)(hi - lo) : 0;                          \
            const float *xr = q->x + (nr ? (uint32_t)(ih0 + lo) * in_w : 0);                 \
            const float *w = q->w + (nr ? 3 * lo : 0), *wend = w + 3 * nr, *x;               \
            float *y = q->y + oh * q->out_w, *yend;                                         \
            if (el) {                                                                       \
                x = xr - 1;                                                                 \
                DW3_TILE(8, S, 1, 0)                                                        \
            } else {                                                                        \
                for (ow = 0; ow < q->lo; ow++)                                              \
                    dw3_col(q, xr, w, nr, y, ow);                                           \
                x = xr + (q->lo * (S) - q->pad_left);                                       \
                y += q->lo;                                                                 \
            }                                                                               \
            yend = q->y + oh * q->out_w + end;                                              \
            while (yend - y >= 8)                                                           \
                DW3_TILE(8, S, 0, 0)                                                        \
            if (yend - y >= 4)                                                              \
                DW3_TILE(4, S, 0, 0)                                                        \
            if (yend - y >= 2)                                                              \
                DW3_TILE(2, S, 0, 0)                                                        \
            if (y != yend)                                                                  \
                DW3_TILE(1, S, 0, 0)                                                        \
            if (er) {                                                                       \
                DW3_TILE(8, S, 0, 1)                                                        \
                continue;                                                                   \
            }                                                                               \
            y = q->y + oh * q->out_w;                                                       \
            for (ow = q->hi; ow < q->out_w; ow++)                                           \
                dw3_col(q, xr, w, nr, y, ow);                                               \
        }                                                                                   \
    }

DG_DW3_ROWS(dw3_rows_s1, 1)
DG_DW3_ROWS(dw3_rows_s2, 2)

/* dX of the depthwise 3 x 3 with stride 2: each dy element scatters its
 * nine products into its channel's dx plane (one core per plane), rows of
 * dy in order, kh, then the columns in order; a dx element's sum takes its
 * terms in (oh, ow) order from 0.0f. */
static void dw3_grad_x_s2(const dg_conv_args_t *p)
{
    const uint32_t x_hw = p->in_h * p->in_w, y_hw = p->out_h * p->out_w, in_w = p->in_w;
    const uint32_t lo = (p->pad_left + 1) / 2;
    uint32_t hi = in_w + p->pad_left >= 3 ? (in_w + p->pad_left - 3) / 2 + 1 : 0;
    dg_range_t r = dg_split(p->batch * p->in_c);
    uint32_t pl, i, oh, ow, kh;
    if (hi > p->out_w)
        hi = p->out_w;
    for (pl = r.start; pl < r.end; pl++) {
        const float *w = p->w + (pl % p->in_c) * 9, *dy = p->dy + pl * y_hw;
        float *dx = p->dx + pl * x_hw;
        for (i = 0; i < x_hw; i++)
            dx[i] = 0.0f;
        for (oh = 0; oh < p->out_h; oh++, dy += p->out_w)
            for (kh = 0; kh < 3; kh++) {
                const int32_t ih = (int32_t)(oh * 2 + kh) - (int32_t)p->pad_top;
                const float w0 = w[3 * kh], w1 = w[3 * kh + 1], w2 = w[3 * kh + 2];
                float *dxr;
                if (ih < 0 || ih >= (int32_t)p->in_h)
                    continue;
                dxr = dx + (uint32_t)ih * in_w;
                for (ow = 0; ow < p->out_w; ow++) {
                    const int32_t iw = (int32_t)(ow * 2) - (int32_t)p->pad_left;
                    const float d = dy[ow];
                    if (ow >= lo && ow < hi) {
                        float *o = dxr + iw;
                        o[0] += d * w0, o[1] += d * w1, o[2] += d * w2;
                        continue;
                    }
                    if (iw >= 0 && iw < (int32_t)in_w)
                        dxr[iw] += d * w0;
                    if (iw + 1 >= 0 && iw + 1 < (int32_t)in_w)
                        dxr[iw + 1] += d * w1;
                    if (iw + 2 >= 0 && iw + 2 < (int32_t)in_w)
                        dxr[iw + 2] += d * w2;
                }
            }
        for (i = 0; i < x_hw; i++)
            dx[i] = DG_FAULT(DG_FAULT_CONV_GRAD_DX, dx[i]);
    }
}

/* Does the depthwise 3 x 3 row kernel apply? */
static int dw3_applies(const dg_conv_args_t *p)
{
    return p->group == p->in_c && p->out_c == p->in_c && p->k_h == 3 && p->k_w == 3 &&
           p->dil_h == 1 && p->dil_w == 1 && p->stride_h == p->stride_w &&
           (p->stride_w == 1 || p->stride_w == 2) && p->pad_top <= 2 && p->pad_left <= 2;
}

/* Depthwise 3 x 3 over x (c channels of in_h x in_w) into y; flip: the dX
 * form (weights rotated by 180 degrees). Work items are (n, c, output row),
 * runs of rows of one channel per core. */
static void dw3_run(const dg_conv_args_t *p, const float *x, float *y, uint32_t in_h, uint32_t in_w,
                    uint32_t out_h, uint32_t out_w, uint32_t pad_top, uint32_t pad_left,
                    int flip, int fault)
{
    const uint32_t x_hw = in_h * in_w, y_hw = out_h * out_w, s = p->stride_w;
    dg_range_t r = dg_split(p->batch * p->in_c * out_h);
    uint32_t it, it_end, i;
    dw3_t q;
    q.in_h = in_h, q.in_w = in_w, q.out_h = out_h, q.out_w = out_w;
    q.stride = s, q.pad_top = pad_top, q.pad_left = pad_left;
    q.acc = flip ? 0 : p->accumulate;
    q.act = flip ? 0 : p->act;
    q.fault = fault;
    /* interior columns: 0 <= ow * s - pad_left and ow * s - pad_left + 2 < in_w */
    q.lo = (pad_left + s - 1) / s;
    q.hi = in_w + pad_left >= 3 ? (in_w + pad_left - 3) / s + 1 : 0;
    if (q.hi > out_w)
        q.hi = out_w;
    if (q.lo > q.hi)
        q.lo = q.hi;
    for (it = r.start; it < r.end; it = it_end) {
        const uint32_t oh0 = it % out_h, nc = it / out_h, c = nc % p->in_c;
        it_end = it - oh0 + out_h < r.end ? it - oh0 + out_h : r.end;
        for (i = 0; i < 9; i++)
            q.w[i] = p->w[c * 9 + (flip ? 8 - i : i)];
        q.bias = !flip && p->b ? p->b[c] : 0.0f;
        q.x = x + nc * x_hw;
        q.y = y + nc * y_hw;
        (s == 1 ? dw3_rows_s1 : dw3_rows_s2)(&q, oh0, oh0 + (it_end - it));
    }
}

/* dW of the depthwise 3 x 3: per channel the 9 sums over (n, oh, ow) in
 * this order (the general path's order); one call per (n, oh, kh) keeps a
 * kernel row's three sums in registers across the row, columns in tiles of
 * 8, 4, 2, 1 (edge tiles with pad 1, as the forward's). */
typedef struct {
    uint32_t in_w, stride, pad_left, out_w, lo, hi; /* lo, hi: interior columns */
    uint32_t el, er, start, end; /* edge tiles and the tiled columns between, as dw3 */
} dw3w_t;

/* The terms of tap kw over the NC (8, 4, 2, 1) columns of a tile, in
 * column order; EL / ER leave out column 0's tap 0 / column 7's tap 2 (the
 * border columns of pad 1, as in the forward's edge tiles). */
#define DW3W_TAP(kw, S, NC, EL, ER)                                                         \
    if (!((EL) && (kw) == 0))                                                               \
        a##kw += d0 * xp[kw];                                                               \
    if ((NC) >= 2)                                                                          \
        a##kw += d1 * xp[(kw) + (S)];                                                       \
    if ((NC) >= 4)                                                                          \
        a##kw += d2 * xp[(kw) + 2 * (S)], a##kw += d3 * xp[(kw) + 3 * (S)];                 \
    if ((NC) == 8) {                                                                        \
        a##kw += d4 * xp[(kw) + 4 * (S)], a##kw += d5 * xp[(kw) + 5 * (S)];                 \
        a##kw += d6 * xp[(kw) + 6 * (S)];                                                   \
        if (!((ER) && (kw) == 2))                                                           \
            a##kw += d7 * xp[(kw) + 7 * (S)];                                               \
    }
#define DW3W_TILE(NC, S, EL, ER)                                                            \
    {                                                                                       \
        const float *xp = xr + ((int32_t)(ow * (S)) - (int32_t)q->pad_left), *dp = dyr + ow; \
        const float d0 = dp[0], d1 = (NC) >= 2 ? dp[1] : 0.0f;                              \
        const float d2 = (NC) >= 4 ? dp[2] : 0.0f, d3 = (NC) >= 4 ? dp[3] : 0.0f;           \
        const float d4 = (NC) == 8 ? dp[4] : 0.0f, d5 = (NC) == 8 ? dp[5] : 0.0f;           \
        const float d6 = (NC) == 8 ? dp[6] : 0.0f, d7 = (NC) == 8 ? dp[7] : 0.0f;           \
        DW3W_TAP(0, S, NC, EL, ER)                                                          \
        DW3W_TAP(1, S, NC, EL, ER)                                                          \
        DW3W_TAP(2, S, NC, EL, ER)                                                          \
        (void)d1, (void)d2, (void)d3, (void)d4, (void)d5, (void)d6, (void)d7;               \
        ow += (NC);                                                                         \
    }
#define DW3W_COL(kw)                                                                        \
    if (iw0 + (kw) >= 0 && iw0 + (kw) < (int32_t)q->in_w)                                   \
        a##kw += d * xr[iw0 + (kw)];
#define DW3W_BORDER(from, to, S)                                                            \
    for (ow = (from); ow < (to); ow++) {                                                    \
        const float d = dyr[ow];                                                            \
        const int32_t iw0 = (int32_t)(ow * (S)) - (int32_t)q->pad_left;                     \
        DW3W_COL(0) DW3W_COL(1) DW3W_COL(2)                                                 \
    }

/* Adds one output row dyr against one input row xr to the three sums of
 * a kernel row, a[0 .. 3): each sum takes its terms in ow order. */
#define DG_DW3W_ROW(NAME, S)                                                                \
    static DG_NOINLINE void NAME(const dw3w_t *q, const float *dyr, const float *xr, float *a) \
    {                                                                                       \
        float a0 = a[0], a1 = a[1], a2 = a[2];                                              \
        uint32_t ow = 0;                                                                    \
        if (q->el)                                                                          \
            DW3W_TILE(8, S, 1, 0)                                                           \
        else                                                                                \
            DW3W_BORDER(0, q->lo, S)                                                        \
        while (ow + 8 <= q->end)                                                            \
            DW3W_TILE(8, S, 0, 0)                                                           \
        if (ow + 4 <= q->end)                                                               \
            DW3W_TILE(4, S, 0, 0)                                                           \
        if (ow + 2 <= q->end)                                                               \
            DW3W_TILE(2, S, 0, 0)                                                           \
        if (ow < q->end)                                                                    \
            DW3W_TILE(1, S, 0, 0)                                                           \
        if (q->er)                                                                          \
            DW3W_TILE(8, S, 0, 1)                                                           \
        else                                                                                \
            DW3W_BORDER(q->hi, q->out_w, S)                                                 \
        a[0] = a0, a[1] = a1, a[2] = a2;                                                    \
    }

DG_DW3W_ROW(dw3w_row_s1, 1)
DG_DW3W_ROW(dw3w_row_s2, 2)

/* dW of the depthwise 3 x 3; work items are channels. */
static void dw3_grad_w(const dg_conv_args_t *p)
{
    const uint32_t x_hw = p->in_h * p->in_w, y_hw = p->out_h * p->out_w, s = p->stride_w;
    dg_range_t r = dg_split(p->in_c);
    uint32_t c, n, oh, i;
    dw3w_t q;
    q.in_w = p->in_w, q.stride = s, q.pad_left = p->pad_left, q.out_w = p->out_w;
    q.lo = (p->pad_left + s - 1) / s;
    q.hi = p->in_w + p->pad_left >= 3 ? (p->in_w + p->pad_left - 3) / s + 1 : 0;
    if (q.hi > p->out_w)
        q.hi = p->out_w;
    if (q.lo > q.hi)
        q.lo = q.hi;
    q.el = q.lo == 1 && p->pad_left == 1 && q.hi >= 8;
    q.start = q.el ? 8 : q.lo;
    q.er = q.hi + 1 == p->out_w && p->out_w >= q.start + 8 &&
           (p->out_w - 1) * s + 2 == p->in_w + p->pad_left;
    q.end = q.er ? p->out_w - 8 : q.hi;
    for (c = r.start; c < r.end; c++) {
        float a[9];
        float *dw = p->dw + c * 9;
        for (i = 0; i < 9; i++)
            a[i] = p->accumulate ? dw[i] : 0.0f;
        for (n = 0; n < p->batch; n++) {
            const float *x = p->x + (n * p->in_c + c) * x_hw;
            const float *dy = p->dy + (n * p->out_c + c) * y_hw;
            for (oh = 0; oh < p->out_h; oh++) {
                const int32_t ih0 = (int32_t)(oh * s) - (int32_t)p->pad_top;
                const float *dyr = dy + oh * p->out_w;
                int32_t kh;
                for (kh = 0; kh < 3; kh++)
                    if (ih0 + kh >= 0 && ih0 + kh < (int32_t)p->in_h)
                        (s == 1 ? dw3w_row_s1 : dw3w_row_s2)(
                            &q, dyr, x + (uint32_t)(ih0 + kh) * p->in_w, a + 3 * kh);
            }
        }
        for (i = 0; i < 9; i++)
            dw[i] = DG_FAULT(DG_FAULT_CONV_GRAD_DW, a[i]);
    }
}

/* Work items of ng independent matrix products of rows x cols outputs
 * (the pointwise convolution and its gradients): blocks of 4 rows, and the
 * columns cut into as many chunks (whole tiles wide) as it takes to give
 * every core an item; one chunk when there are rows enough. An item is
 * (product, row block, column chunk); the outputs' sums do not depend on
 * the split. */
typedef struct {
    uint32_t rb, cb, cw, rows, cols;
    dg_range_t r;
} pw_split_t;

typedef struct {
    uint32_t k, i0, i1, j0, j1; /* product k, rows [i0, i1), columns [j0, j1) */
} pw_item_t;

static pw_split_t pw_split(uint32_t ng, uint32_t rows, uint32_t cols)
{
    const uint32_t nc = (uint32_t)pi_cl_team_nb_cores();
    pw_split_t s;
    uint32_t chunks;
    s.rows = rows, s.cols = cols;
    s.rb = (rows + 3) / 4;
    chunks = ng * s.rb >= nc || s.rb == 0 ? 1 : (nc + ng * s.rb - 1) / (ng * s.rb);
    s.cw = ((cols + chunks - 1) / chunks + DG_TILE_N - 1) / DG_TILE_N * DG_TILE_N;
    if (s.cw == 0)
        s.cw = DG_TILE_N;
    s.cb = (cols + s.cw - 1) / s.cw;
    s.r = dg_split(ng * s.rb * s.cb);
    return s;
}

/* The item at *it of this core's range, merged with the items after it
 * that continue its rows (one column chunk: a run of row blocks of one
 * product becomes one call); advances *it past them. */
static pw_item_t pw_next(const pw_split_t *s, uint32_t *it)
{
    pw_item_t t;
    const uint32_t per = s->rb * s->cb, rem = *it % per;
    uint32_t last = *it;
    if (s->cb == 1)
        while (last + 1 < s->r.end && (last + 1) % per != 0)
            last++;
    t.k = *it / per;
    t.i0 = rem / s->cb * 4;
    t.i1 = (last % per) / s->cb * 4 + 4 < s->rows ? (last % per) / s->cb * 4 + 4 : s->rows;
    t.j0 = rem % s->cb * s->cw;
    t.j1 = t.j0 + s->cw < s->cols ? t.j0 + s->cw : s->cols;
    *it = last + 1;
    return t;
}

/* Pointwise (1 x 1, stride 1, no padding): per (n, group) a matrix
 * product W[mg, cg] X[cg, h*w], then the bias and the activation. */
static void conv_pointwise(const dg_conv_args_t *p)
{
    const uint32_t cg = p->in_c / p->group, mg = p->out_c / p->group;
    const uint32_t hw = p->out_h * p->out_w;
    const pw_split_t sp = pw_split(p->batch * p->group, mg, hw);
    uint32_t it = sp.r.start;
    while (it < sp.r.end) {
        const pw_item_t t = pw_next(&sp, &it);
        const uint32_t n = t.k / p->group, g = t.k % p->group;
        float *y = p->y + (n * p->out_c + g * mg) * hw;
        uint32_t m, j;
        dg_mm_block_f32(p->w + (g * mg + t.i0) * cg, cg, 1,
                        p->x + (n * p->in_c + g * cg) * hw + t.j0, hw, 1, y + t.i0 * hw + t.j0,
                        hw, t.i1 - t.i0, t.j1 - t.j0, cg, p->accumulate != 0);
        for (m = t.i0; m < t.i1; m++) {
            const float bias = p->b ? p->b[g * mg + m] : 0.0f;
            float *yr = y + m * hw;
            for (j = t.j0; j < t.j1; j++)
                yr[j] = DG_FAULT(DG_FAULT_CONV, yr[j] + bias);
            if (p->act == 1)
                for (j = t.j0; j < t.j1; j++)
                    yr[j] = yr[j] < 0.0f ? 0.0f : yr[j];
        }
    }
}

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
 * dX form (see dg_conv_grad_dx_f32), with every block on the panel path. */
static void conv_items(const dg_conv_args_t *p, const float *wflip, int fault)
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
    if (p->k_h == 1 && p->k_w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
        p->pad_left == 0 && p->out_h == p->in_h && p->out_w == p->in_w) {
        conv_pointwise(p);
        return;
    }
    if (dw3_applies(p)) {
        dw3_run(p, p->x, p->y, p->in_h, p->in_w, p->out_h, p->out_w, p->pad_top, p->pad_left, 0,
                DG_FAULT_CONV);
        return;
    }
    conv_items(p, NULL, DG_FAULT_CONV);
}

/* ---- dX ---------------------------------------------------------------------
 * dx[n, c, ih, iw] = sum over m in c's group, kh, kw (in this order) with
 * ih = oh * stride_h + kh * dil_h - pad_top (same for w), of dy * w, from
 * 0.0f. Work items are (n, group, block of up to 4 input channels, ih).
 * For one ih the contributing kh form an arithmetic progression (step
 * stride_h / gcd(stride_h, dil_h)), found once per row; with stride_w 1 the
 * interior columns take every kw and run in register tiles, the rest (the
 * border, and every column when stride_w > 1) one column of up to 4
 * channels at a time with its kw progression found once per column. */
typedef struct {
    const float *dy; /* dy[n, first output channel of the group, 0, 0] */
    const float *w;  /* w[first m of the group, c0, 0, 0] */
    float *dx;       /* dx[n, c0, ih, 0] */
    uint32_t kk;       /* k_h * k_w */
    uint32_t wm;       /* weights per output channel: cg * kk */
    uint32_t y_hw, x_hw;
    uint32_t mg, out_w, k_w, dil_w, stride_w, pad_left;
    uint32_t kh_a, kh_n, kh_step; /* kh_a, kh_a + kh_step, ... (kh_n of them) */
    uint32_t oh_a, oh_step;       /* the matching oh: oh_a, oh_a - oh_step, ... */
} dx_row_t;

static uint32_t gcd_u32(uint32_t a, uint32_t b)
{
    while (b) {
        const uint32_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* 4 channels (MR 4) or 1 channel x NR columns from iw0, stride_w 1, every
 * kw inside dy. */
#define DG_DX_TILE4(NAME, NR)                                                               \
    static void NAME(const dx_row_t *q, uint32_t iw0)                                       \
    {                                                                                       \
        float c0[NR], c1[NR], c2[NR], c3[NR];                                               \
        const uint32_t kk = q->kk;                                                            \
        uint32_t mm, j, kw, t;                                                              \
        for (t = 0; t < (NR); t++)                                                          \
            c0[t] = c1[t] = c2[t] = c3[t] = 0.0f;                                           \
        for (mm = 0; mm < q->mg; mm++) {                                                    \
            const float *dyp = q->dy + mm * q->y_hw + iw0 + q->pad_left;                    \
            const float *wp = q->w + mm * q->wm;                                            \
            for (j = 0; j < q->kh_n; j++) {                                                 \
                const float *dyr = dyp + (q->oh_a - j * q->oh_step) * q->out_w;             \
                const float *wr = wp + (q->kh_a + j * q->kh_step) * q->k_w;                 \
                for (kw = 0; kw < q->k_w; kw++) {                                           \
                    const float *db = dyr - kw * q->dil_w;                                  \
                    const float w0 = wr[kw], w1 = wr[kk + kw], w2 = wr[2 * kk + kw];        \
                    const float w3 = wr[3 * kk + kw];                                       \
                    DG_UNROLL_TILE                                                          \
                    for (t = 0; t < (NR); t++) {                                            \
                        const float v = db[t];                                              \
                        c0[t] += w0 * v;                                                    \
                        c1[t] += w1 * v;                                                    \
                        c2[t] += w2 * v;                                                    \
                        c3[t] += w3 * v;                                                    \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        for (t = 0; t < (NR); t++) {                                                        \
            q->dx[iw0 + t] = DG_FAULT(DG_FAULT_CONV_GRAD_DX, c0[t]);                        \
            q->dx[q->x_hw + iw0 + t] = DG_FAULT(DG_FAULT_CONV_GRAD_DX, c1[t]);              \
            q->dx[2 * q->x_hw + iw0 + t] = DG_FAULT(DG_FAULT_CONV_GRAD_DX, c2[t]);          \
            q->dx[3 * q->x_hw + iw0 + t] = DG_FAULT(DG_FAULT_CONV_GRAD_DX, c3[t]);          \
        }                                                                                   \
    }

#define DG_DX_TILE1(NAME, NR)                                                               \
    static void NAME(const dx_row_t *q, uint32_t iw0)                                       \
    {                                                                                       \
        float c0[NR];                                                                       \
        uint32_t mm, j, kw, t;                                                              \
        for (t = 0; t < (NR); t++)                                                          \
            c0[t] = 0.0f;                                                                   \
        for (mm = 0; mm < q->mg; mm++) {                                                    \
            const float *dyp = q->dy + mm * q->y_hw + iw0 + q->pad_left;                    \
            const float *wp = q->w + mm * q->wm;                                            \
            for (j = 0; j < q->kh_n; j++) {                                                 \
                const float *dyr = dyp + (q->oh_a - j * q->oh_step) * q->out_w;             \
                const float *wr = wp + (q->kh_a + j * q->kh_step) * q->k_w;                 \
                for (kw = 0; kw < q->k_w; kw++) {                                           \
                    const float *db = dyr - kw * q->dil_w;                                  \
                    const float w0 = wr[kw];                                                \
                    DG_UNROLL_TILE                                                          \
                    for (t = 0; t < (NR); t++)                                              \
                        c0[t] += w0 * db[t];                                                \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        for (t = 0; t < (NR); t++)                                                          \
            q->dx[iw0 + t] = DG_FAULT(DG_FAULT_CONV_GRAD_DX, c0[t]);                        \
    }

DG_DX_TILE4(dx_4xn, DG_TILE_N)
DG_DX_TILE1(dx_1xn, 2 * DG_TILE_N)

/* One column iw of mr (1 or 4) channels, any stride: the kw with an
 * integer ow inside dy are kw_a, kw_a + kw_step, ... */
static void dx_col(const dx_row_t *q, uint32_t mr, uint32_t iw)
{
    const int32_t tw0 = (int32_t)(iw + q->pad_left);
    const uint32_t gw = gcd_u32(q->stride_w, q->dil_w);
    const uint32_t kw_step = q->stride_w / gw, ow_step = q->dil_w / gw;
    const uint32_t kk = q->kk;
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    uint32_t kw_a, kw_n = 0, ow_a = 0, mm, j, i;
    for (kw_a = 0; kw_a < q->k_w; kw_a++) {
        const int32_t tw = tw0 - (int32_t)(kw_a * q->dil_w);
        if (tw < 0) {
            kw_a = q->k_w;
            break;
        }
        if ((uint32_t)tw % q->stride_w == 0 && (uint32_t)tw / q->stride_w < q->out_w)
            break;
    }
    if (kw_a < q->k_w) {
        int32_t tw = tw0 - (int32_t)(kw_a * q->dil_w);
        ow_a = (uint32_t)tw / q->stride_w;
        for (i = kw_a; i < q->k_w && tw >= 0; i += kw_step, tw -= (int32_t)(kw_step * q->dil_w))
            kw_n++;
    }
    for (mm = 0; mm < q->mg; mm++) {
        const float *dyp = q->dy + mm * q->y_hw;
        const float *wp = q->w + mm * q->wm;
        for (j = 0; j < q->kh_n; j++) {
            const float *dyr = dyp + (q->oh_a - j * q->oh_step) * q->out_w + ow_a;
            const float *wr = wp + (q->kh_a + j * q->kh_step) * q->k_w + kw_a;
            for (i = 0; i < kw_n; i++) {
                const float v = dyr[-(int32_t)(i * ow_step)];
                const uint32_t o = i * kw_step;
                a0 += v * wr[o];
                if (mr == DG_TILE_M) {
                    a1 += v * wr[kk + o];
                    a2 += v * wr[2 * kk + o];
                    a3 += v * wr[3 * kk + o];
                }
            }
        }
    }
    q->dx[iw] = DG_FAULT(DG_FAULT_CONV_GRAD_DX, a0);
    if (mr == DG_TILE_M) {
        q->dx[q->x_hw + iw] = DG_FAULT(DG_FAULT_CONV_GRAD_DX, a1);
        q->dx[2 * q->x_hw + iw] = DG_FAULT(DG_FAULT_CONV_GRAD_DX, a2);
        q->dx[3 * q->x_hw + iw] = DG_FAULT(DG_FAULT_CONV_GRAD_DX, a3);
    }
}

/* Strided dX (stride_w > 1): the columns iw = ph, ph + s, ... of one phase
 * ph share their kw progression kw_a, kw_a + kw_step, ... (kw_n taps);
 * where every tap's ow is inside dy (a run of the phase's columns), a tile
 * of NR such columns reads dy at ow_a + t - i * ow_step, t < NR, like the
 * stride-1 tiles. */
typedef struct {
    uint32_t kw_a, kw_n, kw_step, ow_step;
} dx_phase_t;

#define DG_DXS_TILE(NAME, MR, NR)                                                           \
    static void NAME(const dx_row_t *q, const dx_phase_t *f, uint32_t iw0, uint32_t ow_a)    \
    {                                                                                       \
        float c0[NR], c1[NR], c2[NR], c3[NR];                                               \
        const uint32_t kk = q->kk, s = q->stride_w;                                         \
        uint32_t mm, j, i, t;                                                               \
        for (t = 0; t < (NR); t++)                                                          \
            c0[t] = c1[t] = c2[t] = c3[t] = 0.0f;                                           \
        for (mm = 0; mm < q->mg; mm++) {                                                    \
            const float *dyp = q->dy + mm * q->y_hw + ow_a;                                 \
            const float *wp = q->w + mm * q->wm + f->kw_a;                                  \
            for (j = 0; j < q->kh_n; j++) {                                                 \
                const float *dyr = dyp + (q->oh_a - j * q->oh_step) * q->out_w;             \
                const float *wr = wp + (q->kh_a + j * q->kh_step) * q->k_w;                 \
                for (i = 0; i < f->kw_n; i++) {                                             \
                    const float *db = dyr - i * f->ow_step;                                 \
                    const uint32_t o = i * f->kw_step;                                      \
                    const float w0 = wr[o];                                                 \
                    const float w1 = (MR) == 4 ? wr[kk + o] : 0.0f;                         \
                    const float w2 = (MR) == 4 ? wr[2 * kk + o] : 0.0f;                     \
                    const float w3 = (MR) == 4 ? wr[3 * kk + o] : 0.0f;                     \
                    DG_UNROLL_TILE                                                          \
                    for (t = 0; t < (NR); t++) {                                            \
                        const float v = db[t];                                              \
                        c0[t] += w0 * v;                                                    \
                        if ((MR) == 4) {                                                    \
                            c1[t] += w1 * v;                                                \
                            c2[t] += w2 * v;                                                \
                            c3[t] += w3 * v;                                                \
                        }                                                                   \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        for (t = 0; t < (NR); t++) {                                                        \
            q->dx[iw0 + t * s] = DG_FAULT(DG_FAULT_CONV_GRAD_DX, c0[t]);                    \
            if ((MR) == 4) {                                                                \
                q->dx[q->x_hw + iw0 + t * s] = DG_FAULT(DG_FAULT_CONV_GRAD_DX, c1[t]);      \
                q->dx[2 * q->x_hw + iw0 + t * s] = DG_FAULT(DG_FAULT_CONV_GRAD_DX, c2[t]);  \
                q->dx[3 * q->x_hw + iw0 + t * s] = DG_FAULT(DG_FAULT_CONV_GRAD_DX, c3[t]);  \
            }                                                                               \
        }                                                                                   \
    }

DG_DXS_TILE(dxs_4x4, 4, 4)
DG_DXS_TILE(dxs_1x4, 1, 4)

#define DXS_FMA4(r, wv, xa, xb, xc, xd)                                                     \
    c##r##0 += wv * xa, c##r##1 += wv * xb, c##r##2 += wv * xc, c##r##3 += wv * xd;

/* The 4-channel columns of a phase on the 32-bit cores' footing: the
 * weights of the phase's taps (kh, then kw, in the order of dxs_1x4) for
 * the 4 channels are packed, a few output channels m at a time, into a
 * panel read at immediate offsets, and the taps' dY offsets listed once;
 * the 16 sums stay in scalars. Between chunks of m the partial sums wait
 * in dx (the order of each sum is unchanged). */
#define DG_DXS_PANEL 128

static DG_NOINLINE void dxs_panel_tile(const dx_row_t *q, const float *w, const int32_t *doff,
                                       uint32_t nt, uint32_t mb, const float *dyp, uint32_t iw0,
                                       uint32_t acc, uint32_t last)
{
    const uint32_t s = q->stride_w;
    float c00 = 0.0f, c01 = 0.0f, c02 = 0.0f, c03 = 0.0f, c10 = 0.0f, c11 = 0.0f, c12 = 0.0f;
    float c13 = 0.0f, c20 = 0.0f, c21 = 0.0f, c22 = 0.0f, c23 = 0.0f, c30 = 0.0f, c31 = 0.0f;
    float c32 = 0.0f, c33 = 0.0f;
    float *dx = q->dx + iw0;
    uint32_t mm, t, i;
    if (acc) {
        const float *d1 = dx + q->x_hw, *d2 = d1 + q->x_hw, *d3 = d2 + q->x_hw;
        c00 = dx[0], c01 = dx[s], c02 = dx[2 * s], c03 = dx[3 * s];
        c10 = d1[0], c11 = d1[s], c12 = d1[2 * s], c13 = d1[3 * s];
        c20 = d2[0], c21 = d2[s], c22 = d2[2 * s], c23 = d2[3 * s];
        c30 = d3[0], c31 = d3[s], c32 = d3[2 * s], c33 = d3[3 * s];
    }
    for (mm = 0; mm < mb; mm++, dyp += q->y_hw)
        for (t = 0; t < nt; t++, w += 4) {
            const float *db = dyp + doff[t];
            const float v0 = db[0], v1 = db[1], v2 = db[2], v3 = db[3];
            const float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
            DXS_FMA4(0, w0, v0, v1, v2, v3)
            DXS_FMA4(1, w1, v0, v1, v2, v3)
            DXS_FMA4(2, w2, v0, v1, v2, v3)
            DXS_FMA4(3, w3, v0, v1, v2, v3)
        }
    {
        const float cs[4][4] = {{c00, c01, c02, c03}, {c10, c11, c12, c13},
                                {c20, c21, c22, c23}, {c30, c31, c32, c33}};
        for (i = 0; i < 4; i++, dx += q->x_hw)
            for (t = 0; t < 4; t++)
                dx[t * s] = last ? DG_FAULT(DG_FAULT_CONV_GRAD_DX, cs[i][t]) : cs[i][t];
    }
}

/* Columns [u0, u1) (at least 4) of phase ph, 4 channels, every tap inside
 * dY, in 4-column tiles. With every m in one panel chunk the last tile is
 * shifted back to end at u1 (it recomputes the same values); otherwise the
 * columns past the last whole tile are left. Returns how many columns from
 * u0 it computed, 0 when the taps do not fit the panel. */
static DG_NOINLINE uint32_t dxs_run_panel(const dx_row_t *q, const dx_phase_t *f, uint32_t ph, uint32_t u0,
                              uint32_t u1)
{
    float wp[DG_DXS_PANEL];
    int32_t doff[DG_DXS_PANEL / 4];
    uint32_t woff[DG_DXS_PANEL / 4];
    const uint32_t nt = q->kh_n * f->kw_n, s = q->stride_w, kk = q->kk;
    uint32_t m0, mb, mm, t, r, j, i, u, end = u1;
    if (nt == 0 || 4 * nt > DG_DXS_PANEL)
        return 0;
    if (q->mg > DG_DXS_PANEL / (4 * nt))
        end = u0 + (u1 - u0) / 4 * 4;
    for (j = 0, t = 0; j < q->kh_n; j++)
        for (i = 0; i < f->kw_n; i++, t++) {
            doff[t] = (int32_t)((q->oh_a - j * q->oh_step) * q->out_w) - (int32_t)(i * f->ow_step);
            woff[t] = (q->kh_a + j * q->kh_step) * q->k_w + f->kw_a + i * f->kw_step;
        }
    for (m0 = 0; m0 < q->mg; m0 += mb) {
        mb = q->mg - m0 < DG_DXS_PANEL / (4 * nt) ? q->mg - m0 : DG_DXS_PANEL / (4 * nt);
        for (mm = 0; mm < mb; mm++)
            for (t = 0; t < nt; t++)
                for (r = 0; r < 4; r++)
                    wp[(mm * nt + t) * 4 + r] = q->w[(m0 + mm) * q->wm + r * kk + woff[t]];
        for (u = u0; u < end; u += 4) {
            uint32_t ow_a;
            if (u + 4 > end)
                u = end - 4;
            ow_a = (ph + u * s + q->pad_left - f->kw_a * q->dil_w) / s;
            dxs_panel_tile(q, wp, doff, nt, mb, q->dy + m0 * q->y_hw + ow_a, ph + u * s, m0 > 0,
                           m0 + mb == q->mg);
        }
    }
    return end - u0;
}

/* One dX row of cm (1 or 4) channels, stride_w > 1: per phase, the run of
 * columns with every tap inside dy in tiles of 4 (the last one shifted
 * back; it recomputes the same values), the rest one column at a time. */
static void dx_row_strided(const dx_row_t *q, uint32_t cm, uint32_t in_w)
{
    const uint32_t s = q->stride_w, dil = q->dil_w, gw = gcd_u32(s, dil);
    uint32_t ph, u, n, lo, hi, done;
    for (ph = 0; ph < s && ph < in_w; ph++) {
        dx_phase_t f;
        n = (in_w - ph + s - 1) / s; /* columns of the phase */
        f.kw_step = s / gw, f.ow_step = dil / gw, f.kw_n = 0;
        for (f.kw_a = 0; f.kw_a < q->k_w; f.kw_a++)
            if (((int32_t)(ph + q->pad_left) - (int32_t)(f.kw_a * dil)) % (int32_t)s == 0)
                break;
        lo = hi = 0;
        if (f.kw_a < q->k_w) {
            /* full columns: tw0 = iw + pad - kw_a dil >= (kw_n - 1) ow_step s
             * and tw0 / s < out_w */
            const int32_t need = (int32_t)(((q->k_w - f.kw_a + f.kw_step - 1) / f.kw_step - 1) *
                                           f.ow_step * s);
            f.kw_n = (q->k_w - f.kw_a + f.kw_step - 1) / f.kw_step;
            for (lo = 0; lo < n; lo++)
                if ((int32_t)(ph + lo * s + q->pad_left) - (int32_t)(f.kw_a * dil) >= need)
                    break;
            for (hi = lo; hi < n; hi++)
                if ((uint32_t)((int32_t)(ph + hi * s + q->pad_left) - (int32_t)(f.kw_a * dil)) / s >=
                    q->out_w)
                    break;
        }
        /* columns [lo, lo + done) computed in panels; the rest of the run
         * by one array tile ending at hi (it recomputes the same values) */
        done = cm == DG_TILE_M && hi - lo >= 4 ? dxs_run_panel(q, &f, ph, lo, hi) : 0;
        if (done && done < hi - lo) {
            dxs_4x4(q, &f, ph + (hi - 4) * s, (ph + (hi - 4) * s + q->pad_left - f.kw_a * dil) / s);
            done = hi - lo;
        }
        for (u = 0; u < n; u++) {
            const uint32_t iw = ph + u * s;
            if (u == lo && done) {
                u += done - 1;
                continue;
            }
            if (u == lo && hi - lo >= 4) {
                for (;; u += 4) {
                    uint32_t ow_a;
                    if (u + 4 > hi)
                        u = hi - 4;
                    ow_a = (ph + u * s + q->pad_left - f.kw_a * dil) / s;
                    cm == DG_TILE_M ? dxs_4x4(q, &f, ph + u * s, ow_a)
                                    : dxs_1x4(q, &f, ph + u * s, ow_a);
                    if (u + 4 == hi)
                        break;
                }
                u = hi - 1;
                continue;
            }
            dx_col(q, cm, iw);
        }
    }
}

/* Pointwise: per (n, group) dX[cg, hw] = W^T[cg, mg] dY[mg, hw]. */
static void conv_grad_dx_pointwise(const dg_conv_args_t *p)
{
    const uint32_t cg = p->in_c / p->group, mg = p->out_c / p->group;
    const uint32_t hw = p->in_h * p->in_w;
    const pw_split_t sp = pw_split(p->batch * p->group, cg, hw);
    uint32_t it = sp.r.start;
    while (it < sp.r.end) {
        const pw_item_t t = pw_next(&sp, &it);
        const uint32_t n = t.k / p->group, g = t.k % p->group;
        float *dx = p->dx + (n * p->in_c + g * cg) * hw;
        uint32_t c, j;
        dg_mm_block_f32(p->w + g * mg * cg + t.i0, 1, cg,
                        p->dy + (n * p->out_c + g * mg) * hw + t.j0, hw, 1,
                        dx + t.i0 * hw + t.j0, hw, t.i1 - t.i0, t.j1 - t.j0, mg, 0);
        for (c = t.i0; c < t.i1; c++)
            for (j = t.j0; j < t.j1; j++)
                dx[c * hw + j] = DG_FAULT(DG_FAULT_CONV_GRAD_DX, dx[c * hw + j]);
    }
}

/* The 32-bit cores (panel path): with stride 1, dx is the convolution of
 * dy with the weights transposed (dX's channels as outputs) and rotated by
 * 180 degrees, padding (k - 1) * dil - pad; it runs in the forward's
 * panels and tiles when its output channels come in blocks of 4. Each
 * output's sum runs over m, then kh and kw from the last tap to the first.
 * Returns 0 when it does not apply. */
static DG_NOINLINE int conv_grad_dx_as_conv(const dg_conv_args_t *p)
{
#if defined(__riscv) || defined(DG_CONV_PANEL)
    dg_conv_args_t f;
    const uint32_t span_h = (p->k_h - 1) * p->dil_h, span_w = (p->k_w - 1) * p->dil_w;
    if (p->stride_h != 1 || p->stride_w != 1 || (p->in_c / p->group) % DG_TILE_M != 0 ||
        p->pad_top > span_h || p->pad_left > span_w || !DG_CONV_PANEL_FITS(p))
        return 0;
    memset(&f, 0, sizeof f);
    f.x = p->dy, f.y = p->dx;
    f.batch = p->batch, f.group = p->group;
    f.in_c = p->out_c, f.in_h = p->out_h, f.in_w = p->out_w;
    f.out_c = p->in_c, f.out_h = p->in_h, f.out_w = p->in_w;
    f.k_h = p->k_h, f.k_w = p->k_w, f.dil_h = p->dil_h, f.dil_w = p->dil_w;
    f.stride_h = f.stride_w = 1;
    f.pad_top = span_h - p->pad_top, f.pad_left = span_w - p->pad_left;
    conv_items(&f, p->w, DG_FAULT_CONV_GRAD_DX);
    return 1;
#else
    (void)p;
    return 0;
#endif
}

/* The dX forms with kernels of their own (pointwise, stride 1 as a
 * convolution on the panel path, depthwise 3 x 3); 0 for the general path. */
static DG_NOINLINE int conv_grad_dx_special(const dg_conv_args_t *p)
{
    if (p->k_h == 1 && p->k_w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
        p->pad_left == 0 && p->out_h == p->in_h && p->out_w == p->in_w) {
        conv_grad_dx_pointwise(p);
        return 1;
    }
    if (conv_grad_dx_as_conv(p))
        return 1;
    if (dw3_applies(p) && p->stride_w == 1) {
        /* stride 1: dx is the depthwise convolution of dy with the flipped
         * weights and padding 2 - pad */
        dw3_run(p, p->dy, p->dx, p->out_h, p->out_w, p->in_h, p->in_w, 2 - p->pad_top,
                2 - p->pad_left, 1, DG_FAULT_CONV_GRAD_DX);
        return 1;
    }
    if (dw3_applies(p)) {
        dw3_grad_x_s2(p);
        return 1;
    }
    return 0;
}

/* The general dX (see above); a call of its own so that its frame is not
 * on the stack of the special forms. */
static DG_NOINLINE void conv_grad_dx_general(const dg_conv_args_t *p)
{
    const uint32_t cg = p->in_c / p->group, mg = p->out_c / p->group;
    const uint32_t cblocks = (cg + DG_TILE_M - 1) / DG_TILE_M;
    const uint32_t gh = gcd_u32(p->stride_h, p->dil_h);
    const uint32_t span_w = (p->k_w - 1) * p->dil_w;
    uint32_t iw_lo = 0, iw_hi = 0, it;
    dg_range_t r;
    dx_row_t q;
    /* stride_w 1: columns where every kw gives 0 <= iw + pad_left - kw * dil_w < out_w */
    if (p->stride_w == 1 && p->out_w > p->pad_left) {
        iw_lo = span_w > p->pad_left ? span_w - p->pad_left : 0;
        iw_hi = p->out_w - p->pad_left < p->in_w ? p->out_w - p->pad_left : p->in_w;
        if (iw_lo > iw_hi)
            iw_lo = iw_hi = 0;
    }
    q.kk = (uint32_t)p->k_h * p->k_w;
    q.wm = (uint32_t)cg * q.kk;
    q.y_hw = (uint32_t)p->out_h * p->out_w;
    q.x_hw = (uint32_t)p->in_h * p->in_w;
    q.mg = mg;
    q.out_w = p->out_w;
    q.k_w = p->k_w;
    q.dil_w = p->dil_w;
    q.stride_w = p->stride_w;
    q.pad_left = p->pad_left;
    q.kh_step = p->stride_h / gh;
    q.oh_step = p->dil_h / gh;
    r = dg_split(p->batch * p->group * cblocks * p->in_h);
    for (it = r.start; it < r.end; it++) {
        const uint32_t ih = it % p->in_h, cb = (it / p->in_h) % cblocks;
        const uint32_t g = (it / (p->in_h * cblocks)) % p->group;
        const uint32_t n = it / (p->in_h * cblocks * p->group);
        const uint32_t c0 = cb * DG_TILE_M;
        const uint32_t cr = cg - c0 < DG_TILE_M ? cg - c0 : DG_TILE_M;
        const int32_t th0 = (int32_t)(ih + p->pad_top);
        uint32_t kh, c, iw;
        /* first kh with an integer oh inside dy, then how many follow */
        q.kh_n = 0;
        q.kh_a = 0;
        q.oh_a = 0;
        for (kh = 0; kh < p->k_h; kh++) {
            const int32_t th = th0 - (int32_t)(kh * p->dil_h);
            if (th < 0)
                break;
            if ((uint32_t)th % p->stride_h == 0 && (uint32_t)th / p->stride_h < p->out_h) {
                int32_t t2 = th;
                q.kh_a = kh;
                q.oh_a = (uint32_t)th / p->stride_h;
                for (; kh < p->k_h && t2 >= 0; kh += q.kh_step, t2 -= (int32_t)(q.kh_step * p->dil_h))
                    q.kh_n++;
                break;
            }
        }
        q.dy = p->dy + ((uint32_t)n * p->out_c + (uint32_t)g * mg) * q.y_hw;
        for (c = 0; c < cr; c += (cr == DG_TILE_M ? DG_TILE_M : 1)) {
            const uint32_t cm = cr == DG_TILE_M ? DG_TILE_M : 1;
            const uint32_t nr = cm == DG_TILE_M ? DG_TILE_N : 2 * DG_TILE_N;
            q.w = p->w + ((uint32_t)g * mg * cg + c0 + c) * q.kk;
            q.dx = p->dx + (((uint32_t)n * p->in_c + (uint32_t)g * cg + c0 + c) * p->in_h + ih) * p->in_w;
            if (p->stride_w > 1) {
                dx_row_strided(&q, cm, p->in_w);
                continue;
            }
            for (iw = 0; iw < iw_lo; iw++)
                dx_col(&q, cm, iw);
            if (iw_hi - iw_lo >= nr) {
                for (iw = iw_lo;; iw += nr) {
                    if (iw + nr > iw_hi)
                        iw = iw_hi - nr;
                    if (cm == DG_TILE_M)
                        dx_4xn(&q, iw);
                    else
                        dx_1xn(&q, iw);
                    if (iw + nr == iw_hi)
                        break;
                }
            } else {
                for (iw = iw_lo; iw < iw_hi; iw++)
                    dx_col(&q, cm, iw);
            }
            for (iw = iw_hi > iw_lo ? iw_hi : iw_lo; iw < p->in_w; iw++)
                dx_col(&q, cm, iw);
        }
    }
}

void dg_conv_grad_dx_f32(void *args)
{
    const dg_conv_args_t *p = (const dg_conv_args_t *)args;
    if (!conv_grad_dx_special(p))
        conv_grad_dx_general(p);
}

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

/* Pointwise dW: per group dW[mg, cg] = sum over n of dY_n[mg, hw] X_n[cg, hw]^T,
 * through the Gemm tiles with the sum continued from one sample to the
 * next (k = (n, p) in order); the items of pw_split over (group, mg, cg). */
static void conv_grad_dw_pointwise(const dg_conv_args_t *p)
{
    const uint32_t cg = p->in_c / p->group, mg = p->out_c / p->group, hw = p->in_h * p->in_w;
    const uint32_t dy_n = p->out_c * hw, x_n = p->in_c * hw;
    const pw_split_t sp = pw_split(p->group, mg, cg);
    uint32_t it = sp.r.start;
    while (it < sp.r.end) {
        const pw_item_t t = pw_next(&sp, &it);
        const uint32_t g = t.k, m0 = g * mg + t.i0;
        float *dw = p->dw + m0 * cg;
        uint32_t n, i, j;
        if (p->batch == 0 && !p->accumulate)
            for (i = 0; i < t.i1 - t.i0; i++)
                for (j = t.j0; j < t.j1; j++)
                    dw[i * cg + j] = 0.0f;
        for (n = 0; n < p->batch; n++)
            dg_mm_block_f32(p->dy + n * dy_n + m0 * hw, hw, 1,
                            p->x + n * x_n + (g * cg + t.j0) * hw, 1, hw, dw + t.j0, cg,
                            t.i1 - t.i0, t.j1 - t.j0, hw, n > 0 || p->accumulate);
        for (i = 0; i < t.i1 - t.i0; i++)
            for (j = t.j0; j < t.j1; j++)
                dw[i * cg + j] = DG_FAULT(DG_FAULT_CONV_GRAD_DW, dw[i * cg + j]);
    }
}

void dg_conv_grad_dw_f32(void *args)
{
    const dg_conv_args_t *p = (const dg_conv_args_t *)args;
    const uint32_t cg = p->in_c / p->group, mg = p->out_c / p->group;
    const uint32_t mblocks = (mg + 3) / 4;
    dg_range_t r;
    dw_item_t q;
    uint32_t it;
    if (p->k_h == 1 && p->k_w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
        p->pad_left == 0 && p->out_h == p->in_h && p->out_w == p->in_w) {
        conv_grad_dw_pointwise(p);
        return;
    }
    if (dw3_applies(p)) {
        dw3_grad_w(p);
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

/* ---- dB: db[m] = sum over n, i (in this order) of dy[n, m, i]. Four
 * channels are summed side by side: four independent addition chains
 * instead of one, each in its own channel's order. */
void dg_conv_grad_db_f32(void *args)
{
    const dg_conv_args_t *p = (const dg_conv_args_t *)args;
    dg_range_t r = dg_split(p->out_c);
    const uint32_t hw = p->out_h * p->out_w;
    const uint32_t dy_n = (uint32_t)p->out_c * hw;
    uint32_t m = r.start, n, i;
    for (; m + 4 <= r.end; m += 4) {
        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
        if (p->accumulate)
            a0 = p->db[m], a1 = p->db[m + 1], a2 = p->db[m + 2], a3 = p->db[m + 3];
        for (n = 0; n < p->batch; n++) {
            const float *d0 = p->dy + n * dy_n + (uint32_t)m * hw;
            const float *d1 = d0 + hw, *d2 = d1 + hw, *d3 = d2 + hw;
            for (i = 0; i < hw; i++) {
                a0 += d0[i];
                a1 += d1[i];
                a2 += d2[i];
                a3 += d3[i];
            }
        }
        p->db[m] = DG_FAULT(DG_FAULT_CONV_GRAD_DB, a0);
        p->db[m + 1] = DG_FAULT(DG_FAULT_CONV_GRAD_DB, a1);
        p->db[m + 2] = DG_FAULT(DG_FAULT_CONV_GRAD_DB, a2);
        p->db[m + 3] = DG_FAULT(DG_FAULT_CONV_GRAD_DB, a3);
    }
    for (; m < r.end; m++) {
        float acc = p->accumulate ? p->db[m] : 0.0f;
        for (n = 0; n < p->batch; n++) {
            const float *dyp = p->dy + n * dy_n + (uint32_t)m * hw;
            for (i = 0; i < hw; i++)
                acc += dyp[i];
        }
        p->db[m] = DG_FAULT(DG_FAULT_CONV_GRAD_DB, acc);
    }
}
