/* Softmax, LogSoftmax and SoftmaxGrad over one axis of an [outer, dim, inner] view;
 * the outer * inner rows are split across cores. */
#include "dg_internal.h"

/* Softmax (as_log 0) or LogSoftmax (as_log 1) of this core's rows. */
static void softmax_rows(const dg_softmax_args_t *p, int as_log)
{
    dg_range_t r = dg_split(p->outer * p->inner);
    uint32_t row, j;
    for (row = r.start; row < r.end; row++) {
        const uint32_t base = dg_axis_row(row, p->dim, p->inner);
        const float *x = p->x + base;
        float *y = p->y + base;
        const float mx = dg_row_max(x, p->dim, p->inner);
        float sum = 0.0f, inv;
        if (as_log) {
            const float lse = mx + dg_row_log_sum_exp(x, p->dim, p->inner, mx);
            for (j = 0; j < p->dim; j++)
                y[j * p->inner] = DG_FAULT(DG_FAULT_LOG_SOFTMAX, x[j * p->inner] - lse);
            continue;
        }
        for (j = 0; j < p->dim; j++) {
            const float e = dg_expf(x[j * p->inner] - mx);
            y[j * p->inner] = e;
            sum += e;
        }
        /* One division a row: on GVSoC Siracusa, with 8 cores dividing, a
         * division per element cost Softmax ~90 cycles per element a core. */
        inv = 1.0f / sum;
        for (j = 0; j < p->dim; j++)
            y[j * p->inner] = DG_FAULT(DG_FAULT_SOFTMAX, y[j * p->inner] * inv);
    }
}

void dg_softmax_f32(void *args)
{
    softmax_rows((const dg_softmax_args_t *)args, 0);
}

void dg_log_softmax_f32(void *args)
{
    softmax_rows((const dg_softmax_args_t *)args, 1);
}

void dg_softmax_grad_f32(void *args)
{
    const dg_softmax_grad_args_t *p = (const dg_softmax_grad_args_t *)args;
    dg_range_t r = dg_split(p->outer * p->inner);
    uint32_t row, j;
    for (row = r.start; row < r.end; row++) {
        const uint32_t base = dg_axis_row(row, p->dim, p->inner);
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
