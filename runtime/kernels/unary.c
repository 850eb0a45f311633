/* Elementwise kernels: unary math and activations, Clip, the
 * activation gradients onnxruntime-training emits from Y, and variadic
 * Max / Min with broadcasting. */
#include "dg_internal.h"

#include <float.h>

#define DG_UNARY_KERNEL(name, fault, EXPR)                        \
    void name(void *args)                                         \
    {                                                             \
        const dg_unary_args_t *p = (const dg_unary_args_t *)args; \
        dg_range_t r = dg_split(p->n);                            \
        uint32_t i;                                               \
        for (i = r.start; i < r.end; i++) {                       \
            const float v = p->x[i];                              \
            p->y[i] = DG_FAULT(fault, (EXPR));                    \
        }                                                         \
    }

static inline float sigmoidf_(float v)
{
    return 1.0f / (1.0f + dg_expf(-v));
}

static inline float hard_sigmoid_(float v, float alpha, float beta)
{
    const float t = alpha * v + beta;
    return t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
}

/* ln(1 + e^v) without overflow: v + ln(1 + e^-v) for v > 0. */
static inline float softplus_(float v)
{
    return v > 0.0f ? v + log1pf(dg_expf(-v)) : log1pf(dg_expf(v));
}

DG_UNARY_KERNEL(dg_ceil_f32, DG_FAULT_CEIL, ceilf(v))
DG_UNARY_KERNEL(dg_floor_f32, DG_FAULT_FLOOR, floorf(v))
DG_UNARY_KERNEL(dg_exp_f32, DG_FAULT_EXP, dg_expf(v))
DG_UNARY_KERNEL(dg_log_f32, DG_FAULT_LOG, logf(v))
DG_UNARY_KERNEL(dg_sqrt_f32, DG_FAULT_SQRT, sqrtf(v))
DG_UNARY_KERNEL(dg_neg_f32, DG_FAULT_NEG, -v)
DG_UNARY_KERNEL(dg_abs_f32, DG_FAULT_ABS, fabsf(v))
DG_UNARY_KERNEL(dg_tanh_f32, DG_FAULT_TANH, tanhf(v))
DG_UNARY_KERNEL(dg_sigmoid_f32, DG_FAULT_SIGMOID, sigmoidf_(v))
DG_UNARY_KERNEL(dg_erf_f32, DG_FAULT_ERF, dg_erff(v))
DG_UNARY_KERNEL(dg_hard_swish_f32, DG_FAULT_HARD_SWISH, v * hard_sigmoid_(v, 1.0f / 6.0f, 0.5f))
DG_UNARY_KERNEL(dg_softplus_f32, DG_FAULT_SOFTPLUS, softplus_(v))

void dg_hard_sigmoid_f32(void *args)
{
    const dg_unary_param_args_t *p = (const dg_unary_param_args_t *)args;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++)
        p->y[i] = DG_FAULT(DG_FAULT_HARD_SIGMOID, hard_sigmoid_(p->x[i], p->alpha, p->beta));
}

void dg_leaky_relu_f32(void *args)
{
    const dg_unary_param_args_t *p = (const dg_unary_param_args_t *)args;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++) {
        const float v = p->x[i];
        p->y[i] = DG_FAULT(DG_FAULT_LEAKY_RELU, v < 0.0f ? p->alpha * v : v);
    }
}

void dg_elu_f32(void *args)
{
    const dg_unary_param_args_t *p = (const dg_unary_param_args_t *)args;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++) {
        const float v = p->x[i];
        p->y[i] = DG_FAULT(DG_FAULT_ELU, v < 0.0f ? p->alpha * expm1f(v) : v);
    }
}

void dg_swish_f32(void *args)
{
    const dg_unary_param_args_t *p = (const dg_unary_param_args_t *)args;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++) {
        const float v = p->x[i];
        p->y[i] = DG_FAULT(DG_FAULT_SWISH, v * sigmoidf_(p->alpha * v));
    }
}

/* ---- Clip --------------------------------------------------------------- */
static void clip_bounds(const dg_clip_args_t *p, float *lo, float *hi)
{
    *lo = p->min_ptr ? *p->min_ptr : (p->has_min ? p->min : -FLT_MAX);
    *hi = p->max_ptr ? *p->max_ptr : (p->has_max ? p->max : FLT_MAX);
}

void dg_clip_f32(void *args)
{
    const dg_clip_args_t *p = (const dg_clip_args_t *)args;
    dg_range_t r = dg_split(p->n);
    float lo, hi;
    uint32_t i;
    clip_bounds(p, &lo, &hi);
    for (i = r.start; i < r.end; i++) {
        float v = p->x[i];
        v = v < lo ? lo : v;
        v = v > hi ? hi : v;
        p->y[i] = DG_FAULT(DG_FAULT_CLIP, v);
    }
}

void dg_clip_grad_f32(void *args)
{
    const dg_clip_args_t *p = (const dg_clip_args_t *)args;
    dg_range_t r = dg_split(p->n);
    const int use_lo = p->min_ptr != NULL || p->has_min;
    const int use_hi = p->max_ptr != NULL || p->has_max;
    float lo, hi;
    uint32_t i;
    clip_bounds(p, &lo, &hi);
    for (i = r.start; i < r.end; i++) {
        const float v = p->x[i];
        const int pass = (!use_lo || v >= lo) && (!use_hi || v <= hi);
        p->dx[i] = DG_FAULT(DG_FAULT_CLIP_GRAD, pass ? p->dy[i] : 0.0f);
    }
}

/* ---- gradients ------------------------------------------------------------ */
void dg_sigmoid_grad_f32(void *args)
{
    const dg_act_grad_y_args_t *p = (const dg_act_grad_y_args_t *)args;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++) {
        const float y = p->y[i];
        p->dx[i] = DG_FAULT(DG_FAULT_SIGMOID_GRAD, p->dy[i] * y * (1.0f - y));
    }
}

void dg_tanh_grad_f32(void *args)
{
    const dg_act_grad_y_args_t *p = (const dg_act_grad_y_args_t *)args;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++) {
        const float y = p->y[i];
        p->dx[i] = DG_FAULT(DG_FAULT_TANH_GRAD, p->dy[i] * (1.0f - y * y));
    }
}

void dg_swish_grad_f32(void *args)
{
    const dg_swish_grad_args_t *p = (const dg_swish_grad_args_t *)args;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++) {
        const float ax = p->alpha * p->x[i];
        const float s = sigmoidf_(ax);
        p->dx[i] = DG_FAULT(DG_FAULT_SWISH_GRAD, p->dy[i] * s * (1.0f + ax * (1.0f - s)));
    }
}

/* ---- variadic Max / Min ----------------------------------------------------- */
static void variadic(const dg_variadic_args_t *p, int is_max, int fault)
{
    (void)fault;
    /* a NaN operand propagates, whichever side it is on */
    DG_VARIADIC_WALK(p, float, p->x, p->y, DG_FAULT, fault,
                     if (is_max ? !(acc >= v) : !(acc <= v)) acc = (v != v) ? v : (acc != acc ? acc : v));
}

void dg_max_f32(void *args)
{
    variadic((const dg_variadic_args_t *)args, 1, DG_FAULT_MAX);
}

void dg_min_f32(void *args)
{
    variadic((const dg_variadic_args_t *)args, 0, DG_FAULT_MIN);
}

/* ---- Sign (the Abs gradient) ----------------------------------------------- */
DG_UNARY_KERNEL(dg_sign_f32, DG_FAULT_SIGN, v > 0.0f ? 1.0f : (v < 0.0f ? -1.0f : (v == v ? 0.0f : v)))
