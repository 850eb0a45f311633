/* Integer and mixed-type forms of the elementwise binary operators, of the
 * variadic Max / Min, of Clip and Relu, of ReduceMax and of MatMul (see
 * dg_kernels.h for each one's arithmetic). */
#include "dg_internal.h"

/* As DG_BINARY_KERNEL (elementwise.c) on a of type TA, b of type TB and y
 * of type TY; FAULT is DG_FAULT or DG_FAULT_I. */
#define DG_TYPED_BINARY_KERNEL(name, TA, TB, TY, FAULT, fault, EXPR)            \
    void name(void *args)                                                       \
    {                                                                           \
        const dg_binary_typed_args_t *p = (const dg_binary_typed_args_t *)args; \
        const TA *A = (const TA *)p->a;                                         \
        const TB *B = (const TB *)p->b;                                         \
        TY *Y = (TY *)p->y;                                                     \
        DG_BINARY_WALK(p, TA, A, TB, B, Y[i] = FAULT(fault, (EXPR)));           \
    }

/* Two's complement wrap-around without signed overflow. */
#define DG_WRAP(op, a, b) ((int64_t)((uint64_t)(a) op (uint64_t)(b)))

/* Div and Mod of one signed width T (W the wrap-around of that width): the
 * int64, int32 and int8 kernels compute alike. */
#define DG_INT_DIV_MOD(sfx, T, W)                                             \
    static inline T div_##sfx(T a, T b)                                       \
    {                                                                         \
        DG_DATA_CHECK(b != 0, "integer Div by zero");                         \
        if (b == 0)                                                           \
            return 0;                                                         \
        if (b == -1)                                                          \
            return W(-, 0, a);                                                \
        return a / b;                                                         \
    }                                                                         \
    static inline T fmod_##sfx(T a, T b)                                      \
    {                                                                         \
        DG_DATA_CHECK(b != 0, "integer Mod by zero");                         \
        if (b == 0 || b == -1)                                                \
            return 0;                                                         \
        return a % b;                                                         \
    }                                                                         \
    static inline T mod_##sfx(T a, T b)                                       \
    {                                                                         \
        const T r = fmod_##sfx(a, b);                                         \
        return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;                  \
    }

/* Pow of one signed width T (U its unsigned twin): int64 and int32 only
 * (ONNX's Pow takes no 8-bit integers). */
#define DG_INT_POW(sfx, T, U)                                                 \
    static inline T pow_##sfx(T base, T e)                                    \
    {                                                                         \
        U acc = 1, b = (U)base;                                               \
        if (e < 0) {                                                          \
            if (base == 1)                                                    \
                return 1;                                                     \
            if (base == -1)                                                   \
                return (e & 1) ? -1 : 1;                                      \
            return 0;                                                         \
        }                                                                     \
        while (e > 0) {                                                       \
            if (e & 1)                                                        \
                acc *= b;                                                     \
            b *= b;                                                           \
            e >>= 1;                                                          \
        }                                                                     \
        return (T)acc;                                                        \
    }

/* The int32 forms: the int64 arithmetic in 32 bits. */
#define DG_WRAP32(op, a, b) ((int32_t)((uint32_t)(a) op (uint32_t)(b)))

/* The int8 forms: the same arithmetic in 8 bits (int8 Add, Sub, Mul wrap as
 * numpy's and onnxruntime's int8 do). */
#define DG_WRAP8(op, a, b) ((int8_t)(uint8_t)((uint32_t)(a) op (uint32_t)(b)))

DG_INT_DIV_MOD(i64, int64_t, DG_WRAP)
DG_INT_DIV_MOD(i32, int32_t, DG_WRAP32)
DG_INT_DIV_MOD(i8, int8_t, DG_WRAP8)
DG_INT_POW(i64, int64_t, uint64_t)
DG_INT_POW(i32, int32_t, uint32_t)

/* uint8: arithmetic modulo 256; Div and Mod as C's on unsigned operands
 * (no sign, so fmod = 0 and fmod = 1 agree). */
#define DG_WRAPU8(op, a, b) ((uint8_t)((uint32_t)(a) op (uint32_t)(b)))

static inline uint8_t div_u8(uint8_t a, uint8_t b)
{
    DG_DATA_CHECK(b != 0, "integer Div by zero");
    return b != 0 ? (uint8_t)(a / b) : 0;
}

static inline uint8_t mod_u8(uint8_t a, uint8_t b)
{
    DG_DATA_CHECK(b != 0, "integer Mod by zero");
    return b != 0 ? (uint8_t)(a % b) : 0;
}

DG_TYPED_BINARY_KERNEL(dg_add_i64, int64_t, int64_t, int64_t, DG_FAULT_I, DG_FAULT_ADD, DG_WRAP(+, va, vb))
DG_TYPED_BINARY_KERNEL(dg_sub_i64, int64_t, int64_t, int64_t, DG_FAULT_I, DG_FAULT_SUB, DG_WRAP(-, va, vb))
DG_TYPED_BINARY_KERNEL(dg_mul_i64, int64_t, int64_t, int64_t, DG_FAULT_I, DG_FAULT_MUL, DG_WRAP(*, va, vb))
DG_TYPED_BINARY_KERNEL(dg_div_i64, int64_t, int64_t, int64_t, DG_FAULT_I, DG_FAULT_DIV, div_i64(va, vb))
DG_TYPED_BINARY_KERNEL(dg_pow_i64, int64_t, int64_t, int64_t, DG_FAULT_I, DG_FAULT_POW, pow_i64(va, vb))
DG_TYPED_BINARY_KERNEL(dg_mod_i64, int64_t, int64_t, int64_t, DG_FAULT_I, DG_FAULT_MOD, mod_i64(va, vb))
DG_TYPED_BINARY_KERNEL(dg_fmod_i64, int64_t, int64_t, int64_t, DG_FAULT_I, DG_FAULT_MOD, fmod_i64(va, vb))
DG_TYPED_BINARY_KERNEL(dg_pow_i64_f32, int64_t, float, int64_t, DG_FAULT_I, DG_FAULT_POW,
                       dg_f64_to_i64(pow((double)va, (double)vb)))
DG_TYPED_BINARY_KERNEL(dg_pow_f32_i64, float, int64_t, float, DG_FAULT, DG_FAULT_POW,
                       (float)pow((double)va, (double)vb))

DG_TYPED_BINARY_KERNEL(dg_add_i32, int32_t, int32_t, int32_t, DG_FAULT_I, DG_FAULT_ADD, DG_WRAP32(+, va, vb))
DG_TYPED_BINARY_KERNEL(dg_sub_i32, int32_t, int32_t, int32_t, DG_FAULT_I, DG_FAULT_SUB, DG_WRAP32(-, va, vb))
DG_TYPED_BINARY_KERNEL(dg_mul_i32, int32_t, int32_t, int32_t, DG_FAULT_I, DG_FAULT_MUL, DG_WRAP32(*, va, vb))
DG_TYPED_BINARY_KERNEL(dg_div_i32, int32_t, int32_t, int32_t, DG_FAULT_I, DG_FAULT_DIV, div_i32(va, vb))
DG_TYPED_BINARY_KERNEL(dg_pow_i32, int32_t, int32_t, int32_t, DG_FAULT_I, DG_FAULT_POW, pow_i32(va, vb))
DG_TYPED_BINARY_KERNEL(dg_mod_i32, int32_t, int32_t, int32_t, DG_FAULT_I, DG_FAULT_MOD, mod_i32(va, vb))
DG_TYPED_BINARY_KERNEL(dg_fmod_i32, int32_t, int32_t, int32_t, DG_FAULT_I, DG_FAULT_MOD, fmod_i32(va, vb))
DG_TYPED_BINARY_KERNEL(dg_pow_i32_f32, int32_t, float, int32_t, DG_FAULT_I, DG_FAULT_POW,
                       dg_f64_to_i32(pow((double)va, (double)vb)))
DG_TYPED_BINARY_KERNEL(dg_pow_f32_i32, float, int32_t, float, DG_FAULT, DG_FAULT_POW,
                       (float)pow((double)va, (double)vb))

DG_TYPED_BINARY_KERNEL(dg_add_i8, int8_t, int8_t, int8_t, DG_FAULT_I, DG_FAULT_ADD, DG_WRAP8(+, va, vb))
DG_TYPED_BINARY_KERNEL(dg_sub_i8, int8_t, int8_t, int8_t, DG_FAULT_I, DG_FAULT_SUB, DG_WRAP8(-, va, vb))
DG_TYPED_BINARY_KERNEL(dg_mul_i8, int8_t, int8_t, int8_t, DG_FAULT_I, DG_FAULT_MUL, DG_WRAP8(*, va, vb))
DG_TYPED_BINARY_KERNEL(dg_div_i8, int8_t, int8_t, int8_t, DG_FAULT_I, DG_FAULT_DIV, div_i8(va, vb))
DG_TYPED_BINARY_KERNEL(dg_mod_i8, int8_t, int8_t, int8_t, DG_FAULT_I, DG_FAULT_MOD, mod_i8(va, vb))
DG_TYPED_BINARY_KERNEL(dg_fmod_i8, int8_t, int8_t, int8_t, DG_FAULT_I, DG_FAULT_MOD, fmod_i8(va, vb))

DG_TYPED_BINARY_KERNEL(dg_add_u8, uint8_t, uint8_t, uint8_t, DG_FAULT_I, DG_FAULT_ADD, DG_WRAPU8(+, va, vb))
DG_TYPED_BINARY_KERNEL(dg_sub_u8, uint8_t, uint8_t, uint8_t, DG_FAULT_I, DG_FAULT_SUB, DG_WRAPU8(-, va, vb))
DG_TYPED_BINARY_KERNEL(dg_mul_u8, uint8_t, uint8_t, uint8_t, DG_FAULT_I, DG_FAULT_MUL, DG_WRAPU8(*, va, vb))
DG_TYPED_BINARY_KERNEL(dg_div_u8, uint8_t, uint8_t, uint8_t, DG_FAULT_I, DG_FAULT_DIV, div_u8(va, vb))
DG_TYPED_BINARY_KERNEL(dg_mod_u8, uint8_t, uint8_t, uint8_t, DG_FAULT_I, DG_FAULT_MOD, mod_u8(va, vb))
DG_TYPED_BINARY_KERNEL(dg_fmod_u8, uint8_t, uint8_t, uint8_t, DG_FAULT_I, DG_FAULT_MOD, mod_u8(va, vb))

/* ---- variadic Max / Min on int64, int32, int8 and uint8 ------------------- */
#define DG_VARIADIC(NAME, T)                                                    \
    static void NAME(const dg_variadic_typed_args_t *p, int is_max, int fault)  \
    {                                                                           \
        const T *const *x = (const T *const *)p->x;                             \
        T *y = (T *)p->y;                                                       \
        (void)fault;                                                            \
        DG_VARIADIC_WALK(p, T, x, y, DG_FAULT_I, fault,                         \
                         if (is_max ? v > acc : v < acc) acc = v);              \
    }

DG_VARIADIC(variadic_i64, int64_t)
DG_VARIADIC(variadic_i32, int32_t)
DG_VARIADIC(variadic_i8, int8_t)
DG_VARIADIC(variadic_u8, uint8_t)

void dg_max_i64(void *args)
{
    variadic_i64((const dg_variadic_typed_args_t *)args, 1, DG_FAULT_MAX);
}

void dg_min_i64(void *args)
{
    variadic_i64((const dg_variadic_typed_args_t *)args, 0, DG_FAULT_MIN);
}

void dg_max_i32(void *args)
{
    variadic_i32((const dg_variadic_typed_args_t *)args, 1, DG_FAULT_MAX);
}

void dg_min_i32(void *args)
{
    variadic_i32((const dg_variadic_typed_args_t *)args, 0, DG_FAULT_MIN);
}

void dg_max_i8(void *args)
{
    variadic_i8((const dg_variadic_typed_args_t *)args, 1, DG_FAULT_MAX);
}

void dg_min_i8(void *args)
{
    variadic_i8((const dg_variadic_typed_args_t *)args, 0, DG_FAULT_MIN);
}

void dg_max_u8(void *args)
{
    variadic_u8((const dg_variadic_typed_args_t *)args, 1, DG_FAULT_MAX);
}

void dg_min_u8(void *args)
{
    variadic_u8((const dg_variadic_typed_args_t *)args, 0, DG_FAULT_MIN);
}

/* ---- Clip and Relu on int8 and uint8 --------------------------------------- */
/* Bounds compared in int32: an absent bound is the type's own limit. */
#define DG_CLIP_BOUND(T, ptr, has, v, none) ((ptr) ? (int32_t) * (const T *)(ptr) : (has) ? (v) : (none))
#define DG_CLIP_KERNEL(name, T, LOWEST, HIGHEST)                                     \
    void name(void *args)                                                            \
    {                                                                                \
        const dg_clip_typed_args_t *p = (const dg_clip_typed_args_t *)args;          \
        const T *x = (const T *)p->x;                                                \
        T *y = (T *)p->y;                                                            \
        const int32_t lo = DG_CLIP_BOUND(T, p->min_ptr, p->has_min, p->min, LOWEST); \
        const int32_t hi = DG_CLIP_BOUND(T, p->max_ptr, p->has_max, p->max, HIGHEST); \
        dg_range_t r = dg_split(p->n);                                               \
        uint32_t i;                                                                  \
        for (i = r.start; i < r.end; i++) {                                          \
            int32_t v = x[i];                                                        \
            v = v < lo ? lo : v;                                                     \
            v = v > hi ? hi : v;                                                     \
            y[i] = (T)DG_FAULT_I(DG_FAULT_CLIP, v);                                  \
        }                                                                            \
    }

DG_CLIP_KERNEL(dg_clip_i8, int8_t, INT8_MIN, INT8_MAX)
DG_CLIP_KERNEL(dg_clip_u8, uint8_t, 0, UINT8_MAX)

void dg_relu_i8(void *args)
{
    const dg_unary_typed_args_t *p = (const dg_unary_typed_args_t *)args;
    const int8_t *x = (const int8_t *)p->x;
    int8_t *y = (int8_t *)p->y;
    dg_range_t r = dg_split(p->n);
    uint32_t i;
    for (i = r.start; i < r.end; i++)
        y[i] = (int8_t)DG_FAULT_I(DG_FAULT_RELU, x[i] > 0 ? x[i] : 0);
}

/* ---- ReduceMax on int64 and bool --------------------------------------------
 * As dg_reduce_max_f32: outputs split across cores, each scans its elements
 * in row-major order. */
#define DG_REDUCE_MAX_KERNEL(name, T, MAX)                                           \
    void name(void *args)                                                            \
    {                                                                                \
        const dg_reduce_typed_args_t *p = (const dg_reduce_typed_args_t *)args;      \
        const T *x = (const T *)p->x;                                                \
        T *y = (T *)p->y;                                                            \
        uint32_t n_out = 1, n_red = 1, d, o, k;                                      \
        dg_range_t r;                                                                \
        for (d = 0; d < p->nkeep; d++)                                               \
            n_out *= p->keep_shape[d];                                               \
        for (d = 0; d < p->nred; d++)                                                \
            n_red *= p->red_shape[d];                                                \
        DG_CHECK(n_red > 0, "ReduceMax over an empty set");                          \
        r = dg_split(n_out);                                                         \
        for (o = r.start; o < r.end; o++) {                                          \
            uint32_t rem = o, idx[DG_MAX_DIMS], off = 0;                             \
            T acc;                                                                   \
            for (d = p->nkeep; d-- > 0;) {                                           \
                off += (rem % p->keep_shape[d]) * p->keep_strides[d];                \
                rem /= p->keep_shape[d];                                             \
            }                                                                        \
            for (d = 0; d < p->nred; d++)                                            \
                idx[d] = 0;                                                          \
            acc = x[off];                                                            \
            for (k = 0; k < n_red; k++) {                                            \
                acc = MAX(acc, x[off]);                                              \
                for (d = p->nred; d-- > 0;) {                                        \
                    off += p->red_strides[d];                                        \
                    if (++idx[d] < p->red_shape[d])                                  \
                        break;                                                       \
                    off -= p->red_strides[d] * p->red_shape[d];                      \
                    idx[d] = 0;                                                      \
                }                                                                    \
            }                                                                        \
            y[o] = (T)DG_FAULT_I(DG_FAULT_REDUCE_MAX, acc);                          \
        }                                                                            \
    }

#define DG_MAX_I64(a, v) ((v) > (a) ? (v) : (a))
#define DG_ANY(a, v) ((uint8_t)((a) != 0 || (v) != 0))

DG_REDUCE_MAX_KERNEL(dg_reduce_max_i64, int64_t, DG_MAX_I64)
DG_REDUCE_MAX_KERNEL(dg_reduce_max_bool, uint8_t, DG_ANY)

/* MatMul on int32: each output the sum over k in order, wrapping as
 * two's complement; the batch * m output rows are split. */
void dg_matmul_i32(void *args)
{
    const dg_matmul_args_t *p = (const dg_matmul_args_t *)args;
    const int32_t *A = (const int32_t *)(const void *)p->a;
    const int32_t *B = (const int32_t *)(const void *)p->b;
    int32_t *Y = (int32_t *)(void *)p->y;
    dg_range_t r = dg_split(p->batch * p->m);
    uint32_t row, j, k;
    for (row = r.start; row < r.end; row++) {
        uint32_t aoff, boff;
        dg_matmul_batch(p, row / p->m, &aoff, &boff);
        aoff += (row % p->m) * p->k;
        for (j = 0; j < p->n; j++) {
            uint32_t acc = p->accumulate ? (uint32_t)Y[row * p->n + j] : 0u;
            for (k = 0; k < p->k; k++)
                acc += (uint32_t)A[aoff + k] * (uint32_t)B[boff + k * p->n + j];
            Y[row * p->n + j] = DG_FAULT_I(DG_FAULT_MATMUL, (int32_t)acc);
        }
    }
}
