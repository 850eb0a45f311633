/* ConvGrad dX: the gradient of a convolution with respect to its input.
 * Every dX element is owned by one core: no cross-core reduction. */
#include "dg_internal.h"
#include "conv_internal.h"

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
    dg_conv_items(&f, p->w, DG_FAULT_CONV_GRAD_DX);
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
    if (dg_conv_is_pointwise(p)) {
        dg_conv_grad_dx_pointwise(p);
        return 1;
    }
    if (conv_grad_dx_as_conv(p))
        return 1;
    if (dg_conv_dw3_applies(p) && p->stride_w == 1) {
        /* stride 1: dx is the depthwise convolution of dy with the flipped
         * weights and padding 2 - pad */
        dg_conv_dw3_run(p, p->dy, p->dx, p->out_h, p->out_w, p->in_h, p->in_w, 2 - p->pad_top,
                2 - p->pad_left, 1, DG_FAULT_CONV_GRAD_DX);
        return 1;
    }
    if (dg_conv_dw3_applies(p)) {
        dg_conv_dw3_grad_x_s2(p);
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
