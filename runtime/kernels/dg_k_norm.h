/* Normalization: batch and layer normalization with their gradients
 * (norm.c), group, instance and RMS normalization (norm2.c). Included by
 * dg_kernels.h, which states the calling convention. */
#ifndef DG_K_NORM_H
#define DG_K_NORM_H

#include "dg_kernels.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * Normalization
 * ====================================================================== */

/* BatchNormalization over [batch, channels, spatial].
 * dg_batchnorm_f32 (inference): y = scale (x - mean) / sqrt(var + eps) + bias
 *   with mean / var the running statistics.
 * dg_batchnorm_train_f32 (com.microsoft BatchNormInternal, training_mode=1):
 *   batch statistics with the biased variance; outputs (each may be NULL
 *   except y): running_mean_out = momentum * mean + (1 - momentum) * batch_mean,
 *   running_var_out = momentum * var + (1 - momentum) * batch_var (biased, as
 *   onnxruntime 1.19), saved_mean, saved_inv_std = 1 / sqrt(batch_var + eps).
 *   running_*_out may alias mean / var.
 * dg_batchnorm_saved_f32: y = scale (x - mean) * var + bias, with mean / var
 *   a training node's saved_mean / saved_inv_std (a recomputed output 0,
 *   equal to the training kernel's). */
typedef struct {
    const float *x;
    const float *scale;
    const float *bias;
    const float *mean;
    const float *var;
    float *y;
    float *running_mean_out; /* optional: NULL in inference */
    float *running_var_out; /* optional: NULL in inference */
    float *saved_mean; /* optional: NULL in inference */
    float *saved_inv_std; /* optional: NULL in inference */
    uint32_t batch, channels, spatial;
    float epsilon, momentum;
} dg_batchnorm_args_t;
void dg_batchnorm_f32(void *args);
void dg_batchnorm_saved_f32(void *args);
void dg_batchnorm_train_f32(void *args);

/* BatchNormalizationGrad(dY, X, scale, saved_mean, saved_inv_std)
 *   -> dx, dscale, dbias (dscale / dbias may be NULL). */
typedef struct {
    const float *dy;
    const float *x;
    const float *scale;
    const float *saved_mean;
    const float *saved_inv_std;
    float *dx;
    float *dscale;
    float *dbias;
    uint32_t batch, channels, spatial;
} dg_batchnorm_grad_args_t;
void dg_batchnorm_grad_f32(void *args);

/* LayerNormalization over rows x cols (cols = product of the dims from
 * `axis` on). scale (and bias, may be NULL) have cols elements. mean and
 * inv_std (rows elements each) may be NULL. Variance is biased. */
typedef struct {
    const float *x;
    const float *scale;
    const float *bias;
    float *y;
    float *mean;
    float *inv_std;
    uint32_t rows, cols;
    float epsilon;
} dg_layernorm_args_t;
void dg_layernorm_f32(void *args);

/* LayerNormalizationGrad -> dx, dscale, dbias (dscale / dbias may be NULL).
 * onnxruntime form: (dY, X, scale, mean, inv_std). When mean / inv_std are
 * NULL (the form (dY, X, scale, bias) with attribute epsilon) they are
 * recomputed from x into `scratch`, which must hold 2 * rows floats. */
typedef struct {
    const float *dy;
    const float *x;
    const float *scale;
    const float *mean;
    const float *inv_std;
    float *dx;
    float *dscale;
    float *dbias;
    float *scratch;
    uint32_t rows, cols;
    float epsilon;
} dg_layernorm_grad_args_t;
void dg_layernorm_grad_f32(void *args);

/* ---- group / instance / RMS normalization ---------------------------------
 * GroupNormalization: x is [batch, channels, spatial]; channels split into
 * `groups` groups of channels / groups; mean and biased variance over each
 * (sample, group); y = (x - mean) / sqrt(var + epsilon) * scale + bias with
 * scale / bias per channel (opset 21), or per group when scale_per_group
 * (opset 18's form, deprecated by ONNX). One core per (sample, group).
 * InstanceNormalization (dg_instancenorm_f32): the same struct, groups is
 * ignored (one group per channel), scale / bias per channel. */
typedef struct {
    const float *x;
    const float *scale;
    const float *bias;
    float *y;
    uint32_t batch, channels, spatial;
    uint32_t groups;
    uint32_t scale_per_group;
    float epsilon;
} dg_groupnorm_args_t;
void dg_groupnorm_f32(void *args);
void dg_instancenorm_f32(void *args);

/* RMSNormalization (opset 23; also the default-domain `RMSNorm` and
 * com.microsoft SimplifiedLayerNormalization): dg_layernorm_args_t over rows
 * x cols (cols = product of the dims from `axis` on):
 * y = x / sqrt(mean(x^2) + epsilon) * scale (+ bias when bias != NULL).
 * `mean` is unused; inv_std (rows elements, may be NULL) receives
 * 1 / sqrt(mean(x^2) + epsilon). */
void dg_rmsnorm_f32(void *args);

#ifdef __cplusplus
}
#endif

#endif /* DG_K_NORM_H */
