/* QLinearConv / ConvInteger (dg_k_quant.h states the arithmetic): the
 * depthwise path, the packed path, or a direct loop over output rows.
 * Each kernel splits its outer loop over the team's cores. */
#include "dg_internal.h"
#include "quant_internal.h"

#include <stdint.h>

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

/* ---- depthwise (one input channel per group) ------------------------------
 * Depthwise convolutions, with or without a channel multiplier: too few
 * products per window for the gathered dot products. (A single-channel
 * convolution, group 1, is faster packed: its window is gathered once for
 * every output channel; kws_cnn's Conv_1 105,000 cycles against 147,000.) Each output
 * sums (x - xzp)(w - wzp) over its taps inside the input directly (a pad
 * reads as xzp and adds nothing). A channel's weights, multiplier and bound
 * are set up once per run of its rows. */
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

/* An output row's interior run of a 3x3 window (dilation 1, its three
 * input rows inside): n outputs from y[at], the window's top left at r0,
 * stepping s_w. A function of its own so that the nine weights stay in
 * registers (inlined into the row walk they were spilled: twice the
 * instructions). Values past q_out8's bound go to q_out, out of line. */
static DG_NOINLINE void qdw_out_wide(void *y, uint32_t i, int32_t s, float m, int32_t zp, uint32_t dt)
{
    q_out(y, i, s, m, zp, dt);
}

#define DG_QDW_RUN3(NAME, XT)                                                                                   \
    static DG_NOINLINE void NAME(const XT *r0, uint32_t in_w, uint32_t s_w, const qdw_chan_t *ch, void *y,     \
                                 uint32_t at, uint32_t n, int32_t yzp, uint32_t dt)                             \
    {                                                                                                          \
        const XT *r1 = r0 + in_w, *r2 = r1 + in_w;                                                             \
        const int32_t w0 = ch->w[0], w1 = ch->w[1], w2 = ch->w[2], w3 = ch->w[3], w4 = ch->w[4];               \
        const int32_t w5 = ch->w[5], w6 = ch->w[6], w7 = ch->w[7], w8 = ch->w[8];                              \
        const int32_t base = ch->bias - ch->xw; /* xzp taken out once */                                       \
        const float m = ch->m;                                                                                 \
        const uint32_t lim = ch->lim, end = at + n;                                                            \
        for (; at < end; at++, r0 += s_w, r1 += s_w, r2 += s_w) {                                              \
            const int32_t acc = base + r0[0] * w0 + r0[1] * w1 + r0[2] * w2 + r1[0] * w3 + r1[1] * w4 +       \
                                r1[2] * w5 + r2[0] * w6 + r2[1] * w7 + r2[2] * w8;                             \
            const uint32_t mag = acc < 0 ? 0u - (uint32_t)acc : (uint32_t)acc;                                 \
            if (mag < lim)                                                                                     \
                q_store(y, at, q_rne((float)acc * m), yzp, dt);                                                \
            else                                                                                               \
                qdw_out_wide(y, at, acc, m, yzp, dt);                                                          \
        }                                                                                                      \
    }

DG_QDW_RUN3(qdw_run3_s, int8_t)
DG_QDW_RUN3(qdw_run3_u, uint8_t)

#define DG_QDW_ROW(NAME, XT, RUN3)                                                                                  \
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
            for (lo = 0; lo < out_w && (int32_t)(lo * s_w) < pl; lo++)                                         \
                ;                                                                                              \
            for (hi = lo; hi < out_w && (int32_t)(hi * s_w) - pl + 2 < (int32_t)in_w; hi++)                   \
                ;                                                                                              \
            if (hi > lo)                                                                                       \
                RUN3(x + (uint32_t)ih0 * in_w + (lo * s_w - (uint32_t)pl), in_w, s_w, ch, y, yoff + lo, hi - lo, \
                     yzp, dt);                                                                                 \
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

DG_QDW_ROW(qdw_row_s, int8_t, qdw_run3_s)
DG_QDW_ROW(qdw_row_u, uint8_t, qdw_run3_u)

/* Rows (sample, output channel, row) split among the cores. The walk steps
 * its indices rather than dividing per row: the cluster's cores share one
 * divider. Output channel c of a sample reads input channel c / mult. */
static void qconv_depthwise(const dg_qconv_args_t *p, int32_t xzp, int32_t yzp)
{
    const uint32_t plane = p->in_h * p->in_w, oplane = p->out_h * p->out_w, mult = p->out_c / p->group;
    const dg_range_t r = dg_split(p->batch * p->out_c * p->out_h);
    uint32_t u, oh = r.start % p->out_h, nc = r.start / p->out_h;
    uint32_t c = nc % p->out_c, km = c % mult, ic = nc / p->out_c * p->in_c + c / mult;
    qdw_chan_t ch;
    if (r.start < r.end)
        qdw_channel(p, c, &ch);
    for (u = r.start; u < r.end; u++) {
        const uint32_t yoff = nc * oplane + oh * p->out_w;
        if (p->x_dtype == DG_DT_I8)
            qdw_row_s(p, &ch, (const int8_t *)p->x + ic * plane, oh, yoff, xzp, yzp);
        else
            qdw_row_u(p, &ch, (const uint8_t *)p->x + ic * plane, oh, yoff, xzp, yzp);
        if (++oh < p->out_h)
            continue;
        oh = 0, nc++;
        c = c + 1 == p->out_c ? 0 : c + 1;
        if (++km == mult) /* a channel's last output channel: the next input channel (or sample) */
            km = 0, ic++;
        if (u + 1 < r.end) /* set up once per run of the channel's rows */
            qdw_channel(p, c, &ch);
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
    if (pk.k && p->in_c == p->group && p->group > 1u && p->out_c % p->group == 0 && p->k_h * p->k_w <= QDW_TAPS) {
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
