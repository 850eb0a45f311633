/* Conv, pointwise (1 x 1, stride 1, no padding): forward, dX and dW as
 * matrix products in the Gemm tiles. */
#include "dg_internal.h"
#include "conv_internal.h"

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
void dg_conv_pointwise(const dg_conv_args_t *p)
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

/* Pointwise: per (n, group) dX[cg, hw] = W^T[cg, mg] dY[mg, hw]. */
void dg_conv_grad_dx_pointwise(const dg_conv_args_t *p)
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

/* Pointwise dW: per group dW[mg, cg] = sum over n of dY_n[mg, hw] X_n[cg, hw]^T,
 * through the Gemm tiles with the sum continued from one sample to the
 * next (k = (n, p) in order); the items of pw_split over (group, mg, cg). */
void dg_conv_grad_dw_pointwise(const dg_conv_args_t *p)
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
