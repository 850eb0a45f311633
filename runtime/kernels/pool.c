/* Pooling kernels (NCHW). Work is split by output row (forward) or by
 * (n, c) plane (gradients: a plane's scatter touches only its own plane). */
#include "dg_internal.h"

#include <float.h>

/* Taps [lo, hi) of a window starting at i0 (of k taps, dilation d) that lie
 * inside [0, n). */
static inline void maxpool_taps(int32_t i0, uint32_t k, uint32_t d, uint32_t n, uint32_t *lo, uint32_t *hi)
{
    uint32_t a = 0, b;
    while (a < k && i0 + (int32_t)(a * d) < 0)
        a++;
    b = a;
    while (b < k && i0 + (int32_t)(b * d) < (int32_t)n)
        b++;
    *lo = a;
    *hi = b;
}

/* Max over the window taps inside the input, in window order (kh, then
 * kw), keeping the first maximum: best starts at the first tap and is
 * replaced only by a strictly greater value. The input rows of the window
 * are found once per output row, the kw range once per border column;
 * interior columns take every kw without checks. The index is only
 * tracked when the Indices output is wanted. A window with no tap inside
 * the input gives -FLT_MAX (index: plane offset - 1), as before. */
typedef struct {
    const float *x; /* x[plane, 0, 0] */
    uint32_t in_w, k_w, dil_w, dil_h, stride_w, pad_left;
    uint32_t kh_lo, kh_hi;
    int32_t ih0;
} maxpool_row_t;

static float maxpool_value(const maxpool_row_t *q, uint32_t ow, uint32_t kw_lo, uint32_t kw_hi)
{
    const int32_t iw0 = (int32_t)(ow * q->stride_w) - (int32_t)q->pad_left;
    float best = -FLT_MAX;
    int first = 1;
    uint32_t kh, kw;
    if (kw_lo >= kw_hi)
        return best;
    for (kh = q->kh_lo; kh < q->kh_hi; kh++) {
        const float *xr = q->x + (uint32_t)(q->ih0 + (int32_t)(kh * q->dil_h)) * q->in_w +
                          (int32_t)(iw0 + (int32_t)(kw_lo * q->dil_w));
        kw = kw_lo;
        if (first) {
            best = xr[0];
            first = 0;
            xr += q->dil_w;
            kw++;
        }
        for (; kw < kw_hi; kw++, xr += q->dil_w) {
            const float v = xr[0];
            best = v > best ? v : best;
        }
    }
    return best;
}

static float maxpool_index(const maxpool_row_t *q, uint32_t ow, uint32_t kw_lo, uint32_t kw_hi,
                           int64_t *idx)
{
    const int32_t iw0 = (int32_t)(ow * q->stride_w) - (int32_t)q->pad_left;
    float best = -FLT_MAX;
    int32_t bi = -1;
    uint32_t kh, kw;
    if (kw_lo >= kw_hi) {
        *idx = -1;
        return best;
    }
    for (kh = q->kh_lo; kh < q->kh_hi; kh++) {
        const uint32_t ih = (uint32_t)(q->ih0 + (int32_t)(kh * q->dil_h));
        const float *xr = q->x + (uint32_t)ih * q->in_w;
        for (kw = kw_lo; kw < kw_hi; kw++) {
            const int32_t iw = iw0 + (int32_t)(kw * q->dil_w);
            const float v = xr[iw];
            if (v > best || bi < 0) {
                best = v;
                bi = (int32_t)(ih * q->in_w) + iw;
            }
        }
    }
    *idx = bi;
    return best;
}

/* NP interior outputs ow0 .. ow0 + NP - 1 side by side (NP independent
 * max chains), every kw inside the input and at least one input row. */
#define DG_MAXPOOL_TILE(NAME, NP, SW)                                                       \
    static void NAME(const maxpool_row_t *q, uint32_t ow0, float *y)                        \
    {                                                                                       \
        float best[NP];                                                                     \
        const uint32_t sw = (SW) ? (SW) : q->stride_w;                                        \
        const float *x0 = q->x + ow0 * sw - q->pad_left;                                    \
        uint32_t kh, kw, t;                                                                 \
        const float *xr = x0 + (uint32_t)(q->ih0 + (int32_t)(q->kh_lo * q->dil_h)) * q->in_w; \
        DG_UNROLL_TILE                                                                      \
        for (t = 0; t < (NP); t++)                                                          \
            best[t] = xr[t * sw];                                                           \
        for (kh = q->kh_lo; kh < q->kh_hi; kh++) {                                          \
            xr = x0 + (uint32_t)(q->ih0 + (int32_t)(kh * q->dil_h)) * q->in_w;      \
            for (kw = kh == q->kh_lo ? 1 : 0; kw < q->k_w; kw++) {                          \
                const float *xb = xr + kw * q->dil_w;                                       \
                DG_UNROLL_TILE                                                              \
                for (t = 0; t < (NP); t++) {                                                \
                    const float v = xb[t * sw];                                             \
                    best[t] = v > best[t] ? v : best[t];                                    \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        DG_UNROLL_TILE                                                                      \
        for (t = 0; t < (NP); t++)                                                          \
            y[ow0 + t] = DG_FAULT(DG_FAULT_MAXPOOL_Y, best[t]);                             \
    }

DG_MAXPOOL_TILE(maxpool_tile_s1, 8, 1)
DG_MAXPOOL_TILE(maxpool_tile_s2, 4, 2)
DG_MAXPOOL_TILE(maxpool_tile_sx, 4, 0)

/* The same for k_w = 3, dil_w = 1: a row's three taps unrolled (window
 * order kept: the first row's tap 0 starts each chain). */
#define DG_MAXPOOL_K3(r0, t)                                                                \
    {                                                                                       \
        const float *xb = xr + (t) * sw;                                                    \
        float m = best[t], v;                                                               \
        if (!(r0)) {                                                                        \
            v = xb[0];                                                                      \
            m = v > m ? v : m;                                                              \
        }                                                                                   \
        v = xb[1];                                                                          \
        m = v > m ? v : m;                                                                  \
        v = xb[2];                                                                          \
        best[t] = v > m ? v : m;                                                            \
    }
#define DG_MAXPOOL_TILE_K3(NAME, SW)                                                        \
    static void NAME(const maxpool_row_t *q, uint32_t ow0, float *y)                        \
    {                                                                                       \
        float best[4];                                                                      \
        const uint32_t sw = (SW), row = q->dil_h * q->in_w;                                 \
        const float *xr = q->x + ow0 * sw - q->pad_left +                                   \
                          (uint32_t)(q->ih0 + (int32_t)(q->kh_lo * q->dil_h)) * q->in_w;    \
        uint32_t kh;                                                                        \
        best[0] = xr[0], best[1] = xr[sw], best[2] = xr[2 * sw], best[3] = xr[3 * sw];      \
        DG_MAXPOOL_K3(1, 0) DG_MAXPOOL_K3(1, 1) DG_MAXPOOL_K3(1, 2) DG_MAXPOOL_K3(1, 3)     \
        for (kh = q->kh_lo + 1; kh < q->kh_hi; kh++) {                                      \
            xr += row;                                                                      \
            DG_MAXPOOL_K3(0, 0) DG_MAXPOOL_K3(0, 1) DG_MAXPOOL_K3(0, 2) DG_MAXPOOL_K3(0, 3) \
        }                                                                                   \
        y[ow0] = DG_FAULT(DG_FAULT_MAXPOOL_Y, best[0]);                                     \
        y[ow0 + 1] = DG_FAULT(DG_FAULT_MAXPOOL_Y, best[1]);                                 \
        y[ow0 + 2] = DG_FAULT(DG_FAULT_MAXPOOL_Y, best[2]);                                 \
        y[ow0 + 3] = DG_FAULT(DG_FAULT_MAXPOOL_Y, best[3]);                                 \
    }

DG_MAXPOOL_TILE_K3(maxpool_k3_s1, 1)
DG_MAXPOOL_TILE_K3(maxpool_k3_s2, 2)

/* The same with the flat index of each maximum (first one on ties). */
static void maxpool_tile_idx(const maxpool_row_t *q, uint32_t ow0, float *y, int64_t *idx,
                             int64_t base)
{
    float b0, b1, b2, b3;
    int32_t i0, i1, i2, i3;
    const uint32_t sw = q->stride_w;
    const int32_t iw0 = (int32_t)(ow0 * sw) - (int32_t)q->pad_left;
    uint32_t kh, kw;
    {
        const int32_t o = (q->ih0 + (int32_t)(q->kh_lo * q->dil_h)) * (int32_t)q->in_w + iw0;
        b0 = q->x[o];
        b1 = q->x[o + (int32_t)sw];
        b2 = q->x[o + 2 * (int32_t)sw];
        b3 = q->x[o + 3 * (int32_t)sw];
        i0 = o;
        i1 = o + (int32_t)sw;
        i2 = o + 2 * (int32_t)sw;
        i3 = o + 3 * (int32_t)sw;
    }
    for (kh = q->kh_lo; kh < q->kh_hi; kh++) {
        const int32_t ro = (q->ih0 + (int32_t)(kh * q->dil_h)) * (int32_t)q->in_w + iw0;
        for (kw = kh == q->kh_lo ? 1 : 0; kw < q->k_w; kw++) {
            const int32_t o = ro + (int32_t)(kw * q->dil_w);
            const float v0 = q->x[o], v1 = q->x[o + (int32_t)sw];
            const float v2 = q->x[o + 2 * (int32_t)sw], v3 = q->x[o + 3 * (int32_t)sw];
            if (v0 > b0) {
                b0 = v0;
                i0 = o;
            }
            if (v1 > b1) {
                b1 = v1;
                i1 = o + (int32_t)sw;
            }
            if (v2 > b2) {
                b2 = v2;
                i2 = o + 2 * (int32_t)sw;
            }
            if (v3 > b3) {
                b3 = v3;
                i3 = o + 3 * (int32_t)sw;
            }
        }
    }
    y[ow0] = DG_FAULT(DG_FAULT_MAXPOOL_Y, b0);
    y[ow0 + 1] = DG_FAULT(DG_FAULT_MAXPOOL_Y, b1);
    y[ow0 + 2] = DG_FAULT(DG_FAULT_MAXPOOL_Y, b2);
    y[ow0 + 3] = DG_FAULT(DG_FAULT_MAXPOOL_Y, b3);
    idx[ow0] = DG_FAULT_I(DG_FAULT_MAXPOOL_IDX, base + i0);
    idx[ow0 + 1] = DG_FAULT_I(DG_FAULT_MAXPOOL_IDX, base + i1);
    idx[ow0 + 2] = DG_FAULT_I(DG_FAULT_MAXPOOL_IDX, base + i2);
    idx[ow0 + 3] = DG_FAULT_I(DG_FAULT_MAXPOOL_IDX, base + i3);
}

/* The same with the flat index of each maximum, k_w = 3, dil_w = 1: o is
 * the plane offset of the row's first tap of output 0. */
#define DG_MAXPOOL_IDX_K3(r0, t)                                                            \
    {                                                                                       \
        const float *xb = xr + (t) * sw;                                                    \
        const int32_t ot = o + (int32_t)((t) * sw);                                         \
        float v;                                                                            \
        if (!(r0)) {                                                                        \
            v = xb[0];                                                                      \
            if (v > b##t)                                                                   \
                b##t = v, i##t = ot;                                                        \
        }                                                                                   \
        v = xb[1];                                                                          \
        if (v > b##t)                                                                       \
            b##t = v, i##t = ot + 1;                                                        \
        v = xb[2];                                                                          \
        if (v > b##t)                                                                       \
            b##t = v, i##t = ot + 2;                                                        \
    }

static void maxpool_tile_idx_k3(const maxpool_row_t *q, uint32_t ow0, float *y, int64_t *idx,
                                int64_t base)
{
    const uint32_t sw = q->stride_w, row = q->dil_h * q->in_w;
    int32_t o = (q->ih0 + (int32_t)(q->kh_lo * q->dil_h)) * (int32_t)q->in_w +
                (int32_t)(ow0 * sw) - (int32_t)q->pad_left;
    const float *xr = q->x + o;
    float b0 = xr[0], b1 = xr[sw], b2 = xr[2 * sw], b3 = xr[3 * sw];
    int32_t i0 = o, i1 = o + (int32_t)sw, i2 = o + 2 * (int32_t)sw, i3 = o + 3 * (int32_t)sw;
    uint32_t kh;
    DG_MAXPOOL_IDX_K3(1, 0) DG_MAXPOOL_IDX_K3(1, 1) DG_MAXPOOL_IDX_K3(1, 2) DG_MAXPOOL_IDX_K3(1, 3)
    for (kh = q->kh_lo + 1; kh < q->kh_hi; kh++) {
        xr += row, o += (int32_t)row;
        DG_MAXPOOL_IDX_K3(0, 0)
        DG_MAXPOOL_IDX_K3(0, 1)
        DG_MAXPOOL_IDX_K3(0, 2)
        DG_MAXPOOL_IDX_K3(0, 3)
    }
    y[ow0] = DG_FAULT(DG_FAULT_MAXPOOL_Y, b0);
    y[ow0 + 1] = DG_FAULT(DG_FAULT_MAXPOOL_Y, b1);
    y[ow0 + 2] = DG_FAULT(DG_FAULT_MAXPOOL_Y, b2);
    y[ow0 + 3] = DG_FAULT(DG_FAULT_MAXPOOL_Y, b3);
    idx[ow0] = DG_FAULT_I(DG_FAULT_MAXPOOL_IDX, base + i0);
    idx[ow0 + 1] = DG_FAULT_I(DG_FAULT_MAXPOOL_IDX, base + i1);
    idx[ow0 + 2] = DG_FAULT_I(DG_FAULT_MAXPOOL_IDX, base + i2);
    idx[ow0 + 3] = DG_FAULT_I(DG_FAULT_MAXPOOL_IDX, base + i3);
}

void dg_maxpool_f32(void *args)
{
    const dg_pool_args_t *p = (const dg_pool_args_t *)args;
    const uint32_t planes = p->batch * p->channels;
    const uint32_t span_w = (p->k_w - 1) * p->dil_w;
    const uint32_t in_hw = (uint32_t)p->in_h * p->in_w;
    dg_range_t r = dg_split(planes * p->out_h);
    uint32_t row, ow_lo, ow_hi;
    maxpool_row_t q;
    /* interior columns: every kw inside [0, in_w) */
    ow_lo = (p->pad_left + p->stride_w - 1) / p->stride_w;
    ow_hi = p->in_w + p->pad_left >= span_w + 1
                ? (p->in_w + p->pad_left - span_w - 1) / p->stride_w + 1
                : 0;
    if (ow_hi > p->out_w)
        ow_hi = p->out_w;
    if (ow_lo > ow_hi)
        ow_lo = ow_hi;
    q.in_w = p->in_w;
    q.k_w = p->k_w;
    q.dil_w = p->dil_w;
    q.dil_h = p->dil_h;
    q.stride_w = p->stride_w;
    q.pad_left = p->pad_left;
    for (row = r.start; row < r.end; row++) {
        const uint32_t oh = row % p->out_h, pl = row / p->out_h;
        float *y = p->y + (uint32_t)row * p->out_w;
        uint32_t ow, tiled_lo = 0, tiled_hi = 0;
        q.x = p->x + (uint32_t)pl * in_hw;
        q.ih0 = (int32_t)(oh * p->stride_h) - (int32_t)p->pad_top;
        maxpool_taps(q.ih0, p->k_h, p->dil_h, p->in_h, &q.kh_lo, &q.kh_hi);
        /* interior tiles (the last one shifted left to end at ow_hi) */
        ow = 0;
        if (q.kh_lo < q.kh_hi) {
            const int k3 = p->k_w == 3 && p->dil_w == 1 && p->stride_w <= 2;
            const uint32_t np = p->indices || k3 ? 4 : p->stride_w == 1 ? 8 : 4;
            int64_t *ip = p->indices ? p->indices + (uint32_t)row * p->out_w : NULL;
            uint32_t o;
            if (ow_hi - ow_lo >= np) {
                for (o = ow_lo;; o += np) {
                    if (o + np > ow_hi)
                        o = ow_hi - np;
                    if (ip && k3)
                        maxpool_tile_idx_k3(&q, o, y, ip, (int64_t)pl * (int64_t)in_hw);
                    else if (ip)
                        maxpool_tile_idx(&q, o, y, ip, (int64_t)pl * (int64_t)in_hw);
                    else if (k3)
                        p->stride_w == 1 ? maxpool_k3_s1(&q, o, y) : maxpool_k3_s2(&q, o, y);
                    else if (p->stride_w == 1)
                        maxpool_tile_s1(&q, o, y);
                    else if (p->stride_w == 2)
                        maxpool_tile_s2(&q, o, y);
                    else
                        maxpool_tile_sx(&q, o, y);
                    if (o + np == ow_hi)
                        break;
                }
                tiled_lo = ow_lo;
                tiled_hi = ow_hi;
            }
        }
        for (ow = 0; ow < p->out_w; ow++) {
            uint32_t kw_lo = 0, kw_hi = p->k_w;
            if (ow == tiled_lo && tiled_hi > tiled_lo) {
                ow = tiled_hi - 1;
                continue;
            }
            if (q.kh_lo >= q.kh_hi) {
                kw_hi = 0;
            } else if (ow < ow_lo || ow >= ow_hi) {
                maxpool_taps((int32_t)(ow * p->stride_w) - (int32_t)p->pad_left, p->k_w, p->dil_w, p->in_w,
                             &kw_lo, &kw_hi);
            }
            if (p->indices) {
                int64_t bi;
                y[ow] = DG_FAULT(DG_FAULT_MAXPOOL_Y, maxpool_index(&q, ow, kw_lo, kw_hi, &bi));
                p->indices[(uint32_t)row * p->out_w + ow] =
                    DG_FAULT_I(DG_FAULT_MAXPOOL_IDX, (int64_t)pl * (int64_t)in_hw + bi);
            } else {
                y[ow] = DG_FAULT(DG_FAULT_MAXPOOL_Y, maxpool_value(&q, ow, kw_lo, kw_hi));
            }
        }
        if (p->indices && p->storage_order) {
            /* the row's indices, (h, w) of the plane, as column-major */
            int64_t *ip = p->indices + (uint32_t)row * p->out_w;
            const int64_t base = (int64_t)pl * (int64_t)in_hw;
            for (ow = 0; ow < p->out_w; ow++) {
                const int64_t v = ip[ow] - base;
                ip[ow] = base + (v % p->in_w) * p->in_h + v / p->in_w;
            }
        }
    }
}

/* ---- MaxPool on int8 and uint8 ---------------------------------------------
 * Rows split as dg_maxpool_f32's; each output walks its window's taps inside
 * the input (rows found once per output row, columns per output) in window
 * order, keeping the first maximum. The geometry is read into locals once:
 * the byte stores to y may alias anything, so fields read through p would
 * be loaded again after every output. */
typedef struct {
    uint32_t in_h, in_w, k_h, k_w, stride_h, stride_w, dil_h, dil_w, pad_top, pad_left, out_h, out_w;
} maxpool_geom_t;

static maxpool_geom_t maxpool_geom(const dg_pool_typed_args_t *p)
{
    maxpool_geom_t g = {p->in_h,     p->in_w,  p->k_h,     p->k_w,      p->stride_h, p->stride_w,
                        p->dil_h,    p->dil_w, p->pad_top, p->pad_left, p->out_h,    p->out_w};
    return g;
}

/* The outputs of one row whose windows all lie inside the input (no
 * dilation, no indices): the maximum of each, no bounds. */
#define DG_MAXPOOL_DENSE_ROW(NAME, T)                                                                          \
    static void NAME(const T *x, T *y, const maxpool_geom_t *g)                                                \
    {                                                                                                          \
        const uint32_t out_w = g->out_w, in_w = g->in_w, k_h = g->k_h, k_w = g->k_w, s_w = g->stride_w;        \
        uint32_t ow, kh, kw;                                                                                   \
        if (k_h == 2u && k_w == 2u) { /* the common 2x2 window, unrolled */                                    \
            for (ow = 0; ow < out_w; ow++, x += s_w) {                                                         \
                const T a = x[0] > x[1] ? x[0] : x[1], b = x[in_w] > x[in_w + 1u] ? x[in_w] : x[in_w + 1u];    \
                y[ow] = (T)DG_FAULT_I(DG_FAULT_MAXPOOL_Y, a > b ? a : b);                                      \
            }                                                                                                  \
            return;                                                                                            \
        }                                                                                                      \
        for (ow = 0; ow < out_w; ow++, x += s_w) {                                                             \
            const T *r = x;                                                                                    \
            T best = r[0];                                                                                     \
            for (kh = 0; kh < k_h; kh++, r += in_w)                                                            \
                for (kw = 0; kw < k_w; kw++)                                                                   \
                    best = r[kw] > best ? r[kw] : best;                                                        \
            y[ow] = (T)DG_FAULT_I(DG_FAULT_MAXPOOL_Y, best);                                                   \
        }                                                                                                      \
    }

DG_MAXPOOL_DENSE_ROW(maxpool_dense_row_i8, int8_t)
DG_MAXPOOL_DENSE_ROW(maxpool_dense_row_u8, uint8_t)

/* Whether output row oh's windows all lie inside the input with unit
 * dilation: then maxpool_dense_row computes it. */
static int maxpool_dense(const maxpool_geom_t *g, uint32_t oh, int has_indices)
{
    const int32_t ih0 = (int32_t)(oh * g->stride_h) - (int32_t)g->pad_top;
    return !has_indices && g->dil_h == 1u && g->dil_w == 1u && g->pad_left == 0u && g->out_w > 0u &&
           ih0 >= 0 && (uint32_t)ih0 + g->k_h <= g->in_h && (g->out_w - 1u) * g->stride_w + g->k_w <= g->in_w;
}

#define DG_MAXPOOL_TYPED(NAME, T, LOWEST, DENSE)                                            \
    void NAME(void *args)                                                                   \
    {                                                                                       \
        const dg_pool_typed_args_t *p = (const dg_pool_typed_args_t *)args;                 \
        const maxpool_geom_t g = maxpool_geom(p);                                           \
        const uint32_t in_hw = g.in_h * g.in_w, order = p->storage_order;                   \
        int64_t *const indices = p->indices;                                                \
        const T *const x0 = (const T *)p->x;                                                \
        T *const y0 = (T *)p->y;                                                            \
        dg_range_t r = dg_split(p->batch * p->channels * g.out_h);                          \
        uint32_t row, oh = r.start % g.out_h, pl = r.start / g.out_h;                       \
        /* (plane, output row) stepped, not divided: the cores share one divider */          \
        for (row = r.start; row < r.end; row++, oh = oh + 1u == g.out_h ? (pl++, 0u) : oh + 1u) { \
            const T *x = x0 + pl * in_hw;                                                   \
            T *y = y0 + row * g.out_w;                                                      \
            const int32_t ih0 = (int32_t)(oh * g.stride_h) - (int32_t)g.pad_top;            \
            const int64_t base = (int64_t)pl * (int64_t)in_hw;                              \
            uint32_t kh_lo, kh_hi, ow;                                                      \
            if (maxpool_dense(&g, oh, indices != NULL)) {                                   \
                DENSE(x + (uint32_t)ih0 * g.in_w, y, &g);                                   \
                continue;                                                                   \
            }                                                                               \
            maxpool_taps(ih0, g.k_h, g.dil_h, g.in_h, &kh_lo, &kh_hi);                      \
            for (ow = 0; ow < g.out_w; ow++) {                                              \
                const int32_t iw0 = (int32_t)(ow * g.stride_w) - (int32_t)g.pad_left;       \
                uint32_t kw_lo, kw_hi, kh, kw;                                              \
                T best = (LOWEST);                                                          \
                int32_t bi = -1;                                                            \
                maxpool_taps(iw0, g.k_w, g.dil_w, g.in_w, &kw_lo, &kw_hi);                  \
                for (kh = kh_lo; kh < kh_hi; kh++) {                                        \
                    const int32_t ih = ih0 + (int32_t)(kh * g.dil_h);                       \
                    const T *xr = x + (uint32_t)ih * g.in_w;                                \
                    for (kw = kw_lo; kw < kw_hi; kw++) {                                    \
                        const int32_t iw = iw0 + (int32_t)(kw * g.dil_w);                   \
                        const T v = xr[iw];                                                 \
                        if (v > best || bi < 0) {                                           \
                            best = v;                                                       \
                            bi = order ? iw * (int32_t)g.in_h + ih : ih * (int32_t)g.in_w + iw; \
                        }                                                                   \
                    }                                                                       \
                }                                                                           \
                y[ow] = (T)DG_FAULT_I(DG_FAULT_MAXPOOL_Y, best);                            \
                if (indices)                                                                \
                    indices[row * g.out_w + ow] = DG_FAULT_I(DG_FAULT_MAXPOOL_IDX, base + bi); \
            }                                                                               \
        }                                                                                   \
    }

DG_MAXPOOL_TYPED(dg_maxpool_i8, int8_t, INT8_MIN, maxpool_dense_row_i8)
DG_MAXPOOL_TYPED(dg_maxpool_u8, uint8_t, 0, maxpool_dense_row_u8)

void dg_maxpool_grad_f32(void *args)
{
    const dg_pool_args_t *p = (const dg_pool_args_t *)args;
    const uint32_t in_sz = p->in_h * p->in_w, out_sz = p->out_h * p->out_w;
    dg_range_t r = dg_split(p->batch * p->channels);
    uint32_t pl, i;
    for (pl = r.start; pl < r.end; pl++) {
        float *dxp = p->dx + (uint32_t)pl * in_sz;
        const int64_t base = (int64_t)pl * in_sz;
        for (i = 0; i < in_sz; i++)
            dxp[i] = 0.0f;
        for (i = 0; i < out_sz; i++) {
            const int64_t idx = p->indices_in[(uint32_t)pl * out_sz + i] - base;
            DG_CHECK(idx >= 0 && idx < (int64_t)in_sz,
                     "MaxPoolGrad: an index points outside its (n, c) plane");
            if (idx < 0 || idx >= (int64_t)in_sz)
                continue;
            dxp[idx] += p->dy[(uint32_t)pl * out_sz + i];
        }
        for (i = 0; i < in_sz; i++)
            dxp[i] = DG_FAULT(DG_FAULT_MAXPOOL_GRAD, dxp[i]);
    }
}

/* One dimension of the window of output o: [*s, *e) clipped to the input,
 * and *len, its length for onnxruntime's divisor (with count_include_pad
 * clipped to the padded input only). The divisor of a window is
 * len_h * len_w. */
typedef struct {
    int32_t s, e, len;
} avg_span_t;

static avg_span_t avg_span(uint32_t o, uint32_t stride, uint32_t pad0, uint32_t k, uint32_t in,
                           uint32_t pad1, uint32_t include_pad)
{
    avg_span_t r;
    r.s = (int32_t)(o * stride) - (int32_t)pad0;
    r.e = r.s + (int32_t)k;
    if (r.e > (int32_t)(in + pad1))
        r.e = (int32_t)(in + pad1);
    r.len = r.e - r.s;
    if (r.s < 0)
        r.s = 0;
    if (r.e > (int32_t)in)
        r.e = (int32_t)in;
    if (!include_pad)
        r.len = r.e - r.s;
    return r;
}

/* The window spans of the columns: computed once per call into a stack
 * table when out_w is small, else per column. */
#define DG_AVG_COLS 64

static void avg_cols(const dg_pool_args_t *p, avg_span_t *cols)
{
    uint32_t ow;
    DG_CHECK(p->dil_h <= 1 && p->dil_w <= 1, "AveragePool: dilations are not supported");
    for (ow = 0; ow < p->out_w && ow < DG_AVG_COLS; ow++)
        cols[ow] = avg_span(ow, p->stride_w, p->pad_left, p->k_w, p->in_w, p->pad_right,
                            p->count_include_pad);
}

static DG_INLINE avg_span_t avg_col(const dg_pool_args_t *p, const avg_span_t *cols, uint32_t ow)
{
    return ow < DG_AVG_COLS ? cols[ow]
                            : avg_span(ow, p->stride_w, p->pad_left, p->k_w, p->in_w, p->pad_right,
                                       p->count_include_pad);
}

void dg_avgpool_f32(void *args)
{
    const dg_pool_args_t *p = (const dg_pool_args_t *)args;
    const uint32_t in_w = p->in_w;
    dg_range_t r = dg_split(p->batch * p->channels * p->out_h);
    avg_span_t cols[DG_AVG_COLS];
    uint32_t row, ow;
    avg_cols(p, cols);
    for (row = r.start; row < r.end; row++) {
        const uint32_t oh = row % p->out_h, pl = row / p->out_h;
        const avg_span_t h = avg_span(oh, p->stride_h, p->pad_top, p->k_h, p->in_h, p->pad_bottom,
                                      p->count_include_pad);
        const float *xp = p->x + pl * p->in_h * in_w;
        float *y = p->y + row * p->out_w;
        for (ow = 0; ow < p->out_w; ow++) {
            const avg_span_t w = avg_col(p, cols, ow);
            const float *xr = xp + (uint32_t)h.s * in_w + w.s;
            float acc = 0.0f;
            int32_t ih, iw;
            if (w.e - w.s == 3) /* the common widths unrolled, same order */
                for (ih = h.s; ih < h.e; ih++, xr += in_w)
                    acc += xr[0], acc += xr[1], acc += xr[2];
            else if (w.e - w.s == 2)
                for (ih = h.s; ih < h.e; ih++, xr += in_w)
                    acc += xr[0], acc += xr[1];
            else
                for (ih = h.s; ih < h.e; ih++, xr += in_w)
                    for (iw = 0; iw < w.e - w.s; iw++)
                        acc += xr[iw];
            y[ow] = DG_FAULT(DG_FAULT_AVGPOOL, acc / (float)(h.len * w.len));
        }
    }
}

void dg_avgpool_grad_f32(void *args)
{
    const dg_pool_args_t *p = (const dg_pool_args_t *)args;
    const uint32_t in_w = p->in_w, in_sz = p->in_h * in_w;
    dg_range_t r = dg_split(p->batch * p->channels);
    avg_span_t cols[DG_AVG_COLS];
    uint32_t pl, i, oh, ow;
    avg_cols(p, cols);
    for (pl = r.start; pl < r.end; pl++) {
        float *dxp = p->dx + pl * in_sz;
        const float *dyp = p->dy + pl * p->out_h * p->out_w;
        for (i = 0; i < in_sz; i++)
            dxp[i] = 0.0f;
        for (oh = 0; oh < p->out_h; oh++, dyp += p->out_w) {
            const avg_span_t h = avg_span(oh, p->stride_h, p->pad_top, p->k_h, p->in_h,
                                          p->pad_bottom, p->count_include_pad);
            for (ow = 0; ow < p->out_w; ow++) {
                const avg_span_t w = avg_col(p, cols, ow);
                const float g = dyp[ow] / (float)(h.len * w.len);
                float *xr = dxp + (uint32_t)h.s * in_w + w.s;
                int32_t ih, iw;
                if (w.e - w.s == 3)
                    for (ih = h.s; ih < h.e; ih++, xr += in_w)
                        xr[0] += g, xr[1] += g, xr[2] += g;
                else if (w.e - w.s == 2)
                    for (ih = h.s; ih < h.e; ih++, xr += in_w)
                        xr[0] += g, xr[1] += g;
                else
                    for (ih = h.s; ih < h.e; ih++, xr += in_w)
                        for (iw = 0; iw < w.e - w.s; iw++)
                            xr[iw] += g;
            }
        }
        for (i = 0; i < in_sz; i++)
            dxp[i] = DG_FAULT(DG_FAULT_AVGPOOL_GRAD, dxp[i]);
    }
}

void dg_global_avgpool_f32(void *args)
{
    const dg_pool_args_t *p = (const dg_pool_args_t *)args;
    const uint32_t hw = p->in_h * p->in_w;
    dg_range_t r = dg_split(p->batch * p->channels);
    uint32_t pl, i;
    for (pl = r.start; pl < r.end; pl++) {
        const float *xp = p->x + (uint32_t)pl * hw;
        float acc = 0.0f;
        for (i = 0; i < hw; i++)
            acc += xp[i];
        p->y[pl] = DG_FAULT(DG_FAULT_GAP, acc / (float)hw);
    }
}

void dg_global_avgpool_grad_f32(void *args)
{
    const dg_pool_args_t *p = (const dg_pool_args_t *)args;
    const uint32_t hw = p->in_h * p->in_w;
    dg_range_t r = dg_split(p->batch * p->channels);
    uint32_t pl, i;
    for (pl = r.start; pl < r.end; pl++) {
        const float g = p->dy[pl] / (float)hw;
        for (i = 0; i < hw; i++)
            p->dx[(uint32_t)pl * hw + i] = DG_FAULT(DG_FAULT_GAP_GRAD, g);
    }
}
