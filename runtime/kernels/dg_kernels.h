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
 *
 * This header holds what every kernel shares (work splitting, run-time
 * errors, fault ids, element types) and includes one header per kernel
 * family (dg_k_*.h), which declares its kernels and their args structs.
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

/* Fault ids of the kernels beyond a CNN training step's core (tests only),
 * after the ones above. */
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

/* Fault ids of the integer-emulation kernels (requant.c; tests only), after
 * the ones above. */
enum dg_fault_id_int {
    DG_FAULT_ROUND = DG_FAULT_W2_COUNT, DG_FAULT_REQUANT_SHIFT,
    DG_FAULT_ISOFTMAX, DG_FAULT_INORM, DG_FAULT_IPOINT, DG_FAULT_INONORM,
    DG_FAULT_INT_COUNT
};

#ifdef DG_FAULT_INJECTION
extern volatile int dg_fault_id;
#define DG_FAULT(id, v) ((dg_fault_id == (id)) ? (v) * 1.001f + 1e-3f : (v))
#define DG_FAULT_I(id, v) ((dg_fault_id == (id)) ? (v) + 1 : (v))
#else
#define DG_FAULT(id, v) (v)
#define DG_FAULT_I(id, v) (v)
#endif

/* ---- element types ----------------------------------------------------
 * The `*_dtype` fields of the typed and quantized kernels and Cast's from /
 * to (dg_k_movement.h tells how Cast converts). */
enum { DG_DT_F32 = 0, DG_DT_I64 = 1, DG_DT_I32 = 2, DG_DT_U8 = 3, DG_DT_BOOL = 4, DG_DT_I8 = 5 };

#ifdef __cplusplus
}
#endif

/* ---- the kernels, one header per family ------------------------------ */
#include "dg_k_elementwise.h"
#include "dg_k_linear.h"
#include "dg_k_conv.h"
#include "dg_k_pool.h"
#include "dg_k_norm.h"
#include "dg_k_softmax.h"
#include "dg_k_loss.h"
#include "dg_k_reduce.h"
#include "dg_k_movement.h"
#include "dg_k_optim.h"
#include "dg_k_quant.h"

#endif /* DG_KERNELS_H */
