/*
 * The reference-vector harness shared by the kernel test drivers
 * (kernel_tests.c, kernel_tests_wave2.c): case folders, typed arrays,
 * per-core-count runs, tolerance checks and fault injection. Included once
 * per driver, after pmsis.h and the C headers it needs.
 */
#ifndef DG_REF_HARNESS_H
#define DG_REF_HARNESS_H

#define MAX_ARRS 40
#define MAX_OUTS 8
#define MAX_TEMPS 16

typedef struct {
    char key[64];
    char dtype[8];
    int ndim;
    long shape[8];
    size_t numel, bytes;
    void *data;
} arr_t;

typedef struct {
    char name[64];
    void *buf;
    arr_t *ref;
} out_t;

typedef struct tc {
    arr_t arrs[MAX_ARRS];
    int narr;
    out_t outs[MAX_OUTS];
    int nout;
    void *temps[MAX_TEMPS];
    int ntemp;
    int nc;
    int failed_setup;
    void (*fn)(struct tc *);
} tc_t;

typedef struct {
    const char *name;
    const char *dir;
    void (*fn)(tc_t *);
    float rtol, atol;
    int faults[6];
} case_t;

#ifdef DG_FAULT_INJECTION
extern volatile int dg_fault_id;
#endif

/* ---- loading ---------------------------------------------------------------- */
static size_t dtype_size(const char *dt)
{
    if (!strcmp(dt, "f4") || !strcmp(dt, "i4"))
        return 4;
    if (!strcmp(dt, "i8"))
        return 8;
    if (!strcmp(dt, "u1") || !strcmp(dt, "b1"))
        return 1;
    return 0;
}

static int load_case(tc_t *t, const char *root, const char *dir)
{
    char path[1024], line[512];
    FILE *mf, *bf;
    snprintf(path, sizeof path, "%s/%s/manifest.txt", root, dir);
    mf = fopen(path, "r");
    if (!mf) {
        printf("FAIL %s: no reference folder (%s)\n", dir, path);
        return -1;
    }
    t->narr = 0;
    while (fgets(line, sizeof line, mf)) {
        arr_t *a;
        char *tok;
        int d;
        if (t->narr == MAX_ARRS)
            break;
        a = &t->arrs[t->narr];
        memset(a, 0, sizeof *a);
        tok = strtok(line, " \n");
        if (!tok)
            continue;
        snprintf(a->key, sizeof a->key, "%s", tok);
        snprintf(a->dtype, sizeof a->dtype, "%s", strtok(NULL, " \n"));
        a->ndim = atoi(strtok(NULL, " \n"));
        a->numel = 1;
        for (d = 0; d < a->ndim; d++) {
            a->shape[d] = atol(strtok(NULL, " \n"));
            a->numel *= (size_t)a->shape[d];
        }
        a->bytes = a->numel * dtype_size(a->dtype);
        a->data = malloc(a->bytes ? a->bytes : 1);
        snprintf(path, sizeof path, "%s/%s/%s.bin", root, dir, a->key);
        bf = fopen(path, "rb");
        if (!bf || fread(a->data, 1, a->bytes, bf) != a->bytes) {
            printf("FAIL %s: cannot read %s\n", dir, path);
            if (bf)
                fclose(bf);
            fclose(mf);
            return -1;
        }
        fclose(bf);
        t->narr++;
    }
    fclose(mf);
    return 0;
}

static void free_case(tc_t *t)
{
    int i;
    for (i = 0; i < t->narr; i++)
        free(t->arrs[i].data);
    t->narr = 0;
}

static arr_t *find(tc_t *t, const char *prefix, const char *name)
{
    char key[80];
    int i;
    snprintf(key, sizeof key, "%s%s", prefix, name);
    for (i = 0; i < t->narr; i++)
        if (!strcmp(t->arrs[i].key, key))
            return &t->arrs[i];
    return NULL;
}

static arr_t *need(tc_t *t, const char *prefix, const char *name)
{
    arr_t *a = find(t, prefix, name);
    if (!a) {
        printf("  missing array %s%s\n", prefix, name);
        t->failed_setup = 1;
    }
    return a;
}

/* ---- helpers used by the cases ------------------------------------------------ */
static void *temp(tc_t *t, size_t bytes)
{
    void *p = calloc(1, bytes ? bytes : 1);
    if (t->ntemp < MAX_TEMPS)
        t->temps[t->ntemp++] = p;
    return p;
}

/* A fresh copy of input `name` (kernels may write in place). */
static void *in_(tc_t *t, const char *name)
{
    arr_t *a = need(t, "in_", name);
    void *p;
    if (!a)
        return temp(t, 64);
    p = temp(t, a->bytes);
    memcpy(p, a->data, a->bytes);
    return p;
}

static uint32_t numel(tc_t *t, const char *key)
{
    int i;
    for (i = 0; i < t->narr; i++)
        if (!strcmp(t->arrs[i].key, key))
            return (uint32_t)t->arrs[i].numel;
    t->failed_setup = 1;
    return 0;
}

static long pv(tc_t *t, const char *name, size_t i)
{
    arr_t *a = need(t, "p_", name);
    if (!a || i >= a->numel) {
        t->failed_setup = 1;
        return 0;
    }
    return (long)((const int64_t *)a->data)[i];
}

static uint32_t pn(tc_t *t, const char *name)
{
    arr_t *a = need(t, "p_", name);
    return a ? (uint32_t)a->numel : 0;
}

static float fv(tc_t *t, const char *name, size_t i)
{
    arr_t *a = need(t, "f_", name);
    if (!a || i >= a->numel) {
        t->failed_setup = 1;
        return 0.0f;
    }
    return ((const float *)a->data)[i];
}

/* Output buffer for reference out_<name>, filled with 0xFF (NaN / -1) or,
 * with init, with a copy of input `init`. */
static void *out_(tc_t *t, const char *name, const char *init)
{
    arr_t *ref = need(t, "out_", name);
    out_t *o;
    if (!ref || t->nout == MAX_OUTS)
        return temp(t, 64);
    o = &t->outs[t->nout++];
    snprintf(o->name, sizeof o->name, "%s", name);
    o->ref = ref;
    o->buf = malloc(ref->bytes ? ref->bytes : 1);
    memset(o->buf, 0xFF, ref->bytes);
    if (init) {
        arr_t *src = need(t, "in_", init);
        if (src && src->bytes == ref->bytes)
            memcpy(o->buf, src->data, ref->bytes);
        else
            t->failed_setup = 1;
    }
    return o->buf;
}

#define IN(name) ((float *)in_(t, name))
#define OUT(name) ((float *)out_(t, name, NULL))
#define N(key) numel(t, key)
#define P(name, i) ((uint32_t)pv(t, name, i))
#define FORK(kernel, args) pi_cl_team_fork(t->nc, kernel, args)

#endif /* DG_REF_HARNESS_H */
