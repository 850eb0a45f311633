/* Softmax, LogSoftmax and SoftmaxGrad over one axis of an [outer, dim, inner] view;
 * the outer * inner rows are split across cores. */
#include "dg_internal.h"

void dg_softmax_f32(void *args)
{
    const dg_softmax_args_t *p = (const dg_softmax_args_t *)args;
    dg_range_t r = dg_split(p->outer * p->inner);
    uint32_t row, j;
    for (row = r.start; row < r.end; row++) {
        const uint32_t base = (uint32_t)(row / p->inner) * p->dim * p->inner + row % p->inner;
        const float *x = p->x + base;
        float *y = p->y + base;
        float mx = x[0], sum = 0.0f, inv;
        for (j = 1; j < p->dim; j++)
            if (x[(uint32_t)j * p->inner] > mx)
                mx = x[(uint32_t)j * p->inner];
        for (j = 0; j < p->dim; j++) {
            const float e = dg_expf(x[(uint32_t)j * p->inner] - mx);
            y[(uint32_t)j * p->inner] = e;
            sum += e;
        }
        /* One division a row: on GVSoC Siracusa, with 8 cores dividing, a
         * division per element cost Softmax ~90 cycles per element a core. */
        inv = 1.0f / sum;
        for (j = 0; j < p->dim; j++)
            y[(uint32_t)j * p->inner] = DG_FAULT(DG_FAULT_SOFTMAX, y[(uint32_t)j * p->inner] * inv);
    }
}

void dg_log_softmax_f32(void *args)
{
    const dg_softmax_args_t *p = (const dg_softmax_args_t *)args;
    dg_range_t r = dg_split(p->outer * p->inner);
    uint32_t row, j;
    for (row = r.start; row < r.end; row++) {
        const uint32_t base = (uint32_t)(row / p->inner) * p->dim * p->inner + row % p->inner;
        const float *x = p->x + base;
        float *y = p->y + base;
        float mx = x[0], sum = 0.0f, lse;
        for (j = 1; j < p->dim; j++)
            if (x[(uint32_t)j * p->inner] > mx)
                mx = x[(uint32_t)j * p->inner];
        for (j = 0; j < p->dim; j++)
            sum += expf(x[(uint32_t)j * p->inner] - mx);
        lse = mx + logf(sum);
        for (j = 0; j < p->dim; j++)
            y[(uint32_t)j * p->inner] = DG_FAULT(DG_FAULT_LOG_SOFTMAX, x[(uint32_t)j * p->inner] - lse);
    }
}

void dg_softmax_grad_f32(void *args)
{
    const dg_softmax_grad_args_t *p = (const dg_softmax_grad_args_t *)args;
    dg_range_t r = dg_split(p->outer * p->inner);
    uint32_t row, j;
    for (row = r.start; row < r.end; row++) {
        const uint32_t base = (uint32_t)(row / p->inner) * p->dim * p->inner + row % p->inner;
        const float *dy = p->dy + base, *y = p->y + base;
        float *dx = p->dx + base;
        float dot = 0.0f;
        for (j = 0; j < p->dim; j++)
            dot += dy[(uint32_t)j * p->inner] * y[(uint32_t)j * p->inner];
        for (j = 0; j < p->dim; j++) {
            const uint32_t o = (uint32_t)j * p->inner;
            dx[o] = DG_FAULT(DG_FAULT_SOFTMAX_GRAD, y[o] * (dy[o] - dot));
        }
    }
}
