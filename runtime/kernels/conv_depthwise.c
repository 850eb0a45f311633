/* Conv, depthwise 3 x 3 (stride 1 or 2): forward, dX and dW. */
#include "dg_internal.h"
#include "conv_internal.h"

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
void dg_conv_dw3_grad_x_s2(const dg_conv_args_t *p)
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

/* Depthwise 3 x 3 over x (c channels of in_h x in_w) into y; flip: the dX
 * form (weights rotated by 180 degrees). Work items are (n, c, output row),
 * runs of rows of one channel per core. */
void dg_conv_dw3_run(const dg_conv_args_t *p, const float *x, float *y, uint32_t in_h, uint32_t in_w,
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
void dg_conv_dw3_grad_w(const dg_conv_args_t *p)
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
