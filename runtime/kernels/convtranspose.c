/* ConvTranspose (NCHW, weights [in_c, out_c / group, k_h, k_w]): the dX of
 * the convolution it transposes (ConvGrad dX with dy = x), so it runs in
 * that kernel's tiles; each output element, owned by one core, sums the
 * inputs that map onto it in (input channel, k_h, k_w) order, and a second
 * pass adds the bias. */
#include "dg_internal.h"

void dg_conv_transpose_f32(void *args)
{
    const dg_conv_args_t *p = (const dg_conv_args_t *)args;
    const uint32_t hw = p->out_h * p->out_w;
    dg_conv_args_t g;
    dg_range_t r;
    uint32_t pl, i;
    DG_CHECK(p->group > 0 && p->in_c % p->group == 0 && p->out_c % p->group == 0,
             "ConvTranspose: channels not divisible by group");
    memset(&g, 0, sizeof g);
    g.dy = p->x, g.w = p->w, g.dx = p->y;
    g.batch = p->batch, g.group = p->group;
    g.in_c = p->out_c, g.in_h = p->out_h, g.in_w = p->out_w;
    g.out_c = p->in_c, g.out_h = p->in_h, g.out_w = p->in_w;
    g.k_h = p->k_h, g.k_w = p->k_w, g.stride_h = p->stride_h, g.stride_w = p->stride_w;
    g.dil_h = p->dil_h, g.dil_w = p->dil_w, g.pad_top = p->pad_top, g.pad_left = p->pad_left;
    dg_conv_grad_dx_f32(&g);
#ifndef DG_FAULT_INJECTION
    if (!p->b)
        return;
#endif
    /* the planes one core stores here were written by other cores */
    pi_cl_team_barrier();
    r = dg_split(p->batch * p->out_c);
    for (pl = r.start; pl < r.end; pl++) {
        const float b = p->b ? p->b[pl % p->out_c] : 0.0f;
        float *y = p->y + pl * hw;
        for (i = 0; i < hw; i++)
            y[i] = DG_FAULT(DG_FAULT_CONV_TRANSPOSE, p->b ? y[i] + b : y[i]);
    }
}
