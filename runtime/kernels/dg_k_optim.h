/* Training: gradient accumulation and the optimizers (training.c).
 * Included by dg_kernels.h, which states the calling convention. */
#ifndef DG_K_OPTIM_H
#define DG_K_OPTIM_H

#include "dg_kernels.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * Training
 * ====================================================================== */

/* InPlaceAccumulatorV2(buffer, grad, lazy_reset): buffer = grad when
 * *lazy_reset != 0, else buffer += grad, in place. lazy_reset may be NULL
 * (accumulate). out (may be NULL or alias buffer) also receives the result;
 * updated (may be NULL) is set to 1. */
typedef struct {
    float *buffer;
    const float *grad;
    const uint8_t *lazy_reset;
    float *out;
    uint8_t *updated;
    uint32_t n;
} dg_accumulate_args_t;
void dg_inplace_accumulate_f32(void *args);

/* SGD: w_out = w - lr * g (w_out may alias w). lr_ptr, when not NULL,
 * overrides lr: the rate as a tensor, or the network's run-time rate (the
 * one dg_model_set_learning_rate sets), read once per call. */
typedef struct {
    const float *w;
    const float *g;
    float *w_out;
    uint32_t n;
    float lr;
    const float *lr_ptr;
} dg_sgd_args_t;
void dg_sgd_f32(void *args);

/* SGD with momentum (PyTorch's, dampening 0): g' = g + weight_decay * w;
 * velocity = momentum * velocity + g' (in place, starts at 0);
 * w_out = w - lr * velocity (w_out may alias w). lr_ptr, when not NULL,
 * overrides lr (the network's run-time rate). */
typedef struct {
    const float *w;
    const float *g;
    float *velocity;
    float *w_out;
    uint32_t n;
    float lr;
    const float *lr_ptr;
    float momentum;
    float weight_decay;
} dg_momentum_sgd_args_t;
void dg_momentum_sgd_f32(void *args);

/* AdamW as onnxruntime's AdamWOptimizer (adam_mode 1, correct_bias 1):
 * t = ++*step (in place, starts at 0); m = beta1 m + (1 - beta1) g;
 * v = beta2 v + (1 - beta2) g^2 (m, v in place, start at 0);
 * w -= lr sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + epsilon);
 * then w -= lr * weight_decay * w. w_out may alias w. lr_ptr, when not
 * NULL, overrides lr (the network's run-time rate).
 * hold_step (added field; 0 = advance): a call on one tile of the weight
 * other than the last computes with t = *step + 1 but leaves *step for the
 * last tile's call to advance, so every tile uses the same t. */
typedef struct {
    const float *w;
    const float *g;
    float *m;
    float *v;
    int64_t *step;
    float *w_out;
    uint32_t n;
    float lr;
    const float *lr_ptr;
    float beta1;
    float beta2;
    float epsilon;
    float weight_decay;
    uint32_t hold_step;
} dg_adamw_args_t;
void dg_adamw_f32(void *args);

#ifdef __cplusplus
}
#endif

#endif /* DG_K_OPTIM_H */
