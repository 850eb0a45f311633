/* Helpers shared by the kernel sources (not part of the kernel API). */
#ifndef DG_INTERNAL_H
#define DG_INTERNAL_H

#include "dg_kernels.h"
#include "dg_math.h"
/* The chips' facts, written from platforms.json (the SDKs' pmsis.h does
 * not bring them in as the host emulation's does). */
#include "../mem/dg_chips.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* A kernel-level invariant. On the host emulation a violation aborts with
 * the message; on the chips it is not checked. */
#ifdef DG_PMSIS_HOST
#define DG_CHECK(cond, msg)            \
    do {                               \
        if (!(cond))                   \
            dg_host_fatal(msg);        \
    } while (0)
#else
#define DG_CHECK(cond, msg) ((void)0)
#endif

/* An error in the data (dg_kernels.h, "run-time errors in the data"): the
 * host emulation aborts with the message, the chips record it for the
 * harness. The kernel stores a defined value either way. */
#if defined(DG_PMSIS_HOST) && !defined(DG_KERNEL_ERRORS_AS_STATUS)
#define DG_DATA_CHECK(cond, msg) DG_CHECK(cond, msg)
#else
#define DG_DATA_CHECK(cond, msg)          \
    do {                                  \
        if (!(cond))                      \
            dg_kernel_error_set(msg);     \
    } while (0)
#endif

/* Float to integer conversions with a defined result everywhere (C leaves
 * NaN and values outside the target's range undefined, and the chips'
 * conversions saturate): truncation toward zero inside the range, else
 * what onnxruntime gives on x86-64 (the cvtt instructions' "integer
 * indefinite"): the type's minimum for int64 and int32, and for uint8 the
 * low byte of the int32 conversion. */
static inline int64_t dg_f64_to_i64(double v)
{
    return (v >= -9223372036854775808.0 && v < 9223372036854775808.0) ? (int64_t)v : INT64_MIN;
}

/* floor(a / b) for b > 0 (C's division truncates toward zero); defined
 * for every a. */
static inline int64_t dg_floor_div_i64(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if (a % b != 0 && a < 0)
        q -= 1;
    return q;
}

static inline int32_t dg_f64_to_i32(double v)
{
    return (v >= -2147483648.0 && v < 2147483648.0) ? (int32_t)v : INT32_MIN;
}

static inline int32_t dg_f32_to_i32(float v)
{
    return (v >= -2147483648.0f && v < 2147483648.0f) ? (int32_t)v : INT32_MIN;
}

static inline uint8_t dg_f32_to_u8(float v)
{
    return (uint8_t)((uint32_t)dg_f32_to_i32(v) & 0xFFu);
}

/* Multi-dimensional position used to walk strided views in row-major order
 * starting at a flat output index. */
typedef struct {
    uint32_t ndim;
    uint32_t idx[DG_MAX_DIMS];
} dg_pos_t;

static inline void dg_pos_set(dg_pos_t *p, uint32_t ndim, const uint32_t *shape, uint32_t flat)
{
    uint32_t d;
    p->ndim = ndim;
    for (d = ndim; d-- > 0;) {
        p->idx[d] = flat % shape[d];
        flat /= shape[d];
    }
}

static inline int64_t dg_pos_offset(const dg_pos_t *p, const int64_t *strides)
{
    int64_t off = 0;
    uint32_t d;
    for (d = 0; d < p->ndim; d++)
        off += (int64_t)p->idx[d] * strides[d];
    return off;
}

/* Advances the position by one; returns the dimension that changed least
 * significantly (ndim when wrapping around). */
static inline void dg_pos_next(dg_pos_t *p, const uint32_t *shape)
{
    uint32_t d;
    for (d = p->ndim; d-- > 0;) {
        if (++p->idx[d] < shape[d])
            return;
        p->idx[d] = 0;
    }
}

/* Register-blocked matrix product used by Gemm, MatMul, FusedMatMul and the
 * pointwise convolution: for i < rows, j < n,
 *     y[i * ldy + j] = sum over kk = 0, 1, ..., k - 1 (in this order) of
 *                      a[i * a_si + kk * a_sk] * b[kk * b_sk + j * b_sj]
 * starting from 0.0f (acc == 0) or from the value already in y (acc != 0,
 * to continue a sum over further k), one float accumulator per output. The
 * tiling only
 * changes which outputs are computed together, never the order of one
 * output's sum, so the result does not depend on where a core's chunk of
 * rows starts. Fastest when b_sj == 1 (rows of B contiguous) or b_sk == 1
 * (columns contiguous). */
void dg_mm_block_f32(const float *a, uint32_t a_si, uint32_t a_sk, const float *b, uint32_t b_sk,
                     uint32_t b_sj, float *y, uint32_t ldy, uint32_t rows, uint32_t n, uint32_t k,
                     int acc);

/* Output columns per register tile of dg_mm_block_f32 / the convolutions
 * when B rows are contiguous: 8 fills two 4-wide vectors on hosts that
 * auto-vectorize; the 32-bit cores (32 float registers, no float SIMD) keep
 * 4 rows x 4 columns of accumulators in registers. -DDG_TILE_N=4 builds the
 * RISC-V tiling on the host (the results are the same either way). */
#ifndef DG_TILE_N
#if defined(__riscv)
#define DG_TILE_N 4
#else
#define DG_TILE_N 8
#endif
#endif
#define DG_TILE_M 4

/* Fully unrolls the column loop of a register tile, so the accumulators
 * become registers (GCC keeps an array indexed in a loop in memory at -O2).
 * Only a hint: other compilers ignore it. */
#if defined(__GNUC__) && !defined(__clang__) && (__GNUC__ >= 8)
#define DG_UNROLL_TILE _Pragma("GCC unroll 16")
#else
#define DG_UNROLL_TILE
#endif

/* Inlines a tile into each caller: on its own the register allocator
 * spills half of a 4 x 8 tile's accumulators on x86-64. */
#if defined(__GNUC__)
#define DG_INLINE __inline__ __attribute__((always_inline))
#else
#define DG_INLINE
#endif

/* Keeps a register tile a call of its own: inlined into a loop nest, the
 * nest's live values crowd the accumulators out of the 32 registers that
 * the zfinx cores share between integers and floats. */
#if defined(__GNUC__)
#define DG_NOINLINE __attribute__((noinline))
#else
#define DG_NOINLINE
#endif

/* The N-d broadcast walk of the elementwise kernels: visits the output
 * elements [start, end) of `shape` in row-major order (position idx) and
 * keeps each operand's element offset off[j] (operand j's strides st[j]
 * per output dimension, 0 on a broadcast dimension) up to date
 * incrementally. idx and off are separate arrays, so with a constant nin
 * the operand loops unroll and the offsets stay in registers. */
static DG_INLINE void dg_bcast_start(uint32_t *idx, uint32_t *off, uint32_t ndim, const uint32_t *shape,
                                     uint32_t nin, const uint32_t *const *st, uint32_t flat)
{
    uint32_t d, j;
    for (j = 0; j < nin; j++)
        off[j] = 0;
    for (d = ndim; d-- > 0;) {
        idx[d] = flat % shape[d];
        flat /= shape[d];
        for (j = 0; j < nin; j++)
            off[j] += idx[d] * st[j][d];
    }
}

static DG_INLINE void dg_bcast_next(uint32_t *idx, uint32_t *off, uint32_t ndim, const uint32_t *shape,
                                    uint32_t nin, const uint32_t *const *st)
{
    uint32_t d, j;
    for (d = ndim; d-- > 0;) {
        for (j = 0; j < nin; j++)
            off[j] += st[j][d];
        if (++idx[d] < shape[d])
            return;
        for (j = 0; j < nin; j++)
            off[j] -= st[j][d] * shape[d];
        idx[d] = 0;
    }
}

/* The body of a broadcast binary kernel over p (the dg_binary_args_t
 * layout): this core's chunk of output elements i, each with va = A[.] of
 * type TA and vb = B[.] of type TB, runs STMT. */
#define DG_BINARY_WALK(p, TA, A, TB, B, STMT)                                       \
    do {                                                                            \
        const dg_range_t r_ = dg_split((p)->n);                                     \
        uint32_t i;                                                                 \
        if ((p)->ndim == 0) {                                                       \
            for (i = r_.start; i < r_.end; i++) {                                   \
                const TA va = (A)[i];                                               \
                const TB vb = (B)[i];                                               \
                STMT;                                                               \
            }                                                                       \
        } else {                                                                    \
            const uint32_t *const st_[2] = { (p)->a_strides, (p)->b_strides };      \
            uint32_t idx_[DG_MAX_DIMS], off_[2];                                    \
            dg_bcast_start(idx_, off_, (p)->ndim, (p)->shape, 2, st_, r_.start);    \
            for (i = r_.start; i < r_.end; i++) {                                   \
                const TA va = (A)[off_[0]];                                         \
                const TB vb = (B)[off_[1]];                                         \
                STMT;                                                               \
                dg_bcast_next(idx_, off_, (p)->ndim, (p)->shape, 2, st_);           \
            }                                                                       \
        }                                                                           \
    } while (0)

/* The body of a variadic kernel over p (the dg_variadic_args_t layout,
 * inputs x of type T): for this core's chunk of output elements i, acc
 * starts at input 0's element and takes each further input's element v in
 * input order through STMT; then Y[i] = FAULT(fault, acc). */
#define DG_VARIADIC_WALK(p, T, x, Y, FAULT, fault, STMT)                            \
    do {                                                                            \
        const dg_range_t r_ = dg_split((p)->n);                                     \
        uint32_t i, j;                                                              \
        DG_CHECK((p)->nin >= 1 && (p)->nin <= DG_MAX_VARIADIC,                      \
                 "Max/Min: nin out of range");                                      \
        if ((p)->ndim == 0) {                                                       \
            for (i = r_.start; i < r_.end; i++) {                                   \
                T acc = (x)[0][i];                                                  \
                for (j = 1; j < (p)->nin; j++) {                                    \
                    const T v = (x)[j][i];                                          \
                    STMT;                                                           \
                }                                                                   \
                (Y)[i] = FAULT(fault, acc);                                         \
            }                                                                       \
        } else if (r_.start < r_.end) {                                             \
            const uint32_t *st_[DG_MAX_VARIADIC];                                   \
            uint32_t idx_[DG_MAX_DIMS], off_[DG_MAX_VARIADIC];                      \
            for (j = 0; j < (p)->nin; j++)                                          \
                st_[j] = (p)->strides[j];                                           \
            dg_bcast_start(idx_, off_, (p)->ndim, (p)->shape, (p)->nin, st_, r_.start); \
            for (i = r_.start; i < r_.end; i++) {                                   \
                T acc = (x)[0][off_[0]];                                            \
                for (j = 1; j < (p)->nin; j++) {                                    \
                    const T v = (x)[j][off_[j]];                                    \
                    STMT;                                                           \
                }                                                                   \
                (Y)[i] = FAULT(fault, acc);                                         \
                dg_bcast_next(idx_, off_, (p)->ndim, (p)->shape, (p)->nin, st_);    \
            }                                                                       \
        }                                                                           \
    } while (0)

/* Where batch `bi` of a dg_matmul_args_t product starts in A and in B
 * (element offsets; broadcast dims have stride 0). */
static inline void dg_matmul_batch(const dg_matmul_args_t *p, uint32_t bi, uint32_t *aoff, uint32_t *boff)
{
    uint32_t d;
    *aoff = 0;
    *boff = 0;
    for (d = p->nbatch_dims; d-- > 0;) {
        const uint32_t id = bi % p->batch_shape[d];
        bi /= p->batch_shape[d];
        *aoff += id * p->a_bstrides[d];
        *boff += id * p->b_bstrides[d];
    }
}

/* The first element of row `row` of an [outer, dim, inner] view: rows are
 * the (outer, inner) pairs, a row's elements stand inner apart. */
static inline uint32_t dg_axis_row(uint32_t row, uint32_t dim, uint32_t inner)
{
    return (row / inner) * dim * inner + row % inner;
}

/* The row maximum of n elements x[0], x[stride], ... (n >= 1). */
static inline float dg_row_max(const float *x, uint32_t n, uint32_t stride)
{
    float mx = x[0];
    uint32_t j;
    for (j = 1; j < n; j++)
        if (x[j * stride] > mx)
            mx = x[j * stride];
    return mx;
}

/* Row log-sum-exp, shifted by the row maximum mx: ln(sum_j exp(x_j - mx)),
 * summed in order with dg_expf (Softmax's exponential). */
static inline float dg_row_log_sum_exp(const float *x, uint32_t n, uint32_t stride, float mx)
{
    float sum = 0.0f;
    uint32_t j;
    for (j = 0; j < n; j++)
        sum += dg_expf(x[j * stride] - mx);
    return logf(sum);
}

#endif /* DG_INTERNAL_H */
