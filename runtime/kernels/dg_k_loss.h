/* Losses and their gradients (loss.c). Included by dg_kernels.h, which
 * states the calling convention. */
#ifndef DG_K_LOSS_H
#define DG_K_LOSS_H

#include "dg_kernels.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * Losses
 * ====================================================================== */
enum { DG_REDUCTION_MEAN = 0, DG_REDUCTION_SUM = 1, DG_REDUCTION_NONE = 2 };

/* SoftmaxCrossEntropyLoss: scores [batch, classes, inner], labels
 * [batch, inner] (int64, or int32 when labels_i32). log_prob (required, the
 * size of scores) receives log_softmax over classes; loss (may be NULL) the
 * mean (over samples whose label != ignore_index, when has_ignore) or sum of
 * -log_prob[label]. A label outside [0, classes) that is not ignored is an
 * error (aborts on the host emulation). With class weights (weights not
 * NULL) each sample's term is weights[label] * -log_prob[label] and the mean
 * divides by the sum of the counted samples' weights. DG_REDUCTION_NONE
 * writes each sample's term into loss[batch, inner] (0 when ignored).
 * Barrier: log_prob, then core 0 sums the loss in sample order. */
typedef struct {
    const float *scores;
    const void *labels;
    uint32_t labels_i32;
    float *log_prob;
    float *loss;
    uint32_t batch, classes, inner;
    int64_t ignore_index;
    uint32_t has_ignore;
    uint32_t reduction;
    const float *weights; /* optional: NULL (unset) is no class weights */
} dg_sce_args_t;
void dg_sce_loss_f32(void *args);

/* SoftmaxCrossEntropyLossGrad(dY, log_prob, labels):
 * dx = (exp(log_prob) - onehot(label)) * dY[0] (/ number of non-ignored
 * samples for mean); ignored samples get 0. dy may be NULL (dY = 1, the
 * two-input form). */
typedef struct {
    const float *dy;
    const float *log_prob;
    const void *labels;
    uint32_t labels_i32;
    float *dx;
    uint32_t batch, classes, inner;
    int64_t ignore_index;
    uint32_t has_ignore;
    uint32_t reduction;
} dg_sce_grad_args_t;
void dg_sce_loss_grad_f32(void *args);

/* MSELoss (mean of squared differences) -> loss[0]; deterministic: the n
 * elements are cut into DG_MSE_BLOCKS fixed blocks, each summed in order by
 * one core into scratch, then core 0 adds the blocks in order. */
#define DG_MSE_BLOCKS 8
typedef struct {
    const float *x;
    const float *target;
    float *loss;
    uint32_t n;
    float scratch[DG_MSE_BLOCKS]; /* optional: the kernel's own */
} dg_mse_args_t;
void dg_mse_loss_f32(void *args);

/* MSELossGrad: dx = 2 (x - target) / n * dY[0] (dy may be NULL: dY = 1). */
typedef struct {
    const float *dy;
    const float *x;
    const float *target;
    float *dx;
    uint32_t n;
} dg_mse_grad_args_t;
void dg_mse_loss_grad_f32(void *args);

#ifdef __cplusplus
}
#endif

#endif /* DG_K_LOSS_H */
