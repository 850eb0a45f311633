/* GroupNormalization, InstanceNormalization, RMSNormalization. Statistics
 * per (sample, group) / per row, each owned by one core and summed in
 * order: two-pass mean, then biased variance. */
#include "dg_internal.h"

static void group_norm(const dg_groupnorm_args_t *p, uint32_t groups, int per_group, int fault)
{
    const uint32_t cpg = p->channels / groups, len = cpg * p->spatial;
    dg_range_t r = dg_split(p->batch * groups);
    uint32_t ng, c, i;
    (void)fault;
    DG_CHECK(groups > 0 && p->channels % groups == 0, "GroupNormalization: channels % groups != 0");
    for (ng = r.start; ng < r.end; ng++) {
        const uint32_t g = ng % groups, base = ng * len;
        const float *x = p->x + base;
        float *y = p->y + base;
        float sum = 0.0f, sq = 0.0f, mean, inv;
        for (i = 0; i < len; i++)
            sum += x[i];
        mean = sum / (float)len;
        for (i = 0; i < len; i++) {
            const float dv = x[i] - mean;
            sq += dv * dv;
        }
        inv = 1.0f / sqrtf(sq / (float)len + p->epsilon);
        for (c = 0; c < cpg; c++) {
            const uint32_t ch = per_group ? g : g * cpg + c;
            const float sc = p->scale[ch] * inv, b = p->bias[ch];
            const float *xc = x + c * p->spatial;
            float *yc = y + c * p->spatial;
            for (i = 0; i < p->spatial; i++)
                yc[i] = DG_FAULT(fault, (xc[i] - mean) * sc + b);
        }
    }
}

void dg_groupnorm_f32(void *args)
{
    const dg_groupnorm_args_t *p = (const dg_groupnorm_args_t *)args;
    group_norm(p, p->groups, p->scale_per_group != 0, DG_FAULT_GROUPNORM);
}

void dg_instancenorm_f32(void *args)
{
    const dg_groupnorm_args_t *p = (const dg_groupnorm_args_t *)args;
    group_norm(p, p->channels, 0, DG_FAULT_INSTANCENORM);
}

void dg_rmsnorm_f32(void *args)
{
    const dg_layernorm_args_t *p = (const dg_layernorm_args_t *)args;
    dg_range_t r = dg_split(p->rows);
    uint32_t row, i;
    for (row = r.start; row < r.end; row++) {
        const float *x = p->x + row * p->cols;
        float *y = p->y + row * p->cols;
        float sq = 0.0f, inv;
        for (i = 0; i < p->cols; i++)
            sq += x[i] * x[i];
        inv = 1.0f / sqrtf(sq / (float)p->cols + p->epsilon);
        if (p->bias) {
            for (i = 0; i < p->cols; i++)
                y[i] = DG_FAULT(DG_FAULT_RMSNORM_Y, x[i] * inv * p->scale[i] + p->bias[i]);
        } else {
            for (i = 0; i < p->cols; i++)
                y[i] = DG_FAULT(DG_FAULT_RMSNORM_Y, x[i] * inv * p->scale[i]);
        }
        if (p->inv_std)
            p->inv_std[row] = DG_FAULT(DG_FAULT_RMSNORM_INVSTD, inv);
    }
}
