/*
 * deploygen fp32 kernels (forward, backward, optimizer), plain C99.
 *
 * Calling convention (the same for every kernel):
 *
 *     dg_conv_args_t a = { ... };            // pointers + shape parameters
 *     pi_cl_team_fork(NUM_CORES, dg_conv_f32, &a);
 *
 * Every kernel is `void dg_<op>(void *args)` and runs on all cores of the
 * team: it splits its outermost independent loop into contiguous chunks by
 * pi_core_id() / pi_cl_team_nb_cores() and calls pi_cl_team_barrier() where
 * a later phase reads what other cores wrote. Each output element is computed
 * by exactly one core, in a fixed order, so results do not depend on the
 * number of cores (bit-identical for 1..8 cores). Kernels must be called
 * inside a fork; with one core they are the single-core path of the `host`
 * platform. The args struct must stay alive (and, for kernels with a
 * `scratch` member, be writable) until the fork returns.
 *
 * Layouts: row-major, NCHW for convolution / pooling / batch norm. 1-D
 * convolutions and pools are the 2-D ones with in_h = k_h = out_h = 1.
 * Outputs may not alias inputs unless the kernel says so.
 */
#ifndef DG_KERNELS_H
#define DG_KERNELS_H

#include "pmsis.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DG_MAX_DIMS 6

/* ---- work splitting --------------------------------------------------- */
typedef struct {
    uint32_t start, end;
} dg_range_t;

/* Contiguous chunk [start, end) of n items for the calling core. */
dg_range_t dg_split(uint32_t n);

/* ---- fault injection (tests only) --------------------------------------
 * Compiled with -DDG_FAULT_INJECTION, DG_FAULT(id, v) perturbs the stored
 * value v while the global dg_fault_id equals id; the kernel tests use it to
 * show that every check can fail. Without the define it is just v. */
enum dg_fault_id {
    DG_FAULT_NONE = 0,
    DG_FAULT_ADD, DG_FAULT_SUB, DG_FAULT_MUL, DG_FAULT_DIV, DG_FAULT_POW,
    DG_FAULT_RELU, DG_FAULT_GELU, DG_FAULT_SCALE, DG_FAULT_SUM,
    DG_FAULT_RELU_GRAD, DG_FAULT_GELU_GRAD,
    DG_FAULT_GEMM, DG_FAULT_MATMUL, DG_FAULT_FUSED_MATMUL,
    DG_FAULT_CONV, DG_FAULT_CONV_GRAD_DX, DG_FAULT_CONV_GRAD_DW, DG_FAULT_CONV_GRAD_DB,
    DG_FAULT_MAXPOOL_Y, DG_FAULT_MAXPOOL_IDX, DG_FAULT_MAXPOOL_GRAD,
    DG_FAULT_AVGPOOL, DG_FAULT_AVGPOOL_GRAD, DG_FAULT_GAP, DG_FAULT_GAP_GRAD,
    DG_FAULT_BN, DG_FAULT_BN_TRAIN_Y, DG_FAULT_BN_TRAIN_RMEAN, DG_FAULT_BN_TRAIN_RVAR,
    DG_FAULT_BN_TRAIN_SMEAN, DG_FAULT_BN_TRAIN_SINVSTD,
    DG_FAULT_BN_GRAD_DX, DG_FAULT_BN_GRAD_DSCALE, DG_FAULT_BN_GRAD_DBIAS,
    DG_FAULT_LN_Y, DG_FAULT_LN_MEAN, DG_FAULT_LN_INVSTD,
    DG_FAULT_LN_GRAD_DX, DG_FAULT_LN_GRAD_DSCALE, DG_FAULT_LN_GRAD_DBIAS,
    DG_FAULT_SOFTMAX, DG_FAULT_SOFTMAX_GRAD,
    DG_FAULT_SCE_LOSS, DG_FAULT_SCE_LOGPROB, DG_FAULT_SCE_GRAD,
    DG_FAULT_MSE, DG_FAULT_MSE_GRAD,
    DG_FAULT_REDUCE_SUM, DG_FAULT_REDUCE_MEAN,
    DG_FAULT_COPY, DG_FAULT_STRIDED_COPY, DG_FAULT_CONCAT,
    DG_FAULT_ACCUMULATE, DG_FAULT_SGD,
    DG_FAULT_COUNT
};

#ifdef DG_FAULT_INJECTION
extern volatile int dg_fault_id;
#define DG_FAULT(id, v) ((dg_fault_id == (id)) ? (v) * 1.001f + 1e-3f : (v))
#define DG_FAULT_I(id, v) ((dg_fault_id == (id)) ? (v) + 1 : (v))
#else
#define DG_FAULT(id, v) (v)
#define DG_FAULT_I(id, v) (v)
#endif

/* ======================================================================
 * Elementwise
 * ====================================================================== */

/* Add, Sub, Mul, Div, Pow with numpy broadcasting. ndim == 0: a, b and y
 * are n contiguous elements each. Otherwise `shape` is the output shape and
 * a_strides / b_strides the element strides of a and b per output dimension
 * (0 on a broadcast dimension). y may alias a or b when they are not
 * broadcast. */
typedef struct {
    const float *a;
    const float *b;
    float *y;
    uint32_t n;
    uint32_t ndim;
    uint32_t shape[DG_MAX_DIMS];
    uint32_t a_strides[DG_MAX_DIMS];
    uint32_t b_strides[DG_MAX_DIMS];
} dg_binary_args_t;
void dg_add_f32(void *args);
void dg_sub_f32(void *args);
void dg_mul_f32(void *args);
void dg_div_f32(void *args);
void dg_pow_f32(void *args);

/* Relu, Gelu (erf form: 0.5 x (1 + erf(x / sqrt 2))). y may alias x. */
typedef struct {
    const float *x;
    float *y;
    uint32_t n;
} dg_unary_args_t;
void dg_relu_f32(void *args);
void dg_gelu_f32(void *args);

/* com.microsoft Scale: y = x * scale[0], or x / scale[0] when scale_down. */
typedef struct {
    const float *x;
    const float *scale;
    float *y;
    uint32_t n;
    uint32_t scale_down;
} dg_scale_args_t;
void dg_scale_f32(void *args);

/* Sum of nin same-shaped inputs, added in input order. */
typedef struct {
    const float *const *x;
    uint32_t nin;
    float *y;
    uint32_t n;
} dg_sum_args_t;
void dg_sum_f32(void *args);

/* ReluGrad(dY, X): dx = dy * (x > 0). GeluGrad(dY, X) (erf form):
 * dx = dy * (0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi)). */
typedef struct {
    const float *dy;
    const float *x;
    float *dx;
    uint32_t n;
} dg_act_grad_args_t;
void dg_relu_grad_f32(void *args);
void dg_gelu_grad_f32(void *args);

/* ======================================================================
 * Linear algebra
 * ====================================================================== */

/* Gemm: y[m,n] = alpha * op(A) op(B) + beta * C. A is [m,k] ([k,m] when
 * trans_a), B is [k,n] ([n,k] when trans_b). C may be NULL (or beta 0);
 * it is read at c[i * c_stride_m + j * c_stride_n] (strides 0 broadcast). */
typedef struct {
    const float *a;
    const float *b;
    const float *c;
    float *y;
    uint32_t m, n, k;
    uint32_t trans_a, trans_b;
    float alpha, beta;
    uint32_t c_stride_m, c_stride_n;
} dg_gemm_args_t;
void dg_gemm_f32(void *args);

/* MatMul with batch broadcasting: y[b, m, n] = A[b, m, k] B[b, k, n] where
 * b runs over batch_shape (nbatch_dims dims, product `batch`), and A / B
 * start at sum(b_i * a_bstrides[i]) / sum(b_i * b_bstrides[i]) (element
 * strides, 0 = broadcast). 1-D operands are [1,k] / [k,1]. */
typedef struct {
    const float *a;
    const float *b;
    float *y;
    uint32_t m, n, k;
    uint32_t batch;
    uint32_t nbatch_dims;
    uint32_t batch_shape[4];
    uint32_t a_bstrides[4];
    uint32_t b_bstrides[4];
    /* FusedMatMul only (dg_matmul_f32 ignores them): A holds [b, k, m]
     * when trans_a, B holds [b, n, k] when trans_b; y = alpha * op(A) op(B). */
    uint32_t trans_a, trans_b;
    float alpha;
} dg_matmul_args_t;
void dg_matmul_f32(void *args);
/* com.microsoft FusedMatMul: MatMul with transposes and a scale, which
 * onnxruntime emits for MatMul gradients. */
void dg_fused_matmul_f32(void *args);

/* ======================================================================
 * Convolution (NCHW, weights [out_c, in_c / group, k_h, k_w])
 * One args struct for the forward and the three gradient kernels:
 *   dg_conv_f32          x, w, b (may be NULL) -> y
 *   dg_conv_grad_dx_f32  dy, w -> dx
 *   dg_conv_grad_dw_f32  dy, x -> dw
 *   dg_conv_grad_db_f32  dy -> db
 * Padding bottom/right is implied by out_h / out_w.
 * ====================================================================== */
typedef struct {
    const float *x;
    const float *w;
    const float *b;
    float *y;
    const float *dy;
    float *dx;
    float *dw;
    float *db;
    uint32_t batch, in_c, in_h, in_w;
    uint32_t out_c, out_h, out_w;
    uint32_t k_h, k_w;
    uint32_t stride_h, stride_w;
    uint32_t dil_h, dil_w;
    uint32_t pad_top, pad_left;
    uint32_t group;
} dg_conv_args_t;
void dg_conv_f32(void *args);
void dg_conv_grad_dx_f32(void *args);
void dg_conv_grad_dw_f32(void *args);
void dg_conv_grad_db_f32(void *args);

/* ======================================================================
 * Pooling (NCHW)
 *   dg_maxpool_f32            x -> y, indices (int64, may be NULL)
 *   dg_maxpool_grad_f32       dy, indices_in -> dx
 *   dg_avgpool_f32            x -> y
 *   dg_avgpool_grad_f32       dy -> dx
 *   dg_global_avgpool_f32     x -> y ([batch, channels, 1, 1])
 *   dg_global_avgpool_grad_f32 dy -> dx
 * MaxPool indices follow onnxruntime: the flat index into the whole input
 * tensor, ((n * C + c) * H + h) * W + w; ties keep the first maximum in
 * window order. AveragePool follows onnxruntime's divisor: with
 * count_include_pad the window clipped to the padded input (pads on all
 * four sides), else the window clipped to the input.
 * ====================================================================== */
typedef struct {
    const float *x;
    float *y;
    int64_t *indices;
    const float *dy;
    const int64_t *indices_in;
    float *dx;
    uint32_t batch, channels, in_h, in_w, out_h, out_w;
    uint32_t k_h, k_w, stride_h, stride_w, dil_h, dil_w;
    uint32_t pad_top, pad_left, pad_bottom, pad_right;
    uint32_t count_include_pad;
} dg_pool_args_t;
void dg_maxpool_f32(void *args);
void dg_maxpool_grad_f32(void *args);
void dg_avgpool_f32(void *args);
void dg_avgpool_grad_f32(void *args);
void dg_global_avgpool_f32(void *args);
void dg_global_avgpool_grad_f32(void *args);

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
 *   running_*_out may alias mean / var. */
typedef struct {
    const float *x;
    const float *scale;
    const float *bias;
    const float *mean;
    const float *var;
    float *y;
    float *running_mean_out;
    float *running_var_out;
    float *saved_mean;
    float *saved_inv_std;
    uint32_t batch, channels, spatial;
    float epsilon, momentum;
} dg_batchnorm_args_t;
void dg_batchnorm_f32(void *args);
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

/* ======================================================================
 * Softmax over one axis: the tensor is [outer, dim, inner]. Opset-13
 * Softmax(axis) and SoftmaxGrad_13(axis): outer = prod(shape[:axis]),
 * dim = shape[axis], inner = prod(shape[axis+1:]). The pre-13 "coerce to
 * 2-D" forms (Softmax <= 12, com.microsoft SoftmaxGrad): dim =
 * prod(shape[axis:]), inner = 1.
 * SoftmaxGrad(dY, Y): dx = y * (dy - sum(dy * y)).
 * ====================================================================== */
typedef struct {
    const float *x;
    float *y;
    uint32_t outer, dim, inner;
} dg_softmax_args_t;
void dg_softmax_f32(void *args);

typedef struct {
    const float *dy;
    const float *y;
    float *dx;
    uint32_t outer, dim, inner;
} dg_softmax_grad_args_t;
void dg_softmax_grad_f32(void *args);

/* ======================================================================
 * Losses
 * ====================================================================== */
enum { DG_REDUCTION_MEAN = 0, DG_REDUCTION_SUM = 1 };

/* SoftmaxCrossEntropyLoss: scores [batch, classes, inner], labels
 * [batch, inner] (int64, or int32 when labels_i32). log_prob (required, the
 * size of scores) receives log_softmax over classes; loss (may be NULL) the
 * mean (over samples whose label != ignore_index, when has_ignore) or sum of
 * -log_prob[label]. A label outside [0, classes) that is not ignored is an
 * error (aborts on the host emulation). Barrier: log_prob, then core 0 sums
 * the loss in sample order. */
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
    float scratch[DG_MSE_BLOCKS];
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

/* ======================================================================
 * Reductions (ReduceSum, ReduceMean, any axes, keepdims is only a shape
 * matter). The input is viewed as kept dims x reduced dims: output element
 * o (row-major over keep_shape) reduces, in row-major order over
 * red_shape, x[sum(keep_idx * keep_strides) + sum(red_idx * red_strides)].
 * Element strides of the input. nkeep == 0: one output (full reduction).
 * ====================================================================== */
typedef struct {
    const float *x;
    float *y;
    uint32_t nkeep;
    uint32_t keep_shape[DG_MAX_DIMS];
    uint32_t keep_strides[DG_MAX_DIMS];
    uint32_t nred;
    uint32_t red_shape[DG_MAX_DIMS];
    uint32_t red_strides[DG_MAX_DIMS];
} dg_reduce_args_t;
void dg_reduce_sum_f32(void *args);
void dg_reduce_mean_f32(void *args);

/* ======================================================================
 * Data movement (any element size: 1, 2, 4 or 8 bytes)
 * ====================================================================== */

/* Identity, Reshape, Squeeze, Unsqueeze, Flatten when not aliased. */
typedef struct {
    const void *x;
    void *y;
    uint32_t bytes;
} dg_copy_args_t;
void dg_copy_kernel(void *args);

/* y[i] = x[offset + sum(idx_d * strides[d])] over the output shape: covers
 * Transpose (strides permuted), Slice (offset = starts, strides * steps,
 * possibly negative) and Expand (strides 0 on broadcast dims). */
typedef struct {
    const void *x;
    void *y;
    uint32_t elem_size;
    uint32_t ndim;
    uint32_t shape[DG_MAX_DIMS];
    int32_t strides[DG_MAX_DIMS];
    int32_t offset;
} dg_strided_copy_args_t;
void dg_strided_copy(void *args);
void dg_transpose(void *args);
void dg_slice(void *args);
void dg_expand(void *args);

/* Concat along an axis: the output is [outer, sum(sizes), inner]; input i
 * is [outer, sizes[i], inner]. */
typedef struct {
    const void *const *x;
    const uint32_t *sizes;
    uint32_t nin;
    void *y;
    uint32_t elem_size;
    uint32_t outer, inner;
} dg_concat_args_t;
void dg_concat(void *args);

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
 * overrides lr (optimizers that take the rate as a tensor). */
typedef struct {
    const float *w;
    const float *g;
    float *w_out;
    uint32_t n;
    float lr;
    const float *lr_ptr;
} dg_sgd_args_t;
void dg_sgd_f32(void *args);

#ifdef __cplusplus
}
#endif

#endif /* DG_KERNELS_H */
