/*
 * Tests of runtime/pmsis-host and runtime/mem (dg_mem).
 *
 *   emu_tests HEXDIR            run every test; HEXDIR is a scratch folder
 *   emu_tests HEXDIR --death X  run one scenario that must abort (see below)
 *
 * The expected controller core id comes from the platform define of this
 * build, never from the emulation under test.
 */
#include "dg_kernels.h"
#include "dg_mem.h"
#include "pmsis.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPECTED_CC_ID DG_CHIP_CONTROLLER_CORE_ID

static struct pi_device cluster;
static const char *hexdir;
static int n_pass, n_fail;

#define CHECK(cond, ...)                   \
    do {                                   \
        if (!(cond)) {                     \
            printf("  check failed: ");    \
            printf(__VA_ARGS__);           \
            printf("\n");                  \
            return 1;                      \
        }                                  \
    } while (0)

static void report(const char *name, int failed)
{
    printf("%s %s\n", failed ? "FAIL" : "ok  ", name);
    if (failed)
        n_fail++;
    else
        n_pass++;
}

static void send(void (*entry)(void *), void *arg)
{
    struct pi_cluster_task task;
    pi_cluster_send_task_to_cl(&cluster, pi_cluster_task(&task, entry, arg));
}

static void sleep_us(long us)
{
    struct timespec ts;
    ts.tv_sec = us / 1000000;
    ts.tv_nsec = (us % 1000000) * 1000;
    nanosleep(&ts, NULL);
}

/* ---- core ids ------------------------------------------------------------------ */
typedef struct {
    int entered;
    uint32_t core, cluster_id;
    int is_fc;
    int guarded_ran;
} cc_probe_t;

static void cc_entry(void *arg)
{
    cc_probe_t *p = (cc_probe_t *)arg;
    p->entered++;
    p->core = pi_core_id();
    p->cluster_id = pi_cluster_id();
    p->is_fc = pi_is_fc();
}

/* The seed bug: a comparison guarded as if it ran on core 0. */
static void guarded_compare(void *arg)
{
    cc_probe_t *p = (cc_probe_t *)arg;
    if (pi_core_id() != 0)
        return;
    p->guarded_ran = 1;
}

static int test_core_ids(void)
{
    cc_probe_t p;
    memset(&p, 0, sizeof p);
    CHECK(pi_is_fc(), "main thread is not the fabric controller");
    CHECK(pi_cluster_id() != 0, "fabric controller reports cluster id 0");
    send(cc_entry, &p);
    CHECK(p.entered == 1, "cluster task entered %d times, expected once", p.entered);
    CHECK(p.core == EXPECTED_CC_ID, "controller core id %u, expected %u (%s)", p.core,
          EXPECTED_CC_ID, DG_HOST_PLATFORM_NAME);
    CHECK(p.cluster_id == 0, "controller cluster id %u", p.cluster_id);
    CHECK(!p.is_fc, "controller believes it is the fabric controller");
    send(guarded_compare, &p);
#if DG_CHIP_CONTROLLER_CORE_ID != 0
    CHECK(!p.guarded_ran, "a core-0 guard ran on the controller (its id must be %u)", EXPECTED_CC_ID);
#else
    CHECK(p.guarded_ran, "a core-0 guard did not run on the controller (its id must be 0)");
#endif
    return 0;
}

/* ---- forks ------------------------------------------------------------------------ */
typedef struct {
    int hits[16];
    int team[16];
    int bad;
    int n;
} fork_probe_t;

static void fork_body(void *arg)
{
    fork_probe_t *p = (fork_probe_t *)arg;
    uint32_t id = pi_core_id();
    pi_cl_team_critical_enter();
    if (id < 16) {
        p->hits[id]++;
        p->team[id] = pi_cl_team_nb_cores();
    } else {
        p->bad++;
    }
    pi_cl_team_critical_exit();
}

static void fork_entry(void *arg)
{
    fork_probe_t *p = (fork_probe_t *)arg;
    pi_cl_team_fork(p->n, fork_body, p);
}

static void fork_default_entry(void *arg)
{
    fork_probe_t *p = (fork_probe_t *)arg;
    pi_cl_team_fork(3, fork_body, p);
    memset(p->hits, 0, sizeof p->hits);
    pi_cl_team_fork(0, fork_body, p); /* 0: reuse the previous team (3) */
}

static int test_fork_ids(void)
{
    fork_probe_t p;
    int i, n;
    int sizes[3] = {8, 1, 5};
    CHECK(pi_cl_cluster_nb_cores() == 8, "cluster has %d cores", pi_cl_cluster_nb_cores());
    for (n = 0; n < 3; n++) {
        memset(&p, 0, sizeof p);
        p.n = sizes[n];
        send(fork_entry, &p);
        CHECK(p.bad == 0, "a worker had an id >= 16");
        for (i = 0; i < 16; i++) {
            const int want = i < sizes[n] ? 1 : 0;
            CHECK(p.hits[i] == want, "fork(%d): core %d ran %d times", sizes[n], i, p.hits[i]);
            CHECK(!want || p.team[i] == sizes[n], "fork(%d): team size %d on core %d", sizes[n],
                  p.team[i], i);
        }
    }
    memset(&p, 0, sizeof p);
    send(fork_default_entry, &p);
    for (i = 0; i < 16; i++)
        CHECK(p.hits[i] == (i < 3 ? 1 : 0), "fork(0) after fork(3): core %d ran %d times", i,
              p.hits[i]);
    return 0;
}

/* Which thread runs each core: inline, a fork without a barrier runs every
 * core on the forking thread and one with a barrier only core 0; with
 * threads, every core but a working controller (core 0 on PULP) has its own. */
typedef struct {
    pthread_t caller;
    int on_caller[8];
    int with_barrier;
} thread_probe_t;

static void thread_body(void *arg)
{
    thread_probe_t *p = (thread_probe_t *)arg;
    if (p->with_barrier)
        pi_cl_team_barrier();
    p->on_caller[pi_core_id()] = pthread_equal(pthread_self(), p->caller) ? 1 : 0;
    if (p->with_barrier)
        pi_cl_team_barrier();
}

static void thread_entry(void *arg)
{
    thread_probe_t *p = (thread_probe_t *)arg;
    p->caller = pthread_self();
    pi_cl_team_fork(4, thread_body, p);
}

static int test_fork_threads(void)
{
    thread_probe_t p;
    int b, i, want;
    for (b = 0; b < 2; b++) {
        memset(&p, 0, sizeof p);
        p.with_barrier = b;
        for (i = 0; i < 8; i++)
            p.on_caller[i] = -1;
        send(thread_entry, &p);
        for (i = 0; i < 8; i++) {
            if (i >= 4)
                want = -1;
            else if (dg_host_team_inline())
                want = (i == 0 || !b) ? 1 : 0;
            else
                want = (i == 0 && EXPECTED_CC_ID == 0u) ? 1 : 0;
            CHECK(p.on_caller[i] == want, "%s fork %s a barrier: core %d on the forking thread: %d, want %d",
                  dg_host_team_inline() ? "inline" : "threads", b ? "with" : "without", i,
                  p.on_caller[i], want);
        }
    }
    return 0;
}

/* ---- barrier ----------------------------------------------------------------------- */
#define ROUNDS 20
typedef struct {
    int slot[8];
    int seen_missing;
} barrier_probe_t;

static void barrier_body(void *arg)
{
    barrier_probe_t *p = (barrier_probe_t *)arg;
    const int id = (int)pi_core_id();
    int r, j, missing = 0;
    for (r = 1; r <= ROUNDS; r++) {
        /* late writers: higher ids write later in the first rounds */
        if (r <= 2)
            sleep_us(1500L * id);
        p->slot[id] = r;
        pi_cl_team_barrier();
        for (j = 0; j < 8; j++)
            if (p->slot[j] != r)
                missing++;
        pi_cl_team_barrier();
    }
    if (missing) {
        pi_cl_team_critical_enter();
        p->seen_missing += missing;
        pi_cl_team_critical_exit();
    }
}

static void barrier_entry(void *arg) { pi_cl_team_fork(8, barrier_body, arg); }

static int test_barrier(void)
{
    barrier_probe_t p;
    memset(&p, 0, sizeof p);
    send(barrier_entry, &p);
    CHECK(p.seen_missing == 0, "%d reads after the barrier missed a write made before it",
          p.seen_missing);
    return 0;
}

/* ---- allocators --------------------------------------------------------------------- */
typedef struct {
    int ok;
    char why[160];
} alloc_probe_t;

static void l1_entry(void *arg)
{
    alloc_probe_t *p = (alloc_probe_t *)arg;
    size_t cap, in_use, peak;
    void *a, *b, *c, *d;
    dg_host_mem_stats(1, &in_use, &peak, &cap);
    p->ok = 0;
    a = pi_l1_malloc(NULL, (uint32_t)(cap + 8));
    if (a != NULL) {
        snprintf(p->why, sizeof p->why, "L1 malloc of capacity+8 B returned non-NULL");
        return;
    }
    a = pi_l1_malloc(NULL, (uint32_t)(cap / 2));
    b = pi_l1_malloc(NULL, (uint32_t)(cap / 4));
    c = pi_l1_malloc(NULL, (uint32_t)(cap / 2)); /* does not fit any more */
    if (a == NULL || b == NULL || c != NULL) {
        snprintf(p->why, sizeof p->why, "L1 first-fit: a=%p b=%p c=%p", a, b, c);
        return;
    }
    if (dg_mem_level(a) != DG_LEVEL_L1) {
        snprintf(p->why, sizeof p->why, "L1 chunk not classified as L1");
        return;
    }
    memset(a, 1, cap / 2);
    memset(b, 2, cap / 4);
    pi_l1_free(NULL, a, (int)(cap / 2));
    pi_l1_free(NULL, b, (int)(cap / 4));
    /* coalesced again: the whole capacity is one block */
    d = pi_l1_malloc(NULL, (uint32_t)cap);
    if (d == NULL) {
        snprintf(p->why, sizeof p->why, "L1 free did not coalesce");
        return;
    }
    pi_l1_free(NULL, d, (int)cap);
    p->ok = 1;
}

static int test_l1_capacity(void)
{
    alloc_probe_t p;
    size_t peak;
    memset(&p, 0, sizeof p);
    send(l1_entry, &p);
    CHECK(p.ok, "%s", p.why);
    dg_host_mem_stats(1, NULL, &peak, NULL);
    CHECK(peak > 0, "L1 peak not recorded");
    return 0;
}

static int test_l2_capacity(void)
{
    size_t cap, in_use, peak;
    void *a, *b;
    static const uint8_t data[3] = {1, 2, 3};
    dg_host_mem_stats(2, &in_use, &peak, &cap);
    CHECK(pi_l2_malloc((int)(cap + 1)) == NULL, "L2 malloc above capacity returned non-NULL");
    a = pi_l2_malloc(100);
    CHECK(a != NULL, "L2 malloc of 100 B failed");
    CHECK(dg_mem_level(a) == DG_LEVEL_L2, "L2 chunk not classified as L2");
    CHECK(dg_mem_level(data) == DG_LEVEL_L2, "static data not classified as L2");
    b = pi_l2_malloc((int)(cap - 104)); /* 100 rounds up to 104 */
    CHECK(b != NULL, "L2 cannot hold capacity minus the first chunk");
    CHECK(pi_l2_malloc(8) == NULL, "L2 over-allocated");
    pi_l2_free(a, 100);
    pi_l2_free(b, (int)(cap - 104));
    dg_host_mem_stats(2, &in_use, &peak, NULL);
    CHECK(in_use == 0, "L2 in use after freeing everything: %zu", in_use);
    CHECK(peak == cap, "L2 peak %zu, expected %zu", peak, cap);
    return 0;
}

/* ---- L3 ---------------------------------------------------------------------------- */
#define HEX_BYTES 9001u /* odd, and larger than the 8 KiB copy stage */

typedef struct {
    int ok;
    char why[160];
    uint8_t *ref;
} l3_probe_t;

static int l3_roundtrip(l3_probe_t *p)
{
    uint8_t *l2 = (uint8_t *)pi_l2_malloc(HEX_BYTES);
    void *l3a = dg_l3_malloc(HEX_BYTES), *l3b = dg_l3_malloc(HEX_BYTES);
    size_t got;
    if (!l2 || !l3a || !l3b) {
        snprintf(p->why, sizeof p->why, "allocation failed");
        return 0;
    }
    if (dg_mem_level(l3a) != DG_LEVEL_L3) {
        snprintf(p->why, sizeof p->why, "L3 buffer not classified as L3");
        return 0;
    }
    got = dg_load_file_to_l3(l3a, "7.hex", HEX_BYTES);
    if (got != HEX_BYTES) {
        snprintf(p->why, sizeof p->why, "loaded %zu bytes, expected %u", got, HEX_BYTES);
        return 0;
    }
    dg_copy(l3b, l3a, HEX_BYTES); /* L3 -> L3 through the stage */
    memset(l2, 0, HEX_BYTES);
    dg_copy(l2, l3b, HEX_BYTES); /* L3 -> L2 */
    if (memcmp(l2, p->ref, HEX_BYTES) != 0) {
        snprintf(p->why, sizeof p->why, "hex file did not round-trip through L3");
        return 0;
    }
    l2[HEX_BYTES - 1] ^= 0x5A;
    dg_copy(l3a, l2, HEX_BYTES); /* L2 -> L3 */
    memset(l2, 0, HEX_BYTES);
    dg_l3_read(l2, l3a, HEX_BYTES);
    if (l2[HEX_BYTES - 1] != (uint8_t)(p->ref[HEX_BYTES - 1] ^ 0x5A) ||
        memcmp(l2, p->ref, HEX_BYTES - 1) != 0) {
        snprintf(p->why, sizeof p->why, "L2 -> L3 -> L2 copy lost data");
        return 0;
    }
    dg_l3_free(l3a, HEX_BYTES);
    dg_l3_free(l3b, HEX_BYTES);
    pi_l2_free(l2, HEX_BYTES);
    return 1;
}

static void l3_entry(void *arg)
{
    l3_probe_t *p = (l3_probe_t *)arg;
    p->ok = l3_roundtrip(p); /* from the cluster: pi_cl_ram_* */
}

static int test_hex_l3(void)
{
    char path[1024];
    FILE *f;
    l3_probe_t p;
    unsigned i;
    size_t cap;
    memset(&p, 0, sizeof p);
    p.ref = (uint8_t *)malloc(HEX_BYTES);
    for (i = 0; i < HEX_BYTES; i++)
        p.ref[i] = (uint8_t)(i * 37u + 11u);
    snprintf(path, sizeof path, "%s/7.hex", hexdir);
    f = fopen(path, "wb");
    CHECK(f != NULL, "cannot write %s", path);
    fwrite(p.ref, 1, HEX_BYTES, f);
    fclose(f);
    CHECK(dg_mem_init() == 0, "dg_mem_init failed");
    /* from the fabric controller: pi_ram_* */
    p.ok = l3_roundtrip(&p);
    CHECK(p.ok, "FC: %s", p.why);
    send(l3_entry, &p);
    CHECK(p.ok, "cluster: %s", p.why);
    dg_host_mem_stats(3, NULL, NULL, &cap);
    CHECK(dg_l3_malloc(cap + 1) == NULL, "L3 malloc above capacity returned non-NULL");
    CHECK(dg_load_file_to_l3(dg_l3_malloc(16), "7.hex", 16) == (size_t)-1,
          "a file larger than its L3 buffer was accepted");
    free(p.ref);
    return 0;
}

/* L3 <-> L1 on the cluster through the two-half stage: sizes that end
 * inside a half, on a half and after several, each with a lost wait
 * showing as wrong bytes (the emulation completes transfers at random). */
#define L1COPY_MAX 10001u
static int l1copy_ok;
static char l1copy_why[160];

/* Byte i of case `seed`: no period, so a chunk landing in another's place shows. */
static uint8_t l1copy_byte(uint32_t i, uint32_t seed) { return (uint8_t)(((i + seed) * 2654435761u) >> 24); }

static int l1copy_one(uint8_t *l2, uint8_t *l1, void *l3, uint32_t n, uint32_t seed)
{
    uint32_t i;
    for (i = 0; i < n; i++)
        l2[i] = l1copy_byte(i, seed);
    dg_l3_write(l3, l2, n);
    memset(l1, 0, n);
    dg_copy(l1, l3, n); /* L3 -> L1 */
    for (i = 0; i < n; i++)
        if (l1[i] != l1copy_byte(i, seed)) {
            snprintf(l1copy_why, sizeof l1copy_why, "L3 -> L1 of %u B: byte %u is %u", n, i, l1[i]);
            return 0;
        }
    for (i = 0; i < n; i++)
        l1[i] ^= 0xA5;
    dg_copy(l3, l1, n); /* L1 -> L3 */
    memset(l2, 0, n);
    dg_l3_read(l2, l3, n);
    for (i = 0; i < n; i++)
        if (l2[i] != (uint8_t)(l1copy_byte(i, seed) ^ 0xA5u)) {
            snprintf(l1copy_why, sizeof l1copy_why, "L1 -> L3 of %u B: byte %u is %u", n, i, l2[i]);
            return 0;
        }
    return 1;
}

static void l1copy_entry(void *arg)
{
    static const uint32_t sizes[] = {300u, 4096u, 8192u, L1COPY_MAX};
    uint8_t *l2 = (uint8_t *)pi_l2_malloc(L1COPY_MAX), *l1 = (uint8_t *)pi_l1_malloc(NULL, L1COPY_MAX);
    void *l3 = dg_l3_malloc(L1COPY_MAX);
    uint32_t s;
    (void)arg;
    l1copy_ok = l2 != NULL && l1 != NULL && l3 != NULL;
    if (!l1copy_ok)
        snprintf(l1copy_why, sizeof l1copy_why, "allocation failed");
    for (s = 0; l1copy_ok && s < sizeof sizes / sizeof sizes[0]; s++)
        l1copy_ok = l1copy_one(l2, l1, l3, sizes[s], s);
    dg_l3_free(l3, L1COPY_MAX);
    pi_l1_free(NULL, l1, L1COPY_MAX);
    pi_l2_free(l2, L1COPY_MAX);
}

static int test_l3_l1_copy(void)
{
    CHECK(dg_mem_init() == 0, "dg_mem_init failed");
    send(l1copy_entry, NULL);
    CHECK(l1copy_ok, "%s", l1copy_why);
    return 0;
}

/* ---- a kernel through the whole path ---------------------------------------------- */
static float kx[1000], ky[1000];
static void relu_entry(void *arg)
{
    pi_cl_team_fork(0, dg_relu_f32, arg);
}

static int test_kernel_default_team(void)
{
    dg_unary_args_t a;
    int i;
    for (i = 0; i < 1000; i++) {
        kx[i] = (float)(i % 7) - 3.0f;
        ky[i] = -1.0f;
    }
    a.x = kx;
    a.y = ky;
    a.n = 1000;
    send(relu_entry, &a);
    for (i = 0; i < 1000; i++)
        CHECK(ky[i] == (kx[i] > 0 ? kx[i] : 0.0f), "relu[%d] = %g", i, (double)ky[i]);
    return 0;
}

/* ---- scenarios that must abort --------------------------------------------------- */
static void kernel_without_fork(void *arg) { dg_relu_f32(arg); }

/* Core 0 never reaches the barrier core 1 waits at: a deadlock on the chip. */
static void late_barrier_body(void *arg)
{
    (void)arg;
    if (pi_core_id() == 1)
        pi_cl_team_barrier();
}
static void late_barrier_entry(void *arg) { pi_cl_team_fork(2, late_barrier_body, arg); }

/* Two cluster-RAM reads in flight at once: Siracusa's RAM driver takes one. */
static void *ram_overlap_l3;
static void ram_overlap_entry(void *arg)
{
    static uint8_t a[16], b[16];
    pi_cl_ram_req_t ra, rb;
    uint32_t l3 = (uint32_t)(uintptr_t)ram_overlap_l3;
    (void)arg;
    pi_cl_ram_read((struct pi_device *)NULL, l3, a, sizeof a, &ra);
    pi_cl_ram_read((struct pi_device *)NULL, l3 + 16, b, sizeof b, &rb);
    pi_cl_ram_read_wait(&ra);
    pi_cl_ram_read_wait(&rb);
}

static int death(const char *what)
{
    if (!strcmp(what, "l3_oob")) {
        uint8_t buf[64];
        void *l3;
        dg_mem_init();
        l3 = dg_l3_malloc(32);
        dg_l3_read(buf, l3, 64); /* past the end of its allocation */
    } else if (!strcmp(what, "kernel_outside_fork")) {
        dg_unary_args_t a;
        a.x = kx;
        a.y = ky;
        a.n = 10;
        send(kernel_without_fork, &a);
    } else if (!strcmp(what, "fork_from_fc")) {
        pi_cl_team_fork(8, fork_body, NULL);
    } else if (!strcmp(what, "late_barrier")) {
        if (!dg_host_team_inline()) {
            printf("scenario late_barrier needs the inline team (it hangs with threads)\n");
            return 2;
        }
        send(late_barrier_entry, NULL);
    } else if (!strcmp(what, "ram_overlap")) {
        dg_mem_init();
        ram_overlap_l3 = dg_l3_malloc(32);
        send(ram_overlap_entry, NULL);
    } else if (!strcmp(what, "l2_free_wrong_size")) {
        void *p = pi_l2_malloc(64);
        pi_l2_free(p, 128);
    } else {
        printf("unknown death scenario %s\n", what);
        return 2;
    }
    printf("scenario %s did not abort\n", what);
    return 0;
}

int main(int argc, char **argv)
{
    struct pi_cluster_conf conf;
    if (argc < 2) {
        fprintf(stderr, "usage: %s HEXDIR [--death SCENARIO]\n", argv[0]);
        return 2;
    }
    hexdir = argv[1];
    setenv("DG_HEX_DIR", hexdir, 1);
    pi_cluster_conf_init(&conf);
    pi_open_from_conf(&cluster, &conf);
    if (pi_cluster_open(&cluster) != 0)
        return 2;
    if (argc == 4 && !strcmp(argv[2], "--death"))
        return death(argv[3]);

    printf("platform: %s\n", DG_HOST_PLATFORM_NAME);
    report("core_ids", test_core_ids());
    report("fork_ids", test_fork_ids());
    report("fork_threads", test_fork_threads());
    report("barrier_orders_writes", test_barrier());
    report("l1_capacity", test_l1_capacity());
    report("l2_capacity", test_l2_capacity());
    report("hex_roundtrip_l3", test_hex_l3());
    report("l3_l1_copy", test_l3_l1_copy());
    report("kernel_default_team", test_kernel_default_team());
    pi_cluster_close(&cluster);
    printf("emulation tests: %d passed, %d failed\n", n_pass, n_fail);
    return n_fail == 0 ? 0 : 1;
}
