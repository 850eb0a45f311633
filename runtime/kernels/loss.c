/* Losses: SoftmaxCrossEntropyLoss (+Grad), MSELoss (+Grad). Scalar
 * reductions are deterministic: per-sample work is split across cores,
 * the final sum is done in a fixed order after a barrier. */
#include "dg_internal.h"

static int64_t label_at(const void *labels, uint32_t is_i32, uint32_t i)
{
    return is_i32 ? (int64_t)((const int32_t *)labels)[i] : ((const int64_t *)labels)[i];
}

void dg_sce_loss_f32(void *args)
{
    const dg_sce_args_t *p = (const dg_sce_args_t *)args;
    const uint32_t samples = p->batch * p->inner;
    dg_range_t r = dg_split(samples);
    uint32_t s, j;
    /* phase 1: log_softmax over classes, per sample */
    for (s = r.start; s < r.end; s++) {
        const uint32_t base = dg_axis_row(s, p->classes, p->inner);
        const float *x = p->scores + base;
        float *lp = p->log_prob + base;
        const float mx = dg_row_max(x, p->classes, p->inner);
        const float lse = dg_row_log_sum_exp(x, p->classes, p->inner, mx);
        for (j = 0; j < p->classes; j++)
            lp[(uint32_t)j * p->inner] =
                DG_FAULT(DG_FAULT_SCE_LOGPROB, x[(uint32_t)j * p->inner] - mx - lse);
    }
    if (p->loss == NULL)
        return;
    pi_cl_team_barrier();
    /* phase 2: the first core of the team sums -log_prob[label] in order */
    if (pi_core_id() == 0) {
        float acc = 0.0f, count = 0.0f;
        for (s = 0; s < samples; s++) {
            const int64_t l = label_at(p->labels, p->labels_i32, s);
            const uint32_t base = dg_axis_row(s, p->classes, p->inner);
            float w, term;
            if (p->reduction == DG_REDUCTION_NONE)
                p->loss[s] = 0.0f;
            if (p->has_ignore && l == p->ignore_index)
                continue;
            DG_CHECK(l >= 0 && l < (int64_t)p->classes,
                     "SoftmaxCrossEntropyLoss: label out of range");
            if (l < 0 || l >= (int64_t)p->classes)
                continue;
            w = p->weights ? p->weights[l] : 1.0f;
            term = -p->log_prob[base + (uint32_t)l * p->inner] * w;
            if (p->reduction == DG_REDUCTION_NONE)
                p->loss[s] = DG_FAULT(DG_FAULT_SCE_LOSS, term);
            acc += term;
            count += w;
        }
        if (p->reduction == DG_REDUCTION_MEAN)
            acc = count != 0.0f ? acc / count : 0.0f;
        if (p->reduction != DG_REDUCTION_NONE)
            p->loss[0] = DG_FAULT(DG_FAULT_SCE_LOSS, acc);
    }
}

void dg_sce_loss_grad_f32(void *args)
{
    const dg_sce_grad_args_t *p = (const dg_sce_grad_args_t *)args;
    const uint32_t samples = p->batch * p->inner;
    const float dyv = p->dy ? p->dy[0] : 1.0f;
    float scale = dyv;
    dg_range_t r = dg_split(samples);
    uint32_t s, j;
    if (p->reduction == DG_REDUCTION_MEAN) {
        /* every core counts the non-ignored samples itself: no barrier */
        uint32_t count = 0;
        for (s = 0; s < samples; s++)
            if (!(p->has_ignore && label_at(p->labels, p->labels_i32, s) == p->ignore_index))
                count++;
        scale = count ? dyv / (float)count : 0.0f;
    }
    for (s = r.start; s < r.end; s++) {
        const int64_t l = label_at(p->labels, p->labels_i32, s);
        const uint32_t base = dg_axis_row(s, p->classes, p->inner);
        const int ignored = p->has_ignore && l == p->ignore_index;
        DG_CHECK(ignored || (l >= 0 && l < (int64_t)p->classes),
                 "SoftmaxCrossEntropyLossGrad: label out of range");
        for (j = 0; j < p->classes; j++) {
            const uint32_t o = base + (uint32_t)j * p->inner;
            float g = 0.0f;
            if (!ignored)
                g = (dg_expf(p->log_prob[o]) - ((int64_t)j == l ? 1.0f : 0.0f)) * scale;
            p->dx[o] = DG_FAULT(DG_FAULT_SCE_GRAD, g);
        }
    }
}

void dg_mse_loss_f32(void *args)
{
    dg_mse_args_t *p = (dg_mse_args_t *)args;
    const uint32_t blk = (p->n + DG_MSE_BLOCKS - 1) / DG_MSE_BLOCKS;
    dg_range_t r = dg_split(DG_MSE_BLOCKS);
    uint32_t b, i;
    for (b = r.start; b < r.end; b++) {
        const uint32_t s = b * blk < p->n ? b * blk : p->n;
        const uint32_t e = s + blk < p->n ? s + blk : p->n;
        float acc = 0.0f;
        for (i = s; i < e; i++) {
            const float d = p->x[i] - p->target[i];
            acc += d * d;
        }
        p->scratch[b] = acc;
    }
    pi_cl_team_barrier();
    if (pi_core_id() == 0) {
        float acc = 0.0f;
        for (b = 0; b < DG_MSE_BLOCKS; b++)
            acc += p->scratch[b];
        p->loss[0] = DG_FAULT(DG_FAULT_MSE, acc / (float)p->n);
    }
}

void dg_mse_loss_grad_f32(void *args)
{
    const dg_mse_grad_args_t *p = (const dg_mse_grad_args_t *)args;
    const float k = 2.0f * (p->dy ? p->dy[0] : 1.0f) / (float)p->n;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++)
        p->dx[i] = DG_FAULT(DG_FAULT_MSE_GRAD, (p->x[i] - p->target[i]) * k);
}
