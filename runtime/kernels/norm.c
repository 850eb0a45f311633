/* BatchNormalization (inference, training, gradient) and
 * LayerNormalization (forward, gradient). Statistics are per channel / per
 * row, each owned by one core and summed in order (two-pass mean, then
 * biased variance). */
#include "dg_internal.h"

void dg_batchnorm_f32(void *args)
{
    const dg_batchnorm_args_t *p = (const dg_batchnorm_args_t *)args;
    dg_range_t r = dg_split(p->channels);
    uint32_t c, n, i;
    for (c = r.start; c < r.end; c++) {
        const float inv = 1.0f / sqrtf(p->var[c] + p->epsilon);
        const float sc = p->scale[c] * inv, mu = p->mean[c], b = p->bias[c];
        for (n = 0; n < p->batch; n++) {
            const uint32_t base = ((uint32_t)n * p->channels + c) * p->spatial;
            for (i = 0; i < p->spatial; i++)
                p->y[base + i] = DG_FAULT(DG_FAULT_BN, (p->x[base + i] - mu) * sc + b);
        }
    }
}

void dg_batchnorm_saved_f32(void *args)
{
    const dg_batchnorm_args_t *p = (const dg_batchnorm_args_t *)args;
    dg_range_t r = dg_split(p->channels);
    uint32_t c, n, i;
    for (c = r.start; c < r.end; c++) {
        const float sc = p->scale[c] * p->var[c], mu = p->mean[c], b = p->bias[c];
        for (n = 0; n < p->batch; n++) {
            const uint32_t base = ((uint32_t)n * p->channels + c) * p->spatial;
            for (i = 0; i < p->spatial; i++)
                p->y[base + i] = DG_FAULT(DG_FAULT_BN, (p->x[base + i] - mu) * sc + b);
        }
    }
}

void dg_batchnorm_train_f32(void *args)
{
    const dg_batchnorm_args_t *p = (const dg_batchnorm_args_t *)args;
    const float count = (float)p->batch * (float)p->spatial;
    dg_range_t r = dg_split(p->channels);
    uint32_t c, n, i;
    for (c = r.start; c < r.end; c++) {
        float sum = 0.0f, sq = 0.0f, mean, var, inv, sc, b;
        for (n = 0; n < p->batch; n++) {
            const float *xp = p->x + ((uint32_t)n * p->channels + c) * p->spatial;
            for (i = 0; i < p->spatial; i++)
                sum += xp[i];
        }
        mean = sum / count;
        for (n = 0; n < p->batch; n++) {
            const float *xp = p->x + ((uint32_t)n * p->channels + c) * p->spatial;
            for (i = 0; i < p->spatial; i++) {
                const float d = xp[i] - mean;
                sq += d * d;
            }
        }
        var = sq / count;
        inv = 1.0f / sqrtf(var + p->epsilon);
        sc = p->scale[c] * inv;
        b = p->bias[c];
        for (n = 0; n < p->batch; n++) {
            const uint32_t base = ((uint32_t)n * p->channels + c) * p->spatial;
            for (i = 0; i < p->spatial; i++)
                p->y[base + i] = DG_FAULT(DG_FAULT_BN_TRAIN_Y, (p->x[base + i] - mean) * sc + b);
        }
        if (p->running_mean_out)
            p->running_mean_out[c] = DG_FAULT(
                DG_FAULT_BN_TRAIN_RMEAN, p->momentum * p->mean[c] + (1.0f - p->momentum) * mean);
        if (p->running_var_out)
            p->running_var_out[c] = DG_FAULT(
                DG_FAULT_BN_TRAIN_RVAR, p->momentum * p->var[c] + (1.0f - p->momentum) * var);
        if (p->saved_mean)
            p->saved_mean[c] = DG_FAULT(DG_FAULT_BN_TRAIN_SMEAN, mean);
        if (p->saved_inv_std)
            p->saved_inv_std[c] = DG_FAULT(DG_FAULT_BN_TRAIN_SINVSTD, inv);
    }
}

void dg_batchnorm_grad_f32(void *args)
{
    const dg_batchnorm_grad_args_t *p = (const dg_batchnorm_grad_args_t *)args;
    const float count = (float)p->batch * (float)p->spatial;
    dg_range_t r = dg_split(p->channels);
    uint32_t c, n, i;
    for (c = r.start; c < r.end; c++) {
        const float mean = p->saved_mean[c], inv = p->saved_inv_std[c];
        float dbias = 0.0f, dscale = 0.0f, k;
        for (n = 0; n < p->batch; n++) {
            const uint32_t base = ((uint32_t)n * p->channels + c) * p->spatial;
            for (i = 0; i < p->spatial; i++) {
                dbias += p->dy[base + i];
                dscale += p->dy[base + i] * (p->x[base + i] - mean) * inv;
            }
        }
        k = p->scale[c] * inv;
        /* dx is NULL where nothing before the node trains. */
        for (n = 0; p->dx && n < p->batch; n++) {
            const uint32_t base = ((uint32_t)n * p->channels + c) * p->spatial;
            for (i = 0; i < p->spatial; i++) {
                const float xhat = (p->x[base + i] - mean) * inv;
                p->dx[base + i] = DG_FAULT(
                    DG_FAULT_BN_GRAD_DX,
                    k * (p->dy[base + i] - dbias / count - xhat * dscale / count));
            }
        }
        if (p->dscale)
            p->dscale[c] = DG_FAULT(DG_FAULT_BN_GRAD_DSCALE, dscale);
        if (p->dbias)
            p->dbias[c] = DG_FAULT(DG_FAULT_BN_GRAD_DBIAS, dbias);
    }
}

static void row_stats(const float *x, uint32_t cols, float eps, float *mean, float *inv)
{
    float sum = 0.0f, sq = 0.0f, mu;
    uint32_t j;
    for (j = 0; j < cols; j++)
        sum += x[j];
    mu = sum / (float)cols;
    for (j = 0; j < cols; j++) {
        const float d = x[j] - mu;
        sq += d * d;
    }
    *mean = mu;
    *inv = 1.0f / sqrtf(sq / (float)cols + eps);
}

void dg_layernorm_f32(void *args)
{
    const dg_layernorm_args_t *p = (const dg_layernorm_args_t *)args;
    dg_range_t r = dg_split(p->rows);
    uint32_t i, j;
    for (i = r.start; i < r.end; i++) {
        const float *xr = p->x + (uint32_t)i * p->cols;
        float *yr = p->y + (uint32_t)i * p->cols;
        float mean, inv;
        row_stats(xr, p->cols, p->epsilon, &mean, &inv);
        for (j = 0; j < p->cols; j++) {
            float v = (xr[j] - mean) * inv * p->scale[j];
            if (p->bias)
                v += p->bias[j];
            yr[j] = DG_FAULT(DG_FAULT_LN_Y, v);
        }
        if (p->mean)
            p->mean[i] = DG_FAULT(DG_FAULT_LN_MEAN, mean);
        if (p->inv_std)
            p->inv_std[i] = DG_FAULT(DG_FAULT_LN_INVSTD, inv);
    }
}

void dg_layernorm_grad_f32(void *args)
{
    const dg_layernorm_grad_args_t *p = (const dg_layernorm_grad_args_t *)args;
    const float *mean = p->mean, *inv = p->inv_std;
    dg_range_t r = dg_split(p->rows);
    uint32_t i, j;
    if (mean == NULL || inv == NULL) {
        /* (dY, X, scale, bias) form: recompute the row statistics. */
        for (i = r.start; i < r.end; i++)
            row_stats(p->x + (uint32_t)i * p->cols, p->cols, p->epsilon, &p->scratch[i],
                      &p->scratch[p->rows + i]);
        pi_cl_team_barrier();
        mean = p->scratch;
        inv = p->scratch + p->rows;
    }
    /* dx, by rows */
    for (i = r.start; i < r.end; i++) {
        const float *xr = p->x + (uint32_t)i * p->cols, *dyr = p->dy + (uint32_t)i * p->cols;
        float *dxr = p->dx + (uint32_t)i * p->cols;
        const float mu = mean[i], iv = inv[i];
        float s1 = 0.0f, s2 = 0.0f, m1, m2;
        for (j = 0; j < p->cols; j++) {
            const float g = dyr[j] * p->scale[j];
            s1 += g;
            s2 += g * (xr[j] - mu) * iv;
        }
        m1 = s1 / (float)p->cols;
        m2 = s2 / (float)p->cols;
        for (j = 0; j < p->cols; j++) {
            const float g = dyr[j] * p->scale[j];
            const float xhat = (xr[j] - mu) * iv;
            dxr[j] = DG_FAULT(DG_FAULT_LN_GRAD_DX, iv * (g - m1 - xhat * m2));
        }
    }
    /* dscale / dbias, by columns, summed over rows in order */
    if (p->dscale || p->dbias) {
        dg_range_t rc = dg_split(p->cols);
        for (j = rc.start; j < rc.end; j++) {
            float ds = 0.0f, db = 0.0f;
            for (i = 0; i < p->rows; i++) {
                const float dyv = p->dy[(uint32_t)i * p->cols + j];
                db += dyv;
                ds += dyv * (p->x[(uint32_t)i * p->cols + j] - mean[i]) * inv[i];
            }
            if (p->dscale)
                p->dscale[j] = DG_FAULT(DG_FAULT_LN_GRAD_DSCALE, ds);
            if (p->dbias)
                p->dbias[j] = DG_FAULT(DG_FAULT_LN_GRAD_DBIAS, db);
        }
    }
}
