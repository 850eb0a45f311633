/* Gradient accumulation and the SGD update, in place. */
#include "dg_internal.h"

void dg_inplace_accumulate_f32(void *args)
{
    const dg_accumulate_args_t *p = (const dg_accumulate_args_t *)args;
    const int reset = p->lazy_reset != NULL && p->lazy_reset[0] != 0;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++) {
        const float v = reset ? p->grad[i] : p->buffer[i] + p->grad[i];
        p->buffer[i] = DG_FAULT(DG_FAULT_ACCUMULATE, v);
        if (p->out && p->out != p->buffer)
            p->out[i] = p->buffer[i];
    }
    if (p->updated && pi_core_id() == 0)
        p->updated[0] = 1;
}

void dg_sgd_f32(void *args)
{
    const dg_sgd_args_t *p = (const dg_sgd_args_t *)args;
    const float lr = p->lr_ptr ? p->lr_ptr[0] : p->lr;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    /* two statements: a compiler that fuses a * b + c within one
     * expression (clang's default) would round once, not as SGD does */
    for (i = r.start; i < r.end; i++) {
        const float step = lr * p->g[i];
        p->w_out[i] = DG_FAULT(DG_FAULT_SGD, p->w[i] - step);
    }
}

void dg_momentum_sgd_f32(void *args)
{
    const dg_momentum_sgd_args_t *p = (const dg_momentum_sgd_args_t *)args;
    const float lr = p->lr_ptr ? p->lr_ptr[0] : p->lr;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++) {
        const float g = p->g[i] + p->weight_decay * p->w[i];
        const float v = DG_FAULT(DG_FAULT_MOMENTUM_V, p->momentum * p->velocity[i] + g);
        p->velocity[i] = v;
        p->w_out[i] = DG_FAULT(DG_FAULT_MOMENTUM_W, p->w[i] - lr * v);
    }
}

/* b^t for a whole t >= 0, by repeated squaring: a few double products.
 * The cluster cores have no double unit; the C library's pow() in soft
 * double took ~30k cycles a call on them once t > 2, every optimizer step
 * of every parameter, far more than the parameter's update. The products
 * round a few times where pow() rounds once: the double result differs in
 * its last bits at most, and c1 and c2 below are floats. */
static double pow_whole(double b, uint64_t t)
{
    double r = 1.0;
    while (t != 0) {
        if (t & 1u)
            r *= b;
        t >>= 1;
        if (t != 0)
            b *= b;
    }
    return r;
}

void dg_adamw_f32(void *args)
{
    const dg_adamw_args_t *p = (const dg_adamw_args_t *)args;
    const float lr = p->lr_ptr ? p->lr_ptr[0] : p->lr;
    /* Every core reads the count before core 0 advances it. */
    const int64_t t = p->step[0] + 1;
    /* In double, then float, as onnxruntime rounds them. */
    const float c1 = (float)(1.0 - pow_whole((double)p->beta1, (uint64_t)t));
    const float c2 = (float)(1.0 - pow_whole((double)p->beta2, (uint64_t)t));
    const float step_size = lr * sqrtf(c2) / c1;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++) {
        const float g = p->g[i];
        const float m = DG_FAULT(DG_FAULT_ADAMW_M, p->beta1 * p->m[i] + (1.0f - p->beta1) * g);
        const float v = DG_FAULT(DG_FAULT_ADAMW_V, p->beta2 * p->v[i] + (1.0f - p->beta2) * g * g);
        float w = p->w[i] - step_size * (m / (sqrtf(v) + p->epsilon));
        if (p->weight_decay > 0.0f)
            w -= lr * p->weight_decay * w;
        p->m[i] = m;
        p->v[i] = v;
        p->w_out[i] = DG_FAULT(DG_FAULT_ADAMW_W, w);
    }
    pi_cl_team_barrier();
    if (pi_core_id() == 0 && !p->hold_step)
        p->step[0] = t;
}
