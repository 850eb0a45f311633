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
/* The same over at most `most` cores: the others get an empty range. */
dg_range_t dg_split_among(uint32_t n, uint32_t most);

/* ---- run-time errors in the data ----------------------------------------
 * What a kernel cannot compute from the values it is given (an integer Div
 * or Mod by zero). The host emulation aborts at once with the message
 * ("[pmsis-host] FATAL: integer Div by zero"); on the chips the kernel
 * stores a defined value (0), records the message and goes on, and the
 * caller asks after the run: dg_kernel_error() is the message of the last
 * error since dg_kernel_error_clear(), NULL when there was none. The
 * generated harness prints it as a "FATAL:" line and fails. Building with
 * -DDG_KERNEL_ERRORS_AS_STATUS gives the chips' behaviour on the host
 * emulation too (tests). */
const char *dg_kernel_error(void);
void dg_kernel_error_clear(void);
void dg_kernel_error_set(const char *msg);

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
    DG_FAULT_MOMENTUM_W, DG_FAULT_MOMENTUM_V,
    DG_FAULT_ADAMW_W, DG_FAULT_ADAMW_M, DG_FAULT_ADAMW_V,
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
    uint32_t shape[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t a_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t b_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
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
 * it is read at c[i * c_stride_m + j * c_stride_n] (strides 0 broadcast).
 * accumulate (added field; 0 = the above): y += alpha * op(A) op(B), C and
 * beta ignored, for K split into tiles (each call one K tile with its own
 * A / B views). With alpha = 1 each output's sum continues from the value in
 * y, so the tiles give exactly the bits of one call over the whole K; with
 * another alpha a tile's product is scaled, then added.
 * act (added field; 0 = none): 1 applies ReLU to every output this call
 * stores, after alpha, beta * C and the accumulation (a fused Gemm + Relu;
 * with K tiles set it on the last tile's call only). */
typedef struct {
    const float *a;
    const float *b;
    const float *c;
    float *y;
    uint32_t m, n, k;
    uint32_t trans_a, trans_b; /* optional: 0 = as stored */
    float alpha, beta;
    uint32_t c_stride_m, c_stride_n;
    uint32_t accumulate; /* optional: 0 = overwrite */
    uint32_t act; /* optional: 0 = none */
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
    uint32_t trans_a, trans_b; /* optional: 0 = as stored */
    float alpha; /* optional: FusedMatMul only */
    /* added field, both kernels: y += alpha * op(A) op(B) (K tiles), as
     * dg_gemm_args_t.accumulate */
    uint32_t accumulate; /* optional: 0 = overwrite */
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
 * accumulate (added field; 0 = overwrite): dg_conv_grad_dw_f32 and
 *   dg_conv_grad_db_f32 add into dw / db (partial sums over batch or output
 *   row tiles: each sum continues from the value there, so tiles taken in
 *   order give the bits of one call); dg_conv_f32 adds into y (partial sums
 *   over input-channel tiles: x, w and in_c describe the tile; the sum
 *   continues from y and the bias is added only when b is non-NULL, so pass
 *   it with the last tile).
 * act (added field; 0 = none): dg_conv_f32 applies ReLU (act 1) to every
 *   output it stores, after the bias (a fused Conv + Relu; with input-channel
 *   tiles set it on the last tile's call only). The gradient kernels ignore
 *   it.
 * ====================================================================== */
typedef struct {
    const float *x;
    const float *w;
    const float *b; /* optional: NULL where the kernel does not read it */
    float *y; /* optional: NULL where the kernel does not read it */
    const float *dy; /* optional: NULL where the kernel does not read it */
    float *dx; /* optional: NULL where the kernel does not read it */
    float *dw; /* optional: NULL where the kernel does not read it */
    float *db; /* optional: NULL where the kernel does not read it */
    uint32_t batch, in_c, in_h, in_w;
    uint32_t out_c, out_h, out_w;
    uint32_t k_h, k_w;
    uint32_t stride_h, stride_w;
    uint32_t dil_h, dil_w;
    uint32_t pad_top, pad_left;
    uint32_t group;
    uint32_t accumulate; /* optional: 0 = overwrite */
    uint32_t act; /* optional: 0 = none */
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
 * tensor, ((n * C + c) * H + h) * W + w, or with storage_order 1 (1-D and
 * 2-D) (n * C + c) * H * W + w * H + h; ties keep the first maximum in
 * window order. AveragePool's divisor: with count_include_pad the window
 * clipped to the padded input (pads on all four sides; a ceil_mode window's
 * taps beyond the end pad do not count, as the ONNX reference), else the
 * window clipped to the input. No dilations in dg_avgpool_f32 (a dilated
 * AveragePool runs in dg_avgpool3d_f32).
 * ====================================================================== */
typedef struct {
    const float *x; /* optional: NULL where the kernel does not read it */
    float *y; /* optional: NULL where the kernel does not read it */
    int64_t *indices; /* optional: NULL where the kernel does not read it */
    const float *dy; /* optional: NULL where the kernel does not read it */
    const int64_t *indices_in; /* optional: NULL where the kernel does not read it */
    float *dx; /* optional: NULL where the kernel does not read it */
    uint32_t batch, channels, in_h, in_w, out_h, out_w;
    uint32_t k_h, k_w, stride_h, stride_w, dil_h, dil_w;
    uint32_t pad_top, pad_left, pad_bottom, pad_right; /* optional: 0 = none (global pools) */
    uint32_t count_include_pad; /* optional: 0 = no */
    uint32_t storage_order; /* optional: 0 = row-major indices */
} dg_pool_args_t;
void dg_maxpool_f32(void *args);
void dg_maxpool_grad_f32(void *args);
void dg_avgpool_f32(void *args);
void dg_avgpool_grad_f32(void *args);
void dg_global_avgpool_f32(void *args);
void dg_global_avgpool_grad_f32(void *args);

/* MaxPool on int8 and uint8 (1-D as height 1, 2-D): dg_maxpool_f32's
 * geometry, maxima, ties and indices in the input's type (an output whose
 * window holds no tap of the input is the type's lowest value). */
typedef struct {
    const void *x;
    void *y;
    int64_t *indices; /* optional: NULL when not wanted */
    uint32_t batch, channels, in_h, in_w, out_h, out_w;
    uint32_t k_h, k_w, stride_h, stride_w, dil_h, dil_w;
    uint32_t pad_top, pad_left, pad_bottom, pad_right;
    uint32_t storage_order; /* optional: 0 = row-major indices */
} dg_pool_typed_args_t;
void dg_maxpool_i8(void *args);
void dg_maxpool_u8(void *args);

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

/* ######################################################################
 * The operators beyond a CNN training step's core (fp32): unary maps,
 * selection and movement, reductions, normalization variants, 3-D and
 * transposed windows. Same calling convention as above.
 * ###################################################################### */

/* Fault ids of these kernels (tests only), after the ones above. */
enum dg_fault_id_ops {
    DG_FAULT_CEIL = DG_FAULT_COUNT, DG_FAULT_FLOOR, DG_FAULT_EXP, DG_FAULT_LOG,
    DG_FAULT_SQRT, DG_FAULT_NEG, DG_FAULT_ABS, DG_FAULT_TANH, DG_FAULT_SIGMOID,
    DG_FAULT_ERF, DG_FAULT_HARD_SWISH, DG_FAULT_HARD_SIGMOID, DG_FAULT_SWISH,
    DG_FAULT_CLIP, DG_FAULT_CLIP_GRAD, DG_FAULT_SIGMOID_GRAD, DG_FAULT_TANH_GRAD,
    DG_FAULT_SWISH_GRAD, DG_FAULT_MAX, DG_FAULT_MIN,
    DG_FAULT_WHERE, DG_FAULT_CAST, DG_FAULT_GATHER, DG_FAULT_SPLIT, DG_FAULT_PAD,
    DG_FAULT_GLOBAL_MAXPOOL, DG_FAULT_REDUCE_MAX,
    DG_FAULT_GROUPNORM, DG_FAULT_INSTANCENORM, DG_FAULT_RMSNORM_Y, DG_FAULT_RMSNORM_INVSTD,
    DG_FAULT_CONV_TRANSPOSE,
    DG_FAULT_SIGN, DG_FAULT_COMPARE, DG_FAULT_GATHER_GRAD,
    DG_FAULT_LEAKY_RELU, DG_FAULT_ELU, DG_FAULT_SOFTPLUS, DG_FAULT_PRELU,
    DG_FAULT_MAXPOOL3D_Y, DG_FAULT_MAXPOOL3D_IDX, DG_FAULT_AVGPOOL3D, DG_FAULT_CONV3D,
    DG_FAULT_CONV_TRANSPOSE3D,
    DG_FAULT_MOD, DG_FAULT_NOT, DG_FAULT_ARG, DG_FAULT_FILL, DG_FAULT_TILE, DG_FAULT_LOG_SOFTMAX, DG_FAULT_RESIZE,
    DG_FAULT_W2_COUNT
};

/* ---- unary elementwise (dg_unary_args_t: x, y, n; y may alias x) -------
 * Ceil, Floor, Exp, Log, Sqrt, Neg, Abs, Tanh, Sigmoid (1 / (1 + e^-x)),
 * Erf, HardSwish (x * max(0, min(1, x / 6 + 1/2))), Softplus (ln(1 + e^x),
 * as x + ln(1 + e^-x) for x > 0 so that it never overflows). */
void dg_ceil_f32(void *args);
void dg_floor_f32(void *args);
void dg_exp_f32(void *args);
void dg_log_f32(void *args);
void dg_sqrt_f32(void *args);
void dg_neg_f32(void *args);
void dg_abs_f32(void *args);
void dg_tanh_f32(void *args);
void dg_sigmoid_f32(void *args);
void dg_erf_f32(void *args);
void dg_hard_swish_f32(void *args);
void dg_softplus_f32(void *args);

/* Unary with parameters. y may alias x.
 *   dg_hard_sigmoid_f32  y = max(0, min(1, alpha x + beta))  (ONNX defaults
 *                        alpha 0.2, beta 0.5)
 *   dg_swish_f32         y = x * sigmoid(alpha x)  (Swish, opset 24 and
 *                        com.microsoft QuickGelu; Swish's default alpha is 1,
 *                        QuickGelu's 1.702; beta unused)
 *   dg_leaky_relu_f32    y = x < 0 ? alpha x : x  (LeakyRelu, default alpha
 *                        0.01; beta unused)
 *   dg_elu_f32           y = x < 0 ? alpha (e^x - 1) : x  (Elu, default
 *                        alpha 1; beta unused) */
typedef struct {
    const float *x;
    float *y;
    uint32_t n;
    float alpha, beta;
} dg_unary_param_args_t;
void dg_hard_sigmoid_f32(void *args);
void dg_swish_f32(void *args);
void dg_leaky_relu_f32(void *args);
void dg_elu_f32(void *args);

/* PRelu(X, slope): y = x < 0 ? slope x : x, with dg_binary_args_t: a = X,
 * b = slope broadcast to X (numpy strides, 0 on a broadcast dimension, as for
 * Add; ndim = 0 when both have X's size); y may alias a. */
void dg_prelu_f32(void *args);

/* Clip: y = min(max(x, lo), hi). lo = *min_ptr when min_ptr != NULL (the
 * opset >= 11 input), else `min` (the opset-6 attribute) when has_min, else
 * -FLT_MAX (onnxruntime's default: -inf clips to -FLT_MAX); hi likewise with
 * FLT_MAX.
 * dg_clip_grad_f32: onnxruntime's gradient graph for Clip
 *   (GreaterOrEqual(X, min) And LessOrEqual(X, max), Cast, Mul) fused:
 *   dx = dy where lo <= x <= hi (boundaries included), else 0; an absent
 *   bound is no condition. Reads x, dy; writes dx. */
typedef struct {
    const float *x;
    float *y; /* optional: NULL where the kernel does not read it */
    const float *dy; /* optional: NULL where the kernel does not read it */
    float *dx; /* optional: NULL where the kernel does not read it */
    uint32_t n;
    const float *min_ptr;
    const float *max_ptr;
    float min, max;
    uint32_t has_min, has_max;
} dg_clip_args_t;
void dg_clip_f32(void *args);
void dg_clip_grad_f32(void *args);

/* Gradients that onnxruntime-training emits from the forward *output* Y
 * (com.microsoft, inputs (dY, Y)):
 *   SigmoidGrad: dx = dy * y * (1 - y)
 *   TanhGrad:    dx = dy * (1 - y * y) */
typedef struct {
    const float *dy;
    const float *y;
    float *dx;
    uint32_t n;
} dg_act_grad_y_args_t;
void dg_sigmoid_grad_f32(void *args);
void dg_tanh_grad_f32(void *args);

/* com.microsoft QuickGeluGrad(dY, X){alpha}, the gradient of Swish /
 * QuickGelu: with s = sigmoid(alpha x), dx = dy * s * (1 + alpha x (1 - s)). */
typedef struct {
    const float *dy;
    const float *x;
    float *dx;
    uint32_t n;
    float alpha;
} dg_swish_grad_args_t;
void dg_swish_grad_f32(void *args);

/* ---- variadic Max / Min with numpy broadcasting -------------------------
 * nin (1..DG_MAX_VARIADIC) inputs. ndim == 0: every input is n contiguous
 * elements. Otherwise `shape` is the output shape and strides[i] the element
 * strides of input i per output dimension (0 on a broadcast dimension), as
 * in dg_binary_args_t. Inputs are combined in input order. y may alias an
 * input that is not broadcast. */
#define DG_MAX_VARIADIC 8
typedef struct {
    const float *const *x;
    uint32_t nin;
    float *y;
    uint32_t n;
    uint32_t ndim;
    uint32_t shape[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t strides[DG_MAX_VARIADIC][DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
} dg_variadic_args_t;
void dg_max_f32(void *args);
void dg_min_f32(void *args);

/* ---- Where(cond, x, y) with numpy broadcasting (any element size 1/2/4/8)
 * out[i] = cond[.] ? x[.] : y[.]; cond is bool (one byte, nonzero = true).
 * ndim == 0: all n contiguous; else the output shape and per-input element
 * strides (0 = broadcast). */
typedef struct {
    const uint8_t *cond;
    const void *x;
    const void *y;
    void *out;
    uint32_t elem_size;
    uint32_t n;
    uint32_t ndim;
    uint32_t shape[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t c_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t x_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t y_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
} dg_where_args_t;
void dg_where(void *args);

/* ---- Cast between f32, i64, i32, u8 and bool (n elements) ----------------
 * float -> integer truncates toward zero; NaN, infinities and values outside
 * the target's range give what onnxruntime gives on x86-64 (where C leaves
 * the conversion undefined): int64 and int32 get their minimum (INT64_MIN,
 * INT32_MIN), and uint8 is the low byte of the int32 conversion (so 300.0
 * gives 44, -1.0 gives 255, 1e30 and NaN give 0); -> bool is x != 0 (stored
 * as 0 / 1, NaN is true); integer -> float rounds to nearest; integer ->
 * narrower integer wraps (two's complement); bool reads nonzero as 1.
 * from == to copies. */
enum { DG_DT_F32 = 0, DG_DT_I64 = 1, DG_DT_I32 = 2, DG_DT_U8 = 3, DG_DT_BOOL = 4, DG_DT_I8 = 5 };
typedef struct {
    const void *x;
    void *y;
    uint32_t n;
    uint32_t from, to;
} dg_cast_args_t;
void dg_cast(void *args);

/* ---- Gather along an axis (any element size) ------------------------------
 * x is [outer, axis_dim, inner], y is [outer, n_idx, inner]:
 * y[o, j, i] = x[o, indices[j], i]. Indices are int64 (int32 when
 * indices_i32): constant ones normalised to [0, axis_dim) by the generator,
 * run-time ones (token ids) in [-axis_dim, axis_dim), a negative one
 * counting from the end (the host emulation aborts on one outside). Scalar indices: n_idx = 1 and the
 * generator drops the axis from the output shape. */
typedef struct {
    const void *x;
    const void *indices;
    uint32_t indices_i32;
    void *y;
    uint32_t elem_size;
    uint32_t outer, axis_dim, inner;
    uint32_t n_idx;
} dg_gather_args_t;
void dg_gather(void *args);

/* ---- Split along an axis (any element size): the inverse of dg_concat ---
 * x is [outer, sum(sizes), inner]; output i is [outer, sizes[i], inner]. */
typedef struct {
    const void *x;
    void *const *y;
    const uint32_t *sizes;
    uint32_t nout;
    uint32_t elem_size;
    uint32_t outer, inner;
} dg_split_args_t;
void dg_split_kernel(void *args);

/* ---- Pad (fp32), ndim dims -----------------------------------------------
 * pads_begin[d] / pads_end[d] are ONNX's pads[d] / pads[ndim + d] and may be
 * negative (crop). As onnxruntime: the negative pads crop the input first,
 * then the positive pads extend the cropped input by `value` (constant),
 * its mirror without the edge element (reflect; pads must be smaller than
 * the cropped extent), its edge element (edge) or wrap around (wrap).
 * out_shape[d] = in_shape[d] + pads_begin[d] + pads_end[d]. */
enum { DG_PAD_CONSTANT = 0, DG_PAD_REFLECT = 1, DG_PAD_EDGE = 2, DG_PAD_WRAP = 3 };
typedef struct {
    const float *x;
    float *y;
    uint32_t ndim;
    uint32_t in_shape[DG_MAX_DIMS];
    int32_t pads_begin[DG_MAX_DIMS];
    int32_t pads_end[DG_MAX_DIMS];
    uint32_t mode;
    float value;
} dg_pad_args_t;
void dg_pad_f32(void *args);

/* ---- max reductions -------------------------------------------------------
 * GlobalMaxPool: dg_pool_args_t (batch, channels, in_h, in_w; x -> y of
 * [batch, channels, 1, 1]).
 * ReduceMax: dg_reduce_args_t exactly as ReduceSum (any axes; keepdims is
 * only a shape matter). Any NaN input gives NaN (onnxruntime 1.19 is not
 * consistent there: ReduceMax keeps only a leading NaN, GlobalMaxPool skips
 * NaN; the tests use finite data). */
void dg_global_maxpool_f32(void *args);
void dg_reduce_max_f32(void *args);

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

/* ---- ConvTranspose (NCHW; 1-D is height 1) ---------------------------------
 * dg_conv_args_t with x, w, b (may be NULL), y; w is [in_c, out_c / group,
 * k_h, k_w] (ONNX's ConvTranspose layout). pad_top / pad_left are the begin
 * pads; the end pads and output_padding are implied by out_h / out_w
 * (out_h = stride_h (in_h - 1) + output_padding_h + dil_h (k_h - 1) + 1
 * - pad_top - pad_bottom). Each output element sums, in (in channel, k_h,
 * k_w) order, the inputs that map onto it, then adds the bias. */
void dg_conv_transpose_f32(void *args);

/* ---- 3-D windows (NCDHW; window3d.c) -------------------------------------
 * One args struct for the forward 3-D pools and convolution:
 *   dg_maxpool3d_f32  x -> y, indices (int64, may be NULL)
 *   dg_avgpool3d_f32  x -> y
 *   dg_conv3d_f32     x, w, b (may be NULL) -> y; w is [out_c, in_c / group,
 *                     k_d, k_h, k_w]; act 1 applies ReLU after the bias
 *   dg_conv_transpose3d_f32  x, w, b (may be NULL) -> y; w is [in_c,
 *                     out_c / group, k_d, k_h, k_w] (ONNX's ConvTranspose
 *                     layout); output o of an axis sums the inputs
 *                     (o + pad - k dil) / stride that divide and lie in
 *                     the input, in (input channel, k_d, k_h, k_w) order;
 *                     the end pads and output_padding are implied by the
 *                     output extents
 * Output position o of a spatial axis reads the input at o * stride - pad
 * + k * dil for k < kernel, the taps outside the input skipped (zero
 * padding for Conv). Pools: out_c == in_c (the channels). MaxPool keeps the
 * first maximum in window order (k_d, k_h, k_w); its index is the flat
 * position in the whole input, (((n * C + c) * D + d) * H + h) * W + w; a
 * window with no tap in the input gives -FLT_MAX. AveragePool divides by
 * the taps inside the input, with count_include_pad by the taps inside the
 * padded input (pads on both ends of each axis): a ceil_mode window that
 * overhangs the end pad does not count the taps beyond it (the ONNX
 * reference since onnx 1.18, as PyTorch; onnxruntime 1.19 divides by the
 * whole kernel there). 1-D and 2-D AveragePool with dilations run here with
 * depth 1. The other kernels do not read the end pads (implied by the
 * output extents). Each output element is computed by one core (the
 * outputs split evenly over the cores).
 * ====================================================================== */
typedef struct {
    const float *x;
    const float *w; /* optional: NULL where the kernel does not read it */
    const float *b; /* optional: NULL where the kernel does not read it */
    float *y;
    int64_t *indices; /* optional: NULL where the kernel does not read it */
    uint32_t batch, in_c, in_d, in_h, in_w;
    uint32_t out_c, out_d, out_h, out_w;
    uint32_t k_d, k_h, k_w;
    uint32_t stride_d, stride_h, stride_w;
    uint32_t dil_d, dil_h, dil_w;
    uint32_t pad_front, pad_top, pad_left;
    uint32_t pad_back, pad_bottom, pad_right; /* optional: read by dg_avgpool3d_f32 */
    uint32_t group; /* optional: 0 = 1 (read by dg_conv3d_f32) */
    uint32_t count_include_pad; /* optional: 0 = no */
    uint32_t act; /* optional: 0 = none */
} dg_window3d_args_t;
void dg_maxpool3d_f32(void *args);
void dg_avgpool3d_f32(void *args);
void dg_conv3d_f32(void *args);
void dg_conv_transpose3d_f32(void *args);

/* ---- operators of onnxruntime-training's gradient graphs ------------------
 * Sign (Abs gradient): dg_unary_args_t, y = -1, 0 or 1 (0 for +-0; NaN
 * stays NaN). */
void dg_sign_f32(void *args);

/* Comparisons with numpy broadcasting, bool (one byte, 0 / 1) output:
 * Equal, Less, LessOrEqual, Greater, GreaterOrEqual on float inputs (a NaN
 * operand compares false), on int64, int32, int8 and uint8 inputs (the
 * kernel's name says which), And on bool inputs. Max / Min gradients use
 * Equal (+ Cast, Sum, Div, Mul), the Clip gradient GreaterOrEqual /
 * LessOrEqual / And (+ Cast, Mul; or dg_clip_grad_f32 fused). Same layout
 * as dg_binary_args_t: ndim == 0: n contiguous elements each; else the
 * output shape and per-input element strides (0 = broadcast). */
typedef struct {
    const void *a;
    const void *b;
    uint8_t *y;
    uint32_t n;
    uint32_t ndim;
    uint32_t shape[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t a_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t b_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
} dg_compare_args_t;
void dg_equal_f32(void *args);
void dg_less_f32(void *args);
void dg_less_equal_f32(void *args);
void dg_greater_f32(void *args);
void dg_greater_equal_f32(void *args);
void dg_equal_i64(void *args);
void dg_less_i64(void *args);
void dg_less_equal_i64(void *args);
void dg_greater_i64(void *args);
void dg_greater_equal_i64(void *args);
void dg_equal_i32(void *args);
void dg_less_i32(void *args);
void dg_less_equal_i32(void *args);
void dg_greater_i32(void *args);
void dg_greater_equal_i32(void *args);
void dg_equal_i8(void *args);
void dg_less_i8(void *args);
void dg_less_equal_i8(void *args);
void dg_greater_i8(void *args);
void dg_greater_equal_i8(void *args);
void dg_equal_u8(void *args);
void dg_less_u8(void *args);
void dg_less_equal_u8(void *args);
void dg_greater_u8(void *args);
void dg_greater_equal_u8(void *args);
void dg_and_bool(void *args);
void dg_or_bool(void *args);
void dg_xor_bool(void *args);

/* com.microsoft GatherGrad(shape, indices, dY){axis} (fp32): dx is
 * [outer, axis_dim, inner] and zero except dx[o, indices[j], i] +=
 * dy[o, j, i], summed in j order (repeated indices add up). Each dx row
 * (o, k) is owned by one core, which scans all indices. Indices as in
 * dg_gather_args_t (normalised int64, or int32 when indices_i32). */
typedef struct {
    const float *dy;
    const void *indices;
    uint32_t indices_i32;
    float *dx;
    uint32_t outer, axis_dim, inner;
    uint32_t n_idx;
} dg_gather_grad_args_t;
void dg_gather_grad_f32(void *args);

/* com.microsoft ConvTransposeGrad(dY, X, W) needs no kernel of its own
 * (onnxruntime 1.19 has no CPU kernel for it either). With the
 * ConvTranspose's strides, pads, dilations and group:
 *   dX = Conv(dY, W):   dg_conv_f32 with x = dY, w = W, y = dX (in_c =
 *                       ConvTranspose's out_c, out_c = its in_c; W's
 *                       [in_c, out_c / group, k_h, k_w] is Conv's layout);
 *   dW = dg_conv_grad_dw_f32 with dy = X, x = dY, dw = dW (same args);
 *   dB = dg_conv_grad_db_f32 with dy = dY viewed as that Conv's input, i.e.
 *        out_c = ConvTranspose's out_c and out_h / out_w its output size.
 * (tests/kernel_tests_ops.c case convtranspose_grad does exactly this.) */

/* ###################### end of the operators beyond the core ###################### */

/* ---- Gelu, approximate = "tanh" (gelu_tanh.c) ----------------------------
 * y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) on dg_unary_args_t;
 * its gradient (GeluGrad{approximate=tanh}, onnxruntime's FastGeluGrad)
 * dx = dy * d/dx y on dg_act_grad_args_t. */
void dg_gelu_tanh_f32(void *args);
void dg_gelu_tanh_grad_f32(void *args);

/* ---- integer and mixed-type forms (integer.c) ------------------------------
 * Element types are the kernel's name: dg_<op>_<a> computes on a, b and y of
 * that type, dg_pow_<a>_<b> on a base of type <a> and an exponent of type
 * <b> with y of the base's type (ONNX's Pow). The fault ids are the f32
 * kernels' (tests only).
 *
 * Add, Sub, Mul, Div, Pow on int64 (and on int32: the same arithmetic in 32
 * bits, _i32 for _i64 in every name below; Add, Sub, Mul, Div on int8 in 8
 * bits, _i8) with numpy broadcasting, same layout as dg_binary_args_t (y may
 * alias a when a is not broadcast):
 *   Add, Sub, Mul wrap around (two's complement), as onnxruntime does;
 *   Div truncates toward zero (C's and onnxruntime's); a zero divisor gives 0
 *     and is a run-time error (dg_kernel_error), INT64_MIN / -1 gives
 *     INT64_MIN;
 *   dg_pow_i64: exact repeated squaring, wrapping; a negative exponent gives
 *     what onnxruntime's static_cast of pow() gives where that is defined
 *     (1 for a base of 1, +-1 for -1) and 0 otherwise;
 *   dg_pow_i64_f32: pow((double)a, (double)b) truncated toward zero
 *     (onnxruntime's static_cast<int64_t>(std::pow(a, b))); a result that is
 *     NaN or outside int64 gives INT64_MIN, as onnxruntime does on x86-64;
 *   dg_pow_f32_i64: (float)pow((double)a, (double)b) (std::pow as
 *     onnxruntime calls it, in double).
 * Add, Sub, Mul, Div on uint8 (_u8): modulo 256, Div truncating; a zero
 * divisor gives 0 and is a run-time error. */
typedef struct {
    const void *a;
    const void *b;
    void *y;
    uint32_t n;
    uint32_t ndim;
    uint32_t shape[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t a_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t b_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
} dg_binary_typed_args_t;
void dg_add_i64(void *args);
void dg_sub_i64(void *args);
void dg_mul_i64(void *args);
void dg_div_i64(void *args);
void dg_pow_i64(void *args);
void dg_pow_i64_f32(void *args);
void dg_pow_f32_i64(void *args);
void dg_add_i32(void *args);
void dg_sub_i32(void *args);
void dg_mul_i32(void *args);
void dg_div_i32(void *args);
void dg_pow_i32(void *args);
void dg_pow_i32_f32(void *args);
void dg_pow_f32_i32(void *args);
void dg_add_i8(void *args);
void dg_sub_i8(void *args);
void dg_mul_i8(void *args);
void dg_div_i8(void *args);
void dg_add_u8(void *args);
void dg_sub_u8(void *args);
void dg_mul_u8(void *args);
void dg_div_u8(void *args);

/* Variadic Max / Min on int64, int32, int8 and uint8: as dg_variadic_args_t
 * (x holds nin pointers to inputs of the kernel's type, y is of that type). */
typedef struct {
    const void *const *x;
    uint32_t nin;
    void *y;
    uint32_t n;
    uint32_t ndim;
    uint32_t shape[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t strides[DG_MAX_VARIADIC][DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
} dg_variadic_typed_args_t;
void dg_max_i64(void *args);
void dg_min_i64(void *args);
void dg_max_i32(void *args);
void dg_min_i32(void *args);
void dg_max_i8(void *args);
void dg_min_i8(void *args);
void dg_max_u8(void *args);
void dg_min_u8(void *args);

/* Clip and Relu on int8 (and Clip on uint8), in the input's type: Clip as
 * dg_clip_f32 with the bounds of the input's type (lo = *min_ptr when
 * min_ptr != NULL, else `min` when has_min, else the type's lowest value;
 * hi likewise with the highest); Relu on dg_unary_typed_args_t,
 * y = x > 0 ? x : 0. */
typedef struct {
    const void *x;
    void *y;
    uint32_t n;
    const void *min_ptr; /* optional: NULL when the bound is a value */
    const void *max_ptr; /* optional: NULL when the bound is a value */
    int32_t min, max;
    uint32_t has_min, has_max;
} dg_clip_typed_args_t;
void dg_clip_i8(void *args);
void dg_clip_u8(void *args);
void dg_relu_i8(void *args);

/* ReduceMax on int64 and on bool (one byte, 0 / 1: the result is 1 when any
 * reduced element is nonzero), laid out as dg_reduce_args_t. */
typedef struct {
    const void *x;
    void *y;
    uint32_t nkeep;
    uint32_t keep_shape[DG_MAX_DIMS];
    uint32_t keep_strides[DG_MAX_DIMS];
    uint32_t nred;
    uint32_t red_shape[DG_MAX_DIMS];
    uint32_t red_strides[DG_MAX_DIMS];
} dg_reduce_typed_args_t;
void dg_reduce_max_i64(void *args);
void dg_reduce_max_bool(void *args);

/* Mod with numpy broadcasting (dg_binary_typed_args_t; dg_mod_f32 and
 * dg_fmod_f32 on dg_binary_args_t; the _i32 and _i8 forms as the _i64 ones
 * in 32 and 8 bits; on uint8 dg_mod_u8 and dg_fmod_u8 are both C's %):
 * dg_mod_i64 and dg_mod_f32 are ONNX's
 * fmod = 0, the remainder with the divisor's sign (numpy's mod; on floats a
 * zero remainder is a zero of the divisor's sign, a zero divisor gives
 * NaN); dg_fmod_i64 and dg_fmod_f32 are fmod = 1, the remainder with the
 * dividend's sign (C's % and fmodf). An integer divisor of 0 gives 0 and is
 * a run-time error (dg_kernel_error). */
void dg_mod_i64(void *args);
void dg_mod_f32(void *args);
void dg_fmod_i64(void *args);
void dg_fmod_f32(void *args);
void dg_mod_i32(void *args);
void dg_fmod_i32(void *args);
void dg_mod_i8(void *args);
void dg_fmod_i8(void *args);
void dg_mod_u8(void *args);
void dg_fmod_u8(void *args);

/* ---- logic, index and fill kernels (index.c) ------------------------------
 * Not on bool (one byte, 0 / 1): y = !x over n elements. */
typedef struct {
    const void *x;
    void *y;
    uint32_t n;
} dg_unary_typed_args_t;
void dg_not_bool(void *args);

/* ArgMax / ArgMin over the middle axis of x viewed as [outer, dim, inner]:
 * y[o, i] (int64) is the index of the largest (smallest) element of
 * x[o, :, i], the first one among equals, the last when select_last; the
 * first NaN, when there is one (numpy's argmax / argmin). */
typedef struct {
    const float *x;
    void *y;
    uint32_t outer, dim, inner;
    uint32_t select_last;
} dg_arg_reduce_args_t;
void dg_argmax_f32(void *args);
void dg_argmin_f32(void *args);

/* ConstantOfShape: n elements of elem_size bytes (1, 4 or 8), each the
 * low elem_size bytes of value's little-endian bytes. */
typedef struct {
    void *y;
    uint32_t n;
    uint32_t elem_size;
    int64_t value;
} dg_fill_args_t;
void dg_fill(void *args);

/* Tile: y (out_shape) repeats x (in_shape, same rank ndim): y[i0, i1, ...]
 * = x[i0 % in_shape[0], i1 % in_shape[1], ...], elements of elem_size
 * bytes (1, 4 or 8). */
typedef struct {
    const void *x;
    void *y;
    uint32_t elem_size;
    uint32_t ndim;
    uint32_t in_shape[DG_MAX_DIMS];
    uint32_t out_shape[DG_MAX_DIMS];
} dg_tile_args_t;
void dg_tile(void *args);

/* LogSoftmax on dg_softmax_args_t: y = x - max - log(sum(exp(x - max))). */
void dg_log_softmax_f32(void *args);

/* Resize (resize.c) of `planes` [in_h, in_w] maps to [out_h, out_w] by
 * tables of taps: output row oy reads input rows iy[oy * kh + i] with
 * weights wy[oy * kh + i] (i < kh), output column ox columns
 * ix[ox * kw + j] with weights wx[ox * kw + j]; y is the weighted sum
 * (nearest: one tap of weight 1); a row or column whose first index is
 * -1 lies outside a tf_crop_and_resize crop and is `extrapolation`. The
 * generator computes the taps (mode, coordinate transformation, antialias,
 * edge clamping). */
typedef struct {
    const float *x;
    float *y;
    uint32_t planes;
    uint32_t in_h, in_w, out_h, out_w;
    uint32_t kh, kw;
    const int32_t *iy;
    const float *wy;
    const int32_t *ix;
    const float *wx;
    float extrapolation;
} dg_resize_args_t;
void dg_resize_f32(void *args);

/* ======================================================================
 * Quantized kernels (quant.c): ONNX's QuantizeLinear, DequantizeLinear,
 * QLinearMatMul, QLinearConv, MatMulInteger and ConvInteger.
 *
 * A quantized operand is int8_t or uint8_t, named by its `*_dtype` field
 * (DG_DT_I8 / DG_DT_U8; an integer result DG_DT_I32). Scales are float;
 * a zero point has its operand's type, NULL meaning 0. Per-axis scales and
 * zero points: the tensor is a [outer, axis_len, inner] view and element
 * (o, a, i) takes entry a; per tensor, axis_len is the tensor's and
 * `per_axis` 0 (entry 0 for all).
 *
 * Products sum (x - x_zp) * (w - w_zp) in int32 over the window, in the
 * fp32 kernels' order (input channel, kernel row, kernel column; k for
 * matrices), then add the int32 bias. Requantization (QLinear*) multiplies
 * the sum, converted to float, by x_scale * w_scale / y_scale (computed in
 * fp32 in that order), rounds to nearest even, adds y_zp and saturates:
 * onnxruntime's arithmetic, so the results are its results exactly.
 * QuantizeLinear rounds x / scale (a division, as the reference does) to
 * nearest even, adds the zero point and saturates; DequantizeLinear is
 * (x - zp) * scale.
 * ====================================================================== */
typedef struct {
    const float *x;
    const float *scale;
    const void *zero_point; /* optional: NULL where the kernel does not read it */
    void *y;
    uint32_t outer, axis_len, inner;
    uint32_t per_axis; /* optional: 0 = one scale for the tensor */
    uint32_t y_dtype;
} dg_quantize_args_t;
void dg_quantize_linear(void *args);

typedef struct {
    const void *x;
    const float *scale;
    const void *zero_point; /* optional: NULL where the kernel does not read it */
    float *y;
    uint32_t outer, axis_len, inner;
    uint32_t per_axis; /* optional: 0 = one scale for the tensor */
    uint32_t x_dtype;
} dg_dequantize_args_t;
void dg_dequantize_linear(void *args);

/* QLinearMatMul (y quantized) and MatMulInteger (y int32, no scales), with
 * dg_matmul_args_t's batch broadcasting. b_per_col: B's scale and zero
 * point hold n values (one per column); a_zp_per_row: A's zero point holds
 * m values (MatMulInteger). */
typedef struct {
    const void *a;
    const void *b;
    void *y;
    const float *a_scale; /* optional: NULL where the kernel does not read it */
    const float *b_scale; /* optional: NULL where the kernel does not read it */
    const float *y_scale; /* optional: NULL where the kernel does not read it */
    const void *a_zero_point; /* optional: NULL where the kernel does not read it */
    const void *b_zero_point; /* optional: NULL where the kernel does not read it */
    const void *y_zero_point; /* optional: NULL where the kernel does not read it */
    uint32_t m, n, k;
    uint32_t batch;
    uint32_t nbatch_dims;
    uint32_t batch_shape[4];
    uint32_t a_bstrides[4];
    uint32_t b_bstrides[4];
    uint32_t a_dtype, b_dtype, y_dtype;
    uint32_t b_per_col; /* optional: 0 = one scale and zero point for B */
    uint32_t a_zp_per_row; /* optional: 0 = one zero point for A */
    /* QGemm (com.microsoft): B stored [n, k] when trans_b; the int32 bias
     * (n values) joins the sum; alpha scales the multiplier, which is
     * alpha * a_scale * b_scale / y_scale; with y_dtype DG_DT_F32 (no
     * y_scale) y is the sum times alpha * a_scale * b_scale, in float. */
    uint32_t trans_b; /* optional: 0 = as stored */
    const int32_t *bias; /* optional: NULL where the kernel does not read it */
    float alpha; /* optional: 0 = 1 */
    /* optional: NULL where the kernel does not read it. With one B for
     * every batch, k a multiple of 4 and A word-aligned: n * k bytes (B as
     * [n, k] rows) and 4 * n words of per-column tables; the team fills
     * them, then each core multiplies pairs of A's rows with 4 of B's rows
     * at a time, 4 bytes per packed dot product (DG_XPULP). Without it, a
     * direct loop gives the same sums. */
    void *scratch;
} dg_qmatmul_args_t;
void dg_qlinear_matmul(void *args);

/* QLinearAdd / QLinearMul (com.microsoft) with dg_binary_args_t's
 * broadcasting: a and b dequantized to float (scale * (v - zp)), added or
 * multiplied, divided by y_scale, rounded to nearest even, plus y_zp,
 * saturated. */
typedef struct {
    const void *a;
    const void *b;
    void *y;
    const float *a_scale;
    const float *b_scale;
    const float *y_scale;
    const void *a_zero_point; /* optional: NULL where the kernel does not read it */
    const void *b_zero_point; /* optional: NULL where the kernel does not read it */
    const void *y_zero_point; /* optional: NULL where the kernel does not read it */
    uint32_t n;
    uint32_t ndim;
    uint32_t shape[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t a_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t b_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t dtype;
} dg_qbinary_args_t;
void dg_qlinear_add(void *args);
void dg_qlinear_mul(void *args);

/* QLinearGlobalAveragePool (com.microsoft, NCHW): y[c] is the sum of
 * x[c, :] - x_zp over the `image` values of a channel, requantized with
 * x_scale / (y_scale * image). `planes` = batch x channels. */
typedef struct {
    const void *x;
    void *y;
    const float *x_scale;
    const float *y_scale;
    const void *x_zero_point; /* optional: NULL where the kernel does not read it */
    const void *y_zero_point; /* optional: NULL where the kernel does not read it */
    uint32_t planes, image;
    uint32_t dtype;
} dg_qgap_args_t;
void dg_qlinear_global_average_pool(void *args);

/* QLinearSoftmax (com.microsoft) over the last `d` values of each of
 * `rows` rows, as onnxruntime computes it: `table` holds exp of the 256
 * input steps (the generator's, from x_scale and d), a row sums its
 * values' entries (shifted so that its maximum reads the top one) in
 * float, and y = round(entry * y_scale_floor / sum) + y_zp, where
 * y_scale_floor = floor(1 / y_scale). */
typedef struct {
    const void *x;
    void *y;
    const float *table;
    const void *y_zero_point; /* optional: NULL where the kernel does not read it */
    float y_scale_floor;
    uint32_t rows, d;
    uint32_t dtype;
} dg_qsoftmax_args_t;
void dg_qlinear_softmax(void *args);

/* QLinearConv (y quantized, optional int32 bias b) and ConvInteger (y
 * int32, no scales, no bias) on dg_conv_args_t's 1-D / 2-D geometry. The
 * input's pads read as x_zp (a real zero). w_per_channel: W's scale and
 * zero point hold out_c values. */
typedef struct {
    const void *x;
    const void *w;
    const int32_t *b; /* optional: NULL where the kernel does not read it */
    void *y;
    const float *x_scale; /* optional: NULL where the kernel does not read it */
    const float *w_scale; /* optional: NULL where the kernel does not read it */
    const float *y_scale; /* optional: NULL where the kernel does not read it */
    const void *x_zero_point; /* optional: NULL where the kernel does not read it */
    const void *w_zero_point; /* optional: NULL where the kernel does not read it */
    const void *y_zero_point; /* optional: NULL where the kernel does not read it */
    uint32_t batch, in_c, in_h, in_w;
    uint32_t out_c, out_h, out_w;
    uint32_t k_h, k_w;
    uint32_t stride_h, stride_w;
    uint32_t dil_h, dil_w;
    uint32_t pad_top, pad_left;
    uint32_t group;
    uint32_t x_dtype, w_dtype, y_dtype;
    uint32_t w_per_channel; /* optional: 0 = one scale and zero point for W */
    /* optional: NULL where the kernel does not read it. With K = in_c /
     * group * k_h * k_w and KP = K rounded up to 4: 4 * out_c words of
     * per-channel tables, out_c * KP bytes (W's rows zero-padded, when KP
     * != K), then 8 slots (cores past the 8th idle) of 4 * KP bytes. Each
     * core gathers the windows of 4 output pixels into its slot and
     * multiplies them with W's rows 4 bytes at a time (packed dot products
     * with DG_XPULP). Without it, a direct loop gives the same sums. */
    void *scratch;
} dg_qconv_args_t;
void dg_qlinear_conv(void *args);

/* ######################################################################
 * Integer-emulation operators of third-party integer graphs (Deeploy):
 * Round and RequantShift, on tensors that hold integer values.
 * ###################################################################### */

/* Fault ids of these kernels (tests only), after the ones above. */
enum dg_fault_id_int { DG_FAULT_ROUND = DG_FAULT_W2_COUNT, DG_FAULT_REQUANT_SHIFT, DG_FAULT_INT_COUNT };

/* Round (dg_unary_args_t): to the nearest integer, halves to even. */
void dg_round_f32(void *args);

/* Deeploy's RequantShift: y = clip(floor((x * mul + add + div / 2) / div),
 * lo, hi), computed exactly in 64-bit integers (x, mul and add hold
 * integer values; a fraction is truncated toward zero). div >= 1; signed:
 * lo = -(n_levels / 2), hi = n_levels / 2 - 1; unsigned: lo = 0, hi =
 * n_levels - 1. mul and add broadcast to x: ndim == 0: one value each
 * (their strides unread); else `shape` is x's shape and mul_strides /
 * add_strides their element strides per dimension (0 on a broadcast
 * dimension). x, mul, add and y are DG_DT_F32 or DG_DT_I32 each. */
typedef struct {
    const void *x;
    const void *mul;
    const void *add;
    void *y;
    uint32_t n;
    uint32_t ndim;
    uint32_t shape[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t mul_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    uint32_t add_strides[DG_MAX_DIMS]; /* optional: read only when ndim > 0 */
    int32_t div;
    int32_t lo, hi;
    uint32_t x_dtype, mul_dtype, add_dtype, y_dtype;
} dg_requant_shift_args_t;
void dg_requant_shift(void *args);

#ifdef __cplusplus
}
#endif

#endif /* DG_KERNELS_H */
