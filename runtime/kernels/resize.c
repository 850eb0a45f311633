/* Resize over the last two axes by tables of taps (see dg_kernels.h). */
#include "dg_internal.h"

void dg_resize_f32(void *args)
{
    const dg_resize_args_t *p = (const dg_resize_args_t *)args;
    const uint32_t rows = p->planes * p->out_h;
    dg_range_t r = dg_split(rows);
    uint32_t row, ox, i, j;
    for (row = r.start; row < r.end; row++) {
        const uint32_t plane = row / p->out_h, oy = row % p->out_h;
        const float *x = p->x + (uint32_t)plane * p->in_h * p->in_w;
        float *y = p->y + (uint32_t)row * p->out_w;
        for (ox = 0; ox < p->out_w; ox++) {
            float acc = 0.0f;
            if (p->iy[oy * p->kh] < 0 || p->ix[ox * p->kw] < 0) {
                y[ox] = DG_FAULT(DG_FAULT_RESIZE, p->extrapolation);
                continue;
            }
            for (i = 0; i < p->kh; i++) {
                const float *xr = x + (uint32_t)p->iy[oy * p->kh + i] * p->in_w;
                float s = 0.0f;
                for (j = 0; j < p->kw; j++)
                    s += p->wx[ox * p->kw + j] * xr[p->ix[ox * p->kw + j]];
                acc += p->wy[oy * p->kh + i] * s;
            }
            y[ox] = DG_FAULT(DG_FAULT_RESIZE, acc);
        }
    }
}
