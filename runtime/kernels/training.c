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
    for (i = r.start; i < r.end; i++)
        p->w_out[i] = DG_FAULT(DG_FAULT_SGD, p->w[i] - lr * p->g[i]);
}
