/* Gelu with approximate = "tanh" and its gradient (dg_kernels.h). */
#include "dg_internal.h"

#define DG_SQRT_2_OVER_PI 0.79788456080286535588f
#define DG_GELU_TANH_C 0.044715f

void dg_gelu_tanh_f32(void *args)
{
    const dg_unary_args_t *p = (const dg_unary_args_t *)args;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++) {
        const float v = p->x[i];
        const float u = DG_SQRT_2_OVER_PI * (v + DG_GELU_TANH_C * v * v * v);
        p->y[i] = 0.5f * v * (1.0f + tanhf(u));
    }
}

void dg_gelu_tanh_grad_f32(void *args)
{
    const dg_act_grad_args_t *p = (const dg_act_grad_args_t *)args;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++) {
        const float v = p->x[i];
        const float u = DG_SQRT_2_OVER_PI * (v + DG_GELU_TANH_C * v * v * v);
        const float t = tanhf(u);
        const float du = DG_SQRT_2_OVER_PI * (1.0f + 3.0f * DG_GELU_TANH_C * v * v);
        p->dx[i] = p->dy[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
    }
}
