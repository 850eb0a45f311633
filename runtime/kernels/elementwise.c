/* Elementwise kernels: broadcast binary ops, activations and their
 * gradients, Scale, Sum. */
#include "dg_internal.h"

/* A broadcast binary op on f32 (DG_BINARY_WALK, dg_internal.h). */
#define DG_BINARY_KERNEL(name, fault, EXPR)                                     \
    void name(void *args)                                                       \
    {                                                                           \
        const dg_binary_args_t *p = (const dg_binary_args_t *)args;             \
        DG_BINARY_WALK(p, float, p->a, float, p->b, p->y[i] = DG_FAULT(fault, (EXPR))); \
    }

DG_BINARY_KERNEL(dg_add_f32, DG_FAULT_ADD, va + vb)
DG_BINARY_KERNEL(dg_sub_f32, DG_FAULT_SUB, va - vb)
DG_BINARY_KERNEL(dg_mul_f32, DG_FAULT_MUL, va * vb)
DG_BINARY_KERNEL(dg_div_f32, DG_FAULT_DIV, va / vb)
DG_BINARY_KERNEL(dg_pow_f32, DG_FAULT_POW, vb == 2.0f ? va * va : powf(va, vb))
/* Mod with fmod = 0 on floats, numpy's mod: the remainder takes the
 * divisor's sign, a zero remainder too (-0.0 for a negative divisor). */
static inline float dg_floor_mod_f32(float a, float b)
{
    float m = fmodf(a, b);
    if (m != 0.0f) {
        if ((b < 0.0f) != (m < 0.0f))
            m += b;
    } else {
        m = copysignf(0.0f, b);
    }
    return m;
}

/* Mod (declared with the integer forms): fmod = 1, fmod = 0 */
DG_BINARY_KERNEL(dg_fmod_f32, DG_FAULT_MOD, fmodf(va, vb))
DG_BINARY_KERNEL(dg_mod_f32, DG_FAULT_MOD, dg_floor_mod_f32(va, vb))
/* PRelu: a = X, b = the slope broadcast to X (declared with the operators beyond the core) */
DG_BINARY_KERNEL(dg_prelu_f32, DG_FAULT_PRELU, va < 0.0f ? va * vb : va)

void dg_relu_f32(void *args)
{
    const dg_unary_args_t *p = (const dg_unary_args_t *)args;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++) {
        const float v = p->x[i];
        p->y[i] = DG_FAULT(DG_FAULT_RELU, v > 0.0f ? v : 0.0f);
    }
}

#define DG_SQRT1_2 0.70710678118654752440f
#define DG_INV_SQRT_2PI 0.39894228040143267794f

void dg_gelu_f32(void *args)
{
    const dg_unary_args_t *p = (const dg_unary_args_t *)args;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++) {
        const float v = p->x[i];
        p->y[i] = DG_FAULT(DG_FAULT_GELU, 0.5f * v * (1.0f + dg_erff(v * DG_SQRT1_2)));
    }
}

void dg_scale_f32(void *args)
{
    const dg_scale_args_t *p = (const dg_scale_args_t *)args;
    dg_range_t r = dg_split(p->n);
    const float s = p->scale[0];
    uint32_t i;
    if (p->scale_down) {
        for (i = r.start; i < r.end; i++)
            p->y[i] = DG_FAULT(DG_FAULT_SCALE, p->x[i] / s);
    } else {
        for (i = r.start; i < r.end; i++)
            p->y[i] = DG_FAULT(DG_FAULT_SCALE, p->x[i] * s);
    }
}

void dg_sum_f32(void *args)
{
    const dg_sum_args_t *p = (const dg_sum_args_t *)args;
    dg_range_t r = dg_split(p->n);
    uint32_t i, j;
    for (i = r.start; i < r.end; i++) {
        float acc = p->x[0][i];
        for (j = 1; j < p->nin; j++)
            acc += p->x[j][i];
        p->y[i] = DG_FAULT(DG_FAULT_SUM, acc);
    }
}

void dg_relu_grad_f32(void *args)
{
    const dg_act_grad_args_t *p = (const dg_act_grad_args_t *)args;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++)
        p->dx[i] = DG_FAULT(DG_FAULT_RELU_GRAD, p->x[i] > 0.0f ? p->dy[i] : 0.0f);
}

void dg_gelu_grad_f32(void *args)
{
    const dg_act_grad_args_t *p = (const dg_act_grad_args_t *)args;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++) {
        const float v = p->x[i];
        const float cdf = 0.5f * (1.0f + dg_erff(v * DG_SQRT1_2));
        const float pdf = DG_INV_SQRT_2PI * dg_expf(-0.5f * v * v);
        p->dx[i] = DG_FAULT(DG_FAULT_GELU_GRAD, p->dy[i] * (cdf + v * pdf));
    }
}
