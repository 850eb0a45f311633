/*
 * The reference-vector harness shared by the kernel test drivers
 * (kernel_tests.c, kernel_tests_ops.c): case folders, typed arrays,
 * per-core-count runs, tolerance checks, fault injection and the driver's
 * main loop (kt_main). Included once per driver, after pmsis.h and the C
 * headers it needs; each driver's main passes its case table.
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
    if (!strcmp(dt, "u1") || !strcmp(dt, "b1") || !strcmp(dt, "i1"))
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

/* ---- running ------------------------------------------------------------------ */
static void case_entry(void *arg)
{
    tc_t *t = (tc_t *)arg;
    t->fn(t);
}

static struct pi_device g_cluster;

static void run_once(tc_t *t, const case_t *c, int nc)
{
    struct pi_cluster_task task;
    t->nout = 0;
    t->ntemp = 0;
    t->nc = nc;
    t->fn = c->fn;
    pi_cluster_send_task_to_cl(&g_cluster, pi_cluster_task(&task, case_entry, t));
}

static void release_run(tc_t *t)
{
    int i;
    for (i = 0; i < t->nout; i++)
        free(t->outs[i].buf);
    for (i = 0; i < t->ntemp; i++)
        free(t->temps[i]);
    t->nout = 0;
    t->ntemp = 0;
}

/* Returns the number of bad elements over all outputs; reports the worst. */
static size_t compare(tc_t *t, const case_t *c, int verbose, double *max_rel)
{
    size_t bad = 0, i;
    int k;
    *max_rel = 0.0;
    for (k = 0; k < t->nout; k++) {
        const out_t *o = &t->outs[k];
        size_t obad = 0, first = (size_t)-1;
        if (!strcmp(o->ref->dtype, "f4")) {
            const float *got = (const float *)o->buf, *ref = (const float *)o->ref->data;
            for (i = 0; i < o->ref->numel; i++) {
                const double d = fabs((double)got[i] - (double)ref[i]);
                const double tol = (double)c->rtol * fabs((double)ref[i]) + (double)c->atol;
                const double rel = d / (fabs((double)ref[i]) > 1e-30 ? fabs((double)ref[i]) : 1e-30);
                if (!(d <= tol)) {
                    if (first == (size_t)-1)
                        first = i;
                    obad++;
                }
                if (d == d && rel > *max_rel)
                    *max_rel = rel;
            }
            if (obad && verbose)
                printf("  %s: %zu of %zu outside tolerance; first [%zu] got %.9g ref %.9g\n",
                       o->name, obad, o->ref->numel, first, (double)got[first],
                       (double)ref[first]);
        } else {
            if (memcmp(o->buf, o->ref->data, o->ref->bytes) != 0) {
                obad = 1;
                if (verbose)
                    printf("  %s: integer output differs from the reference\n", o->name);
            }
        }
        bad += obad;
    }
    return bad;
}

static int parse_cores(const char *s, int *out, int max)
{
    int n = 0;
    while (*s && n < max) {
        out[n++] = atoi(s);
        while (*s && *s != ',')
            s++;
        if (*s == ',')
            s++;
    }
    return n;
}

/* The driver: runs `cases` as the usage line says; `title` names the
 * summary line. Returns the process exit status. */
static int kt_main(int argc, char **argv, const case_t *cases, int ncases, const char *title)
{
    struct pi_cluster_conf conf;
    static tc_t t;
    const char *root = NULL;
    int cores[8] = {1, 3, 8}, ncores = 3, fault_mode = 0, i, j, k;
    int passed = 0, failed = 0, detected = 0, missed = 0;
    const char *only[128];
    int nonly = 0;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cores") && i + 1 < argc)
            ncores = parse_cores(argv[++i], cores, 8);
        else if (!strcmp(argv[i], "--fault"))
            fault_mode = 1;
        else if (!root)
            root = argv[i];
        else if (nonly < 128)
            only[nonly++] = argv[i];
    }
    if (!root) {
        fprintf(stderr, "usage: %s REFDIR [--cores 1,3,8] [--fault] [CASE...]\n", argv[0]);
        return 2;
    }
#ifndef DG_FAULT_INJECTION
    if (fault_mode) {
        fprintf(stderr, "--fault needs a build with -DDG_FAULT_INJECTION\n");
        return 2;
    }
#endif
    pi_cluster_conf_init(&conf);
    pi_open_from_conf(&g_cluster, &conf);
    if (pi_cluster_open(&g_cluster) != 0)
        return 2;
    printf("cases: %d\n", ncases);

    for (i = 0; i < ncases; i++) {
        const case_t *c = &cases[i];
        int ok = 1;
        if (nonly) {
            for (j = 0; j < nonly && strcmp(only[j], c->name); j++)
                ;
            if (j == nonly)
                continue;
        }
        memset(&t, 0, sizeof t);
        if (load_case(&t, root, c->dir ? c->dir : c->name) != 0) {
            failed++;
            continue;
        }
        if (!fault_mode) {
            void *first[MAX_OUTS];
            size_t first_bytes[MAX_OUTS];
            int nfirst = 0;
            double worst = 0.0, rel = 0.0;
            for (k = 0; k < ncores && ok; k++) {
                run_once(&t, c, cores[k]);
                if (t.failed_setup) {
                    printf("  setup failed\n");
                    ok = 0;
                } else if (compare(&t, c, 1, &rel) != 0) {
                    printf("  (with %d cores)\n", cores[k]);
                    ok = 0;
                } else if (k == 0) {
                    for (j = 0; j < t.nout; j++) {
                        first_bytes[j] = t.outs[j].ref->bytes;
                        first[j] = malloc(first_bytes[j] ? first_bytes[j] : 1);
                        memcpy(first[j], t.outs[j].buf, first_bytes[j]);
                    }
                    nfirst = t.nout;
                } else {
                    for (j = 0; j < t.nout && j < nfirst; j++) {
                        if (memcmp(first[j], t.outs[j].buf, first_bytes[j]) != 0) {
                            printf("  %s: %d cores not bit-identical to %d cores\n",
                                   t.outs[j].name, cores[k], cores[0]);
                            ok = 0;
                        }
                    }
                }
                if (rel > worst)
                    worst = rel;
                release_run(&t);
            }
            for (j = 0; j < nfirst; j++)
                free(first[j]);
            printf("%s %s (max rel err %.2e)\n", ok ? "ok  " : "FAIL", c->name, worst);
            if (ok)
                passed++;
            else
                failed++;
        } else {
#ifdef DG_FAULT_INJECTION
            for (k = 0; k < 6 && c->faults[k] != DG_FAULT_NONE; k++) {
                double rel;
                size_t bad;
                dg_fault_id = c->faults[k];
                run_once(&t, c, cores[ncores - 1]);
                dg_fault_id = DG_FAULT_NONE;
                bad = compare(&t, c, 0, &rel);
                release_run(&t);
                printf("fault %s #%d: %s\n", c->name, c->faults[k], bad ? "detected" : "MISSED");
                if (bad)
                    detected++;
                else
                    missed++;
            }
            if (k == 0) {
                printf("fault %s: no fault listed\n", c->name);
                missed++;
            }
#endif
        }
        free_case(&t);
    }
    pi_cluster_close(&g_cluster);
    if (fault_mode) {
        printf("fault injection: %d detected, %d missed\n", detected, missed);
        return missed == 0 && detected > 0 ? 0 : 1;
    }
    printf("%s: %d passed, %d failed\n", title, passed, failed);
    return failed == 0 && passed > 0 ? 0 : 1;
}

#endif /* DG_REF_HARNESS_H */
