/*
 * pmsis-host implementation. Build with -std=c99 -D_POSIX_C_SOURCE=200809L
 * -pthread. See pmsis.h and runtime/README.md for the semantics.
 *
 * Test-only fault switches (never set them in a real build); each one breaks
 * a property that runtime/tests/emu_tests.c must catch:
 *   DG_HOST_FAULT_CC_ID0      the GAP9 cluster controller reports core id 0
 *   DG_HOST_FAULT_NO_BARRIER  pi_cl_team_barrier() does nothing
 *   DG_HOST_FAULT_NO_L1_CAP   the L1 allocator ignores its capacity
 *   DG_HOST_FAULT_L3_TRUNC    L3 writes drop their last byte
 */
/* mmap's MAP_ANONYMOUS and MAP_32BIT. */
#define _GNU_SOURCE
#include "pmsis.h"
#include "bsp/bsp.h"
#include "bsp/fs/readfs.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* ---- platform description ------------------------------------------------ */
/* The chip's (runtime/mem/dg_chips.h, from deploygen's platforms.json);
 * generated projects pass their plan's capacities. */
#define DG_HOST_CC_CORE_ID DG_CHIP_CONTROLLER_CORE_ID
#ifndef DG_L1_SIZE
#define DG_L1_SIZE DG_CHIP_L1_SIZE
#endif
#ifndef DG_L2_SIZE
#define DG_L2_SIZE DG_CHIP_L2_SIZE
#endif
#ifndef DG_L3_SIZE
#define DG_L3_SIZE DG_CHIP_L3_SIZE
#endif
#ifndef DG_CLUSTER_CORES
#define DG_CLUSTER_CORES 8
#endif
#ifndef DG_L3_BASE
#define DG_L3_BASE 0x80000000u /* L3 addresses live in their own window */
#endif
#define DG_HOST_FC_CLUSTER_ID 31u
#define DG_HOST_ALIGN 8u

#ifdef DG_HOST_FAULT_CC_ID0
#undef DG_HOST_CC_CORE_ID
#define DG_HOST_CC_CORE_ID 0u
#endif

/* SDK allocator numbers as they appear in "Allocation failed for allocator N"
 * (2 is the cluster L1 allocator on GAP9). */
#define DG_SDK_ALLOC_L2 0
#define DG_SDK_ALLOC_L1 2

void dg_host_fatal(const char *msg)
{
    fprintf(stderr, "[pmsis-host] FATAL: %s\n", msg);
    fflush(stdout);
    fflush(stderr);
    abort();
}

/* ---- first-fit heap with coalescing free ------------------------------- */
typedef struct dg_block {
    size_t off, size;
    struct dg_block *next;
} dg_block_t;

typedef struct {
    const char *name;
    int level;
    size_t cap;
    uint8_t *mem;      /* host backing store */
    dg_block_t *free_list; /* sorted by offset */
    dg_block_t *used;      /* live allocations */
    size_t in_use, peak;
    unsigned long n_alloc, n_fail;
    pthread_mutex_t lock;
} dg_heap_t;

static dg_heap_t g_l1 = {"L1", 1, 0, NULL, NULL, NULL, 0, 0, 0, 0, PTHREAD_MUTEX_INITIALIZER};
static dg_heap_t g_l2 = {"L2", 2, 0, NULL, NULL, NULL, 0, 0, 0, 0, PTHREAD_MUTEX_INITIALIZER};
static dg_heap_t g_l3 = {"L3", 3, 0, NULL, NULL, NULL, 0, 0, 0, 0, PTHREAD_MUTEX_INITIALIZER};

static size_t env_size(const char *name, size_t dflt)
{
    const char *s = getenv(name);
    char *end = NULL;
    unsigned long long v;
    if (s == NULL || *s == '\0')
        return dflt;
    errno = 0;
    v = strtoull(s, &end, 0);
    if (errno != 0 || end == s || *end != '\0' || v == 0) {
        fprintf(stderr, "[pmsis-host] ignoring %s=%s (not a positive byte count)\n", name, s);
        return dflt;
    }
    return (size_t)v;
}

static void heap_reset_lists(dg_heap_t *h)
{
    dg_block_t *b;
    while (h->free_list) {
        b = h->free_list->next;
        free(h->free_list);
        h->free_list = b;
    }
    while (h->used) {
        b = h->used->next;
        free(h->used);
        h->used = b;
    }
    h->free_list = (dg_block_t *)malloc(sizeof(dg_block_t));
    if (!h->free_list)
        dg_host_fatal("out of host memory");
    h->free_list->off = 0;
    h->free_list->size = h->cap;
    h->free_list->next = NULL;
    h->in_use = 0;
}

/* Memory whose addresses fit in 32 bits, as the chips' (the cluster DMA
 * takes uint32_t addresses); NULL when the host cannot give any. */
static void *low_alloc(size_t cap)
{
#ifdef MAP_32BIT
    void *p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    return p == MAP_FAILED ? NULL : p;
#else
    void *p = mmap((void *)(uintptr_t)0x40000000u, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    if ((uintptr_t)p + cap > 0xFFFFFFFFu) {
        munmap(p, cap);
        return NULL;
    }
    return p;
#endif
}

static void heap_init(dg_heap_t *h, size_t cap, int backing)
{
    h->cap = cap;
    if (backing) {
        h->mem = (uint8_t *)low_alloc(cap);
        if (!h->mem)
            dg_host_fatal("cannot allocate host backing store for an emulated memory level");
        memset(h->mem, 0xA5, cap); /* memory is not zero at boot */
    }
    heap_reset_lists(h);
}

/* Returns the offset, or (size_t)-1 when no free block is large enough. */
static size_t heap_alloc(dg_heap_t *h, size_t size)
{
    dg_block_t **pp, *b, *u;
    size_t off;
    if (size == 0)
        size = 1;
    size = (size + DG_HOST_ALIGN - 1) & ~(size_t)(DG_HOST_ALIGN - 1);
    pthread_mutex_lock(&h->lock);
    for (pp = &h->free_list; *pp; pp = &(*pp)->next) {
        if ((*pp)->size >= size)
            break;
    }
    if (*pp == NULL) {
        h->n_fail++;
        pthread_mutex_unlock(&h->lock);
        return (size_t)-1;
    }
    b = *pp;
    off = b->off;
    b->off += size;
    b->size -= size;
    if (b->size == 0) {
        *pp = b->next;
        free(b);
    }
    u = (dg_block_t *)malloc(sizeof(dg_block_t));
    if (!u)
        dg_host_fatal("out of host memory");
    u->off = off;
    u->size = size;
    u->next = h->used;
    h->used = u;
    h->in_use += size;
    if (h->in_use > h->peak)
        h->peak = h->in_use;
    h->n_alloc++;
    pthread_mutex_unlock(&h->lock);
    return off;
}

static void heap_free(dg_heap_t *h, size_t off, size_t size)
{
    dg_block_t **pp, *u, *prev, *cur, *nb;
    char msg[160];
    if (size == 0)
        size = 1;
    size = (size + DG_HOST_ALIGN - 1) & ~(size_t)(DG_HOST_ALIGN - 1);
    pthread_mutex_lock(&h->lock);
    for (pp = &h->used; *pp; pp = &(*pp)->next) {
        if ((*pp)->off == off)
            break;
    }
    if (*pp == NULL) {
        pthread_mutex_unlock(&h->lock);
        snprintf(msg, sizeof msg, "%s free of a chunk that is not allocated (offset %zu)", h->name,
                 off);
        dg_host_fatal(msg);
    }
    u = *pp;
    if (u->size != size) {
        pthread_mutex_unlock(&h->lock);
        snprintf(msg, sizeof msg, "%s free with size %zu B, but the chunk was allocated with %zu B",
                 h->name, size, u->size);
        dg_host_fatal(msg);
    }
    *pp = u->next;
    free(u);
    h->in_use -= size;
    /* insert into the sorted free list, coalescing with neighbours */
    prev = NULL;
    cur = h->free_list;
    while (cur && cur->off < off) {
        prev = cur;
        cur = cur->next;
    }
    if (prev && prev->off + prev->size == off) {
        prev->size += size;
        if (cur && prev->off + prev->size == cur->off) {
            prev->size += cur->size;
            prev->next = cur->next;
            free(cur);
        }
    } else if (cur && off + size == cur->off) {
        cur->off = off;
        cur->size += size;
    } else {
        nb = (dg_block_t *)malloc(sizeof(dg_block_t));
        if (!nb)
            dg_host_fatal("out of host memory");
        nb->off = off;
        nb->size = size;
        nb->next = cur;
        if (prev)
            prev->next = nb;
        else
            h->free_list = nb;
    }
    pthread_mutex_unlock(&h->lock);
}

static size_t heap_largest_free(dg_heap_t *h)
{
    size_t m = 0;
    dg_block_t *b;
    for (b = h->free_list; b; b = b->next)
        if (b->size > m)
            m = b->size;
    return m;
}

/* Is [off, off+size) inside one live allocation? */
static int heap_range_live(dg_heap_t *h, size_t off, size_t size)
{
    dg_block_t *u;
    int ok = 0;
    pthread_mutex_lock(&h->lock);
    for (u = h->used; u; u = u->next) {
        if (off >= u->off && off + size <= u->off + u->size) {
            ok = 1;
            break;
        }
    }
    pthread_mutex_unlock(&h->lock);
    return ok;
}

/* ---- global state ---------------------------------------------------------- */
typedef struct dg_team {
    int n;
    void (*entry)(void *);
    void *arg;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int waiting;
    unsigned long generation;
    /* Inline forks (see pi_cl_team_fork): the share the forking thread is
     * running, and whether the other cores have been started. */
    int inline_run;
    int share;
    int started;
} dg_team_t;

typedef struct {
    uint32_t core_id;
    uint32_t cluster_id;
    int on_cluster;
    dg_team_t *team; /* non-NULL inside a fork */
    struct timespec perf_t0;
    unsigned long long perf_acc;
    int perf_running;
} dg_thread_t;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;
static dg_thread_t g_fc_thread; /* the fabric controller (main thread) */
static int g_cluster_open;
static int g_cluster_nb_cores = DG_CLUSTER_CORES;
static int g_last_fork_cores;
static pthread_mutex_t g_cluster_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_critical = PTHREAD_MUTEX_INITIALIZER;

static void report_at_exit(void) { dg_host_report(); }

/* How forks run: DG_HOST_TEAM=threads|inline at run time, else the build's
 * default (-DDG_HOST_TEAM_INLINE: inline). */
#ifdef DG_HOST_TEAM_INLINE
static int g_team_inline = 1;
#else
static int g_team_inline = 0;
#endif

static void xfer_mode_from_env(void);

static void team_mode_from_env(void)
{
    const char *s = getenv("DG_HOST_TEAM");
    if (s == NULL || *s == '\0')
        return;
    if (strcmp(s, "threads") == 0)
        g_team_inline = 0;
    else if (strcmp(s, "inline") == 0)
        g_team_inline = 1;
    else
        fprintf(stderr, "[pmsis-host] ignoring DG_HOST_TEAM=%s (threads or inline)\n", s);
}

/* The capacities of the program's memory plan: pmsis_sizes.c, compiled
 * with the plan's DG_Lx_SIZE, defines them, so this file need not be
 * recompiled per plan (a prebuilt runtime archive serves every project).
 * Without it, the DG_Lx_SIZE this file was compiled with. */
extern const uint32_t dg_host_heap_sizes[3] __attribute__((weak));

static size_t heap_size(int level, size_t dflt)
{
    return dg_host_heap_sizes != NULL ? (size_t)dg_host_heap_sizes[level] : dflt;
}

static void init_once(void)
{
    if (pthread_key_create(&g_key, NULL) != 0)
        dg_host_fatal("pthread_key_create failed");
    memset(&g_fc_thread, 0, sizeof g_fc_thread);
    g_fc_thread.core_id = 0;
    g_fc_thread.cluster_id = DG_HOST_FC_CLUSTER_ID;
    heap_init(&g_l1, env_size("DG_L1_SIZE", heap_size(0, DG_L1_SIZE)), 1);
    heap_init(&g_l2, env_size("DG_L2_SIZE", heap_size(1, DG_L2_SIZE)), 1);
    heap_init(&g_l3, env_size("DG_L3_SIZE", heap_size(2, DG_L3_SIZE)), 1);
    if ((unsigned long long)DG_L3_BASE + g_l3.cap > 0xFFFFFFFFull)
        dg_host_fatal("DG_L3_SIZE does not fit the 32-bit L3 address window");
    team_mode_from_env();
    xfer_mode_from_env();
    atexit(report_at_exit);
}

static void ensure_init(void) { pthread_once(&g_once, init_once); }

static dg_thread_t *self(void)
{
    dg_thread_t *t;
    ensure_init();
    t = (dg_thread_t *)pthread_getspecific(g_key);
    return t ? t : &g_fc_thread;
}

/* ---- devices, tasks ---------------------------------------------------------- */
void pi_open_from_conf(struct pi_device *device, void *conf)
{
    memset(device, 0, sizeof(*device));
    device->config = conf;
}

pi_task_t *pi_task_block(pi_task_t *task)
{
    task->done = 0;
    return task;
}

void pi_task_wait_on(pi_task_t *task) { (void)task; }

/* ---- cluster --------------------------------------------------------------- */
void pi_cluster_conf_init(struct pi_cluster_conf *conf)
{
    memset(conf, 0, sizeof(*conf));
    conf->device_type = PI_DEVICE_CLUSTER_TYPE;
    conf->id = 0;
}

int pi_cluster_open(struct pi_device *device)
{
    (void)device;
    ensure_init();
    pthread_mutex_lock(&g_cluster_lock);
    g_cluster_open = 1;
    pthread_mutex_unlock(&g_cluster_lock);
    return 0;
}

int pi_cluster_close(struct pi_device *device)
{
    unsigned long live = 0;
    dg_block_t *u;
    (void)device;
    ensure_init();
    pthread_mutex_lock(&g_cluster_lock);
    g_cluster_open = 0;
    pthread_mutex_unlock(&g_cluster_lock);
    /* Powering the cluster down loses L1 and resets its allocator. */
    pthread_mutex_lock(&g_l1.lock);
    for (u = g_l1.used; u; u = u->next)
        live++;
    if (live)
        fprintf(stderr, "[pmsis-host] warning: %lu L1 chunk(s) still allocated at cluster close\n",
                live);
    memset(g_l1.mem, 0xA5, g_l1.cap);
    heap_reset_lists(&g_l1);
    pthread_mutex_unlock(&g_l1.lock);
    return 0;
}

uint8_t pi_cluster_is_on(void)
{
    int on;
    ensure_init();
    pthread_mutex_lock(&g_cluster_lock);
    on = g_cluster_open;
    pthread_mutex_unlock(&g_cluster_lock);
    return (uint8_t)on;
}

typedef struct {
    struct pi_cluster_task *task;
} cc_start_t;

static void *cc_main(void *p)
{
    cc_start_t *s = (cc_start_t *)p;
    dg_thread_t t;
    memset(&t, 0, sizeof t);
    t.core_id = DG_HOST_CC_CORE_ID;
    t.cluster_id = 0;
    t.on_cluster = 1;
    pthread_setspecific(g_key, &t);
    s->task->entry(s->task->arg);
    pthread_setspecific(g_key, NULL);
    return NULL;
}

int pi_cluster_send_task_to_cl(struct pi_device *device, struct pi_cluster_task *task)
{
    pthread_t th;
    cc_start_t s;
    (void)device;
    ensure_init();
    if (self()->on_cluster)
        dg_host_fatal("pi_cluster_send_task_to_cl called from the cluster");
    if (!pi_cluster_is_on()) {
        fprintf(stderr, "[pmsis-host] error: cluster task sent while the cluster is closed\n");
        return -1;
    }
    if (task == NULL || task->entry == NULL)
        dg_host_fatal("pi_cluster_send_task_to_cl: task without entry");
    if (task->nb_cores < 0 || task->nb_cores > DG_CLUSTER_CORES)
        dg_host_fatal("pi_cluster_send_task_to_cl: nb_cores out of range");
    pthread_mutex_lock(&g_cluster_lock);
    g_cluster_nb_cores = task->nb_cores ? task->nb_cores : DG_CLUSTER_CORES;
    g_last_fork_cores = 0;
    pthread_mutex_unlock(&g_cluster_lock);
    s.task = task;
    if (pthread_create(&th, NULL, cc_main, &s) != 0)
        dg_host_fatal("pthread_create failed for the cluster controller");
    pthread_join(th, NULL);
    return 0;
}

/* ---- cores and teams --------------------------------------------------------- */
uint32_t pi_core_id(void) { return self()->core_id; }
uint32_t pi_cluster_id(void) { return self()->cluster_id; }
int pi_is_fc(void) { return !self()->on_cluster; }
uint32_t dg_host_controller_core_id(void) { return DG_HOST_CC_CORE_ID; }
int dg_host_in_fork(void) { return self()->team != NULL; }
int dg_host_team_inline(void)
{
    ensure_init();
    return g_team_inline;
}

int pi_cl_cluster_nb_cores(void)
{
    int n;
    ensure_init();
    pthread_mutex_lock(&g_cluster_lock);
    n = g_cluster_nb_cores;
    pthread_mutex_unlock(&g_cluster_lock);
    return n;
}

int pi_cl_cluster_nb_pe_cores(void) { return pi_cl_cluster_nb_cores(); }

int pi_cl_team_nb_cores(void)
{
    dg_thread_t *t = self();
    int n;
    if (t->team)
        return t->team->n;
    pthread_mutex_lock(&g_cluster_lock);
    n = g_last_fork_cores ? g_last_fork_cores : g_cluster_nb_cores;
    pthread_mutex_unlock(&g_cluster_lock);
    return n;
}

/* The team's workers: one POSIX thread per core id, started by the first
 * fork that needs it and parked between forks, so a fork costs a wake-up
 * per worker rather than a thread creation and a join (a generated step
 * forks once per node). Each worker is core `id` for its whole life; a fork
 * wakes exactly the workers of its team. All of it is guarded by g_pool_lock. */
#define DG_HOST_MAX_TEAM 64

typedef struct {
    uint32_t id;
    int started;
    int go;          /* set by the fork that wants this worker */
    pthread_cond_t wake;
} dg_worker_t;

static pthread_mutex_t g_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_pool_done = PTHREAD_COND_INITIALIZER; /* the forking thread waits here */
static dg_team_t *g_pool_team; /* the running fork's team */
static int g_pool_pending;     /* workers of the running fork not finished yet */
static dg_worker_t g_pool_w[DG_HOST_MAX_TEAM];

static void *worker_main(void *p)
{
    dg_worker_t *w = (dg_worker_t *)p;
    dg_team_t *team;
    dg_thread_t t;
    memset(&t, 0, sizeof t);
    t.core_id = w->id;
    t.cluster_id = 0;
    t.on_cluster = 1;
    pthread_setspecific(g_key, &t);
    pthread_mutex_lock(&g_pool_lock);
    for (;;) {
        while (!w->go)
            pthread_cond_wait(&w->wake, &g_pool_lock);
        w->go = 0;
        team = g_pool_team;
        pthread_mutex_unlock(&g_pool_lock);
        t.team = team;
        team->entry(team->arg);
        t.team = NULL;
        pthread_mutex_lock(&g_pool_lock);
        if (--g_pool_pending == 0)
            pthread_cond_signal(&g_pool_done);
    }
    return NULL;
}

/* Runs cores [from, to) of the team on their workers (not waiting). */
static void pool_start(dg_team_t *team, int from, int to)
{
    dg_worker_t *w;
    pthread_t th;
    int i;
    if (from >= to)
        return;
    pthread_mutex_lock(&g_pool_lock);
    if (g_pool_team != NULL)
        dg_host_fatal("pi_cl_team_fork while another fork runs");
    g_pool_team = team;
    g_pool_pending = to - from;
    for (i = from; i < to; i++) {
        w = &g_pool_w[i];
        if (!w->started) {
            w->id = (uint32_t)i;
            if (pthread_cond_init(&w->wake, NULL) != 0)
                dg_host_fatal("pthread_cond_init failed for a team worker");
            if (pthread_create(&th, NULL, worker_main, w) != 0)
                dg_host_fatal("pthread_create failed for a team worker");
            pthread_detach(th);
            w->started = 1;
        }
        w->go = 1;
        pthread_cond_signal(&w->wake);
    }
    pthread_mutex_unlock(&g_pool_lock);
}

/* Waits for the workers started by pool_start. */
static void pool_wait(void)
{
    pthread_mutex_lock(&g_pool_lock);
    while (g_pool_pending > 0)
        pthread_cond_wait(&g_pool_done, &g_pool_lock);
    g_pool_team = NULL;
    pthread_mutex_unlock(&g_pool_lock);
}

/* A fork runs in one of two ways (DG_HOST_TEAM, see team_mode_from_env):
 *
 * - threads: every core of the team on its own worker thread at once (on
 *   PULP the controller is core 0 and runs its share itself; on GAP9 it is
 *   a ninth core that only waits).
 * - inline: the forking thread runs the cores' shares itself, one after
 *   another in core order, as core 0, 1, ..., n-1, until a share calls
 *   pi_cl_team_barrier(). At that barrier the other cores start on their
 *   worker threads and the barrier is real from then on. Barriers are
 *   called by every core of a team alike, so the first one comes in core
 *   0's share; a kernel without barriers (most of them: each core writes
 *   its own outputs) then costs no thread at all. A barrier first called in
 *   a later share would deadlock the chip and aborts here.
 */
void pi_cl_team_fork(int nb_cores, void (*entry)(void *), void *arg)
{
    dg_thread_t *caller = self();
    dg_team_t team;
    uint32_t own_id;
    int i, first;
    char msg[128];

    if (!caller->on_cluster)
        dg_host_fatal("pi_cl_team_fork called from the fabric controller (send a cluster task)");
    if (caller->team)
        dg_host_fatal("pi_cl_team_fork called inside a fork (nested forks are not supported)");
    if (nb_cores == 0)
        nb_cores = pi_cl_team_nb_cores(); /* SDK: 0 reuses the previous fork's team */
    if (nb_cores < 0 || nb_cores > pi_cl_cluster_nb_cores() || nb_cores > DG_HOST_MAX_TEAM) {
        snprintf(msg, sizeof msg, "pi_cl_team_fork(%d): the cluster has %d cores", nb_cores,
                 pi_cl_cluster_nb_cores());
        dg_host_fatal(msg);
    }
    pthread_mutex_lock(&g_cluster_lock);
    g_last_fork_cores = nb_cores;
    pthread_mutex_unlock(&g_cluster_lock);

    team.n = nb_cores;
    team.entry = entry;
    team.arg = arg;
    team.waiting = 0;
    team.generation = 0;
    team.inline_run = g_team_inline;
    team.share = 0;
    team.started = 0;
    pthread_mutex_init(&team.lock, NULL);
    pthread_cond_init(&team.cond, NULL);

    if (team.inline_run) {
        own_id = caller->core_id;
        caller->team = &team;
        for (i = 0; i < nb_cores && !team.started; i++) {
            team.share = i;
            caller->core_id = (uint32_t)i;
            entry(arg);
        }
        caller->core_id = own_id;
        caller->team = NULL;
        if (team.started)
            pool_wait();
    } else {
        first = (caller->core_id == 0) ? 1 : 0;
        pool_start(&team, first, nb_cores);
        if (first == 1) {
            caller->team = &team;
            entry(arg);
            caller->team = NULL;
        }
        if (first < nb_cores)
            pool_wait();
    }
    pthread_cond_destroy(&team.cond);
    pthread_mutex_destroy(&team.lock);
}

void pi_cl_team_barrier(void)
{
    dg_team_t *team = self()->team;
#ifndef DG_HOST_FAULT_NO_BARRIER
    unsigned long gen;
#endif
    char msg[160];
    if (team == NULL || team->n <= 1)
        return;
    if (team->inline_run && !team->started) {
        /* Only the forking thread runs before this point (see pi_cl_team_fork). */
        if (team->share != 0) {
            snprintf(msg, sizeof msg,
                     "pi_cl_team_barrier: core %d reached a barrier that core 0 of its team "
                     "never called (every core must call each barrier)",
                     team->share);
            dg_host_fatal(msg);
        }
        team->started = 1;
        pool_start(team, 1, team->n);
    }
#ifndef DG_HOST_FAULT_NO_BARRIER
    pthread_mutex_lock(&team->lock);
    gen = team->generation;
    if (++team->waiting == team->n) {
        team->waiting = 0;
        team->generation++;
        pthread_cond_broadcast(&team->cond);
    } else {
        while (gen == team->generation)
            pthread_cond_wait(&team->cond, &team->lock);
    }
    pthread_mutex_unlock(&team->lock);
#endif
}

void pi_cl_team_critical_enter(void) { pthread_mutex_lock(&g_critical); }
void pi_cl_team_critical_exit(void) { pthread_mutex_unlock(&g_critical); }

/* ---- L1 / L2 ---------------------------------------------------------------- */
static void report_failure(dg_heap_t *h, int sdk_id, size_t size)
{
    size_t largest, in_use;
    pthread_mutex_lock(&h->lock);
    largest = heap_largest_free(h);
    in_use = h->in_use;
    pthread_mutex_unlock(&h->lock);
    /* The SDK's own line, then the emulation's numbers. */
    printf("Allocation failed for allocator %d\n", sdk_id);
    fprintf(stderr,
            "[pmsis-host] %s allocation of %zu B failed: %zu of %zu B in use, largest free "
            "block %zu B\n",
            h->name, size, in_use, h->cap, largest);
}

void *pi_cl_l1_malloc(struct pi_device *device, uint32_t size)
{
#ifndef DG_HOST_FAULT_NO_L1_CAP
    size_t off;
#endif
    (void)device;
    ensure_init();
    if (!pi_cluster_is_on()) {
        fprintf(stderr, "[pmsis-host] error: L1 allocation while the cluster is closed\n");
        return NULL;
    }
#ifdef DG_HOST_FAULT_NO_L1_CAP
    return malloc(size);
#else
    off = heap_alloc(&g_l1, size);
    if (off == (size_t)-1) {
        report_failure(&g_l1, DG_SDK_ALLOC_L1, size);
        return NULL;
    }
    return g_l1.mem + off;
#endif
}

static size_t pool_offset(dg_heap_t *h, const void *chunk, const char *what)
{
    const uint8_t *p = (const uint8_t *)chunk;
    char msg[128];
    if (p < h->mem || p >= h->mem + h->cap) {
        snprintf(msg, sizeof msg, "%s of a pointer that is not in %s", what, h->name);
        dg_host_fatal(msg);
    }
    return (size_t)(p - h->mem);
}

void pi_cl_l1_free(struct pi_device *device, void *chunk, int size)
{
    (void)device;
    ensure_init();
    if (chunk == NULL)
        return;
#ifdef DG_HOST_FAULT_NO_L1_CAP
    (void)size;
    free(chunk);
#else
    heap_free(&g_l1, pool_offset(&g_l1, chunk, "pi_l1_free"), (size_t)size);
#endif
}

void *pi_l2_malloc(int size)
{
    size_t off;
    ensure_init();
    if (size < 0) {
        report_failure(&g_l2, DG_SDK_ALLOC_L2, (size_t)0);
        return NULL;
    }
    off = heap_alloc(&g_l2, (size_t)size);
    if (off == (size_t)-1) {
        report_failure(&g_l2, DG_SDK_ALLOC_L2, (size_t)size);
        return NULL;
    }
    return g_l2.mem + off;
}

void pi_l2_free(void *chunk, int size)
{
    ensure_init();
    if (chunk == NULL)
        return;
    heap_free(&g_l2, pool_offset(&g_l2, chunk, "pi_l2_free"), (size_t)size);
}

/* ---- L3 --------------------------------------------------------------------- */
void pi_default_ram_conf_init(struct pi_default_ram_conf *conf) { memset(conf, 0, sizeof(*conf)); }
void pi_hyperram_conf_init(struct pi_hyperram_conf *conf) { memset(conf, 0, sizeof(*conf)); }

#ifndef DG_HEX_DIR_DEFAULT
#define DG_HEX_DIR_DEFAULT "hex"
#endif

/* ---- flash + readfs: a folder ------------------------------------------------ */
const char *dg_host_fs_dir(void)
{
    static char where[1024];
    const char *dir = getenv("DG_HEX_DIR");
    char cwd[768];
    if (dir == NULL || *dir == '\0')
        dir = DG_HEX_DIR_DEFAULT;
    if (dir[0] == '/' || getcwd(cwd, sizeof cwd) == NULL)
        return dir;
    if ((size_t)snprintf(where, sizeof where, "%s/%s", cwd, dir) >= sizeof where)
        return dir;
    return where;
}

void pi_hyperflash_conf_init(struct pi_hyperflash_conf *conf) { memset(conf, 0, sizeof *conf); }
void pi_default_flash_conf_init(struct pi_default_flash_conf *conf) { memset(conf, 0, sizeof *conf); }
int32_t pi_flash_open(struct pi_device *device)
{
    (void)device;
    ensure_init();
    return 0;
}
void pi_flash_close(struct pi_device *device) { (void)device; }
void pi_readfs_conf_init(struct pi_readfs_conf *conf) { memset(conf, 0, sizeof *conf); }
int32_t pi_fs_mount(struct pi_device *device)
{
    struct pi_readfs_conf *c = device ? (struct pi_readfs_conf *)device->config : NULL;
    ensure_init();
    if (c == NULL || c->fs.flash == NULL) {
        fprintf(stderr, "[pmsis-host] error: pi_fs_mount without a flash device in its conf\n");
        return -1;
    }
    return 0;
}
void pi_fs_unmount(struct pi_device *device) { (void)device; }

pi_fs_file_t *pi_fs_open(struct pi_device *device, const char *file, int flags)
{
    const char *dir = getenv("DG_HEX_DIR");
    char path[1024];
    pi_fs_file_t *f;
    FILE *h;
    long end;
    (void)device;
    (void)flags;
    if (dir == NULL || *dir == '\0')
        dir = DG_HEX_DIR_DEFAULT;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, file) >= sizeof path)
        return NULL;
    h = fopen(path, "rb");
    if (h == NULL)
        return NULL;
    if (fseek(h, 0, SEEK_END) != 0 || (end = ftell(h)) < 0 || end > 0xFFFFFFFFL || fseek(h, 0, SEEK_SET) != 0) {
        fclose(h);
        return NULL;
    }
    f = (pi_fs_file_t *)malloc(sizeof *f);
    if (f == NULL) {
        fclose(h);
        return NULL;
    }
    f->size = (uint32_t)end;
    f->handle = h;
    return f;
}

void pi_fs_close(pi_fs_file_t *file)
{
    if (file == NULL)
        return;
    fclose((FILE *)file->handle);
    free(file);
}

int32_t pi_fs_read(pi_fs_file_t *file, void *buffer, uint32_t size)
{
    size_t k;
    if (file == NULL)
        return -1;
    k = fread(buffer, 1, size, (FILE *)file->handle);
    return (int32_t)k;
}

int32_t pi_ram_open(struct pi_device *device)
{
    (void)device;
    ensure_init();
    return 0;
}

void pi_ram_close(struct pi_device *device) { (void)device; }

static int l3_alloc(uint32_t *addr, uint32_t size)
{
    size_t off = heap_alloc(&g_l3, size);
    if (off == (size_t)-1) {
        size_t largest, in_use;
        pthread_mutex_lock(&g_l3.lock);
        largest = heap_largest_free(&g_l3);
        in_use = g_l3.in_use;
        pthread_mutex_unlock(&g_l3.lock);
        fprintf(stderr,
                "[pmsis-host] L3 allocation of %u B failed: %zu of %zu B in use, largest free "
                "block %zu B\n",
                (unsigned)size, in_use, g_l3.cap, largest);
        *addr = 0;
        return -1;
    }
    *addr = DG_L3_BASE + (uint32_t)off;
    return 0;
}

static void l3_free(uint32_t addr, uint32_t size)
{
    if (addr < DG_L3_BASE || addr - DG_L3_BASE >= g_l3.cap)
        dg_host_fatal("L3 free of an address outside the L3 window");
    heap_free(&g_l3, addr - DG_L3_BASE, size);
}

static void l3_copy(uint32_t addr, void *data, uint32_t size, int ext2loc)
{
    char msg[200];
    size_t off;
    if (size == 0)
        return;
    if (data == NULL)
        dg_host_fatal("L3 copy with a NULL local buffer");
    if (dg_host_mem_level(data) == DG_MEM_L3)
        dg_host_fatal("L3 copy whose local buffer is itself an L3 address");
    if (addr < DG_L3_BASE || (size_t)(addr - DG_L3_BASE) + size > g_l3.cap) {
        snprintf(msg, sizeof msg, "L3 %s at 0x%08x (%u B) is outside the L3 window",
                 ext2loc ? "read" : "write", (unsigned)addr, (unsigned)size);
        dg_host_fatal(msg);
    }
    off = addr - DG_L3_BASE;
    if (!heap_range_live(&g_l3, off, size)) {
        snprintf(msg, sizeof msg, "L3 %s at 0x%08x (%u B) is not inside one live L3 allocation",
                 ext2loc ? "read" : "write", (unsigned)addr, (unsigned)size);
        dg_host_fatal(msg);
    }
    if (ext2loc) {
        memcpy(data, g_l3.mem + off, size);
    } else {
#ifdef DG_HOST_FAULT_L3_TRUNC
        size -= 1;
#endif
        memcpy(g_l3.mem + off, data, size);
    }
}

static void require_fc(const char *fn)
{
    char msg[160];
    if (self()->on_cluster) {
        snprintf(msg, sizeof msg, "%s called from the cluster (use the pi_cl_ram_* variant)", fn);
        dg_host_fatal(msg);
    }
}

static void require_cluster(const char *fn)
{
    char msg[160];
    if (!self()->on_cluster) {
        snprintf(msg, sizeof msg, "%s called from the fabric controller (use the pi_ram_* variant)",
                 fn);
        dg_host_fatal(msg);
    }
}

int pi_ram_alloc(struct pi_device *device, uint32_t *addr, uint32_t size)
{
    (void)device;
    ensure_init();
    require_fc("pi_ram_alloc");
    return l3_alloc(addr, size);
}

int pi_ram_free(struct pi_device *device, uint32_t addr, uint32_t size)
{
    (void)device;
    ensure_init();
    require_fc("pi_ram_free");
    l3_free(addr, size);
    return 0;
}

void pi_ram_copy(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size,
                 int ext2loc)
{
    (void)device;
    ensure_init();
    require_fc(ext2loc ? "pi_ram_read" : "pi_ram_write");
    l3_copy(pi_ram_addr, data, size, ext2loc);
}

void pi_ram_read(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size)
{
    pi_ram_copy(device, pi_ram_addr, data, size, 1);
}

void pi_ram_write(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size)
{
    pi_ram_copy(device, pi_ram_addr, data, size, 0);
}

void pi_cl_ram_alloc(struct pi_device *device, uint32_t size, pi_cl_ram_alloc_req_t *req)
{
    ensure_init();
    require_cluster("pi_cl_ram_alloc");
    req->device = device;
    req->size = size;
    req->error = (char)(l3_alloc(&req->result, size) != 0);
    req->done = 1;
}

int32_t pi_cl_ram_alloc_wait(pi_cl_ram_alloc_req_t *req, uint32_t *chunk)
{
    *chunk = req->result;
    return req->error ? -1 : 0;
}

void pi_cl_ram_free(struct pi_device *device, uint32_t chunk, uint32_t size,
                    pi_cl_ram_free_req_t *req)
{
    ensure_init();
    require_cluster("pi_cl_ram_free");
    req->device = device;
    req->chunk = chunk;
    req->size = size;
    l3_free(chunk, size);
    req->error = 0;
    req->done = 1;
}

int32_t pi_cl_ram_free_wait(pi_cl_ram_free_req_t *req) { return req->error ? -1 : 0; }

/* ---- deferred transfers: cluster RAM requests and cluster DMA ------------ */
static pthread_mutex_t g_xfer_lock = PTHREAD_MUTEX_INITIALIZER;
static dg_host_xfer_t *g_pending;
static int g_xfer_mode = -1; /* 0: at the wait; 1: at a random point */
static unsigned long g_xfer_rand = 1;

/* DG_HOST_DMA: unset, empty or "wait" (a transfer moves at its wait), or
 * "random"; DG_HOST_DMA_SEED: a decimal number. Anything else stops the
 * program with a message: a mode silently ignored would test nothing. */
static void xfer_mode_from_env(void)
{
    const char *m = getenv("DG_HOST_DMA");
    const char *seed = getenv("DG_HOST_DMA_SEED");
    if (m == NULL || *m == '\0' || strcmp(m, "wait") == 0) {
        g_xfer_mode = 0;
    } else if (strcmp(m, "random") == 0) {
        g_xfer_mode = 1;
    } else {
        fprintf(stderr, "[pmsis-host] error: DG_HOST_DMA=%s is not a mode (random, wait, or unset)\n", m);
        exit(2);
    }
    if (seed != NULL) {
        char *end = NULL;
        unsigned long v = strtoul(seed, &end, 10);
        if (*seed == '\0' || end == NULL || *end != '\0') {
            fprintf(stderr, "[pmsis-host] error: DG_HOST_DMA_SEED=%s is not a decimal number\n", seed);
            exit(2);
        }
        g_xfer_rand = v | 1u;
    }
}

static int xfer_random(void)
{
    if (g_xfer_mode < 0)
        xfer_mode_from_env();
    return g_xfer_mode;
}

static unsigned xfer_coin(void)
{
    g_xfer_rand = g_xfer_rand * 1103515245ul + 12345ul;
    return (unsigned)(g_xfer_rand >> 16) & 3u;
}

/* Moves one transfer's bytes, line by line. */
static void xfer_move(dg_host_xfer_t *x)
{
    uint32_t done, k;
    for (done = 0; done < x->size; done += k) {
        uint32_t line = done / x->length;
        k = x->size - done < x->length ? x->size - done : x->length;
        uintptr_t ext = x->ext + (uintptr_t)line * x->stride;
        void *loc = (void *)(x->loc + done);
        if (x->ram)
            l3_copy((uint32_t)ext, loc, k, x->to_loc);
        else if (x->to_loc)
            memcpy(loc, (const void *)ext, k);
        else
            memcpy((void *)ext, loc, k);
    }
    x->pending = 0;
}

static void xfer_unlink(dg_host_xfer_t *x)
{
    dg_host_xfer_t **p = &g_pending;
    while (*p != NULL && *p != x)
        p = &(*p)->next;
    if (*p == x)
        *p = x->next;
    x->next = NULL;
}

/* Under DG_HOST_DMA=random, some pending transfers complete now. */
static void xfer_progress(void)
{
    dg_host_xfer_t **p = &g_pending;
    if (!xfer_random())
        return;
    while (*p != NULL) {
        dg_host_xfer_t *x = *p;
        if (xfer_coin() == 0) {
            *p = x->next;
            x->next = NULL;
            xfer_move(x);
        } else {
            p = &x->next;
        }
    }
}

/* The chip's RAM driver takes this many cluster-RAM requests at once
 * (dg_chips.h); one more is the hang it would be on the chip. */
static void xfer_ram_limit(const dg_host_xfer_t *x)
{
#ifdef DG_CHIP_RAM_REQS_IN_FLIGHT
    const dg_host_xfer_t *p;
    uint32_t n = 0;
    for (p = g_pending; p != NULL; p = p->next)
        n += p->ram ? 1u : 0u;
    if (x->ram && n >= DG_CHIP_RAM_REQS_IN_FLIGHT)
        dg_host_fatal("a cluster-RAM request issued while " DG_CHIP_NAME "'s limit of them is in flight "
                      "(its SDK's RAM driver hangs on that; wait for one first)");
#else
    (void)x;
#endif
}

static void xfer_issue(dg_host_xfer_t *x)
{
    pthread_mutex_lock(&g_xfer_lock);
    if (x->pending)
        xfer_unlink(x); /* a command struct reused before its wait */
    xfer_progress();
    xfer_ram_limit(x);
    x->pending = 1;
    x->next = g_pending;
    g_pending = x;
    pthread_mutex_unlock(&g_xfer_lock);
}

static void xfer_wait(dg_host_xfer_t *x)
{
    pthread_mutex_lock(&g_xfer_lock);
    xfer_progress();
    if (x->pending) {
        xfer_unlink(x);
        xfer_move(x);
    }
    pthread_mutex_unlock(&g_xfer_lock);
}

static void xfer_ram(pi_cl_ram_req_t *req, uint32_t addr, void *loc, uint32_t size, uint32_t stride,
                     uint32_t length, int ext2loc)
{
    dg_host_xfer_t *x = &req->xfer;
    ensure_init();
    require_cluster(ext2loc ? "pi_cl_ram_read" : "pi_cl_ram_write");
    req->addr = loc;
    req->pi_ram_addr = addr;
    req->size = size;
    req->ext2loc = (unsigned char)ext2loc;
    req->done = 0;
    if (size == 0)
        return;
    if (loc == NULL || length == 0)
        dg_host_fatal("cluster RAM transfer with a NULL local buffer or a zero line length");
    x->ram = 1;
    x->to_loc = ext2loc;
    x->ext = addr;
    x->loc = (uintptr_t)loc;
    x->size = size;
    x->stride = stride;
    x->length = length;
    xfer_issue(x);
}

void pi_cl_ram_copy(struct pi_device *device, uint32_t pi_ram_addr, void *addr, uint32_t size,
                    int ext2loc, pi_cl_ram_req_t *req)
{
    req->device = device;
    xfer_ram(req, pi_ram_addr, addr, size, size, size ? size : 1, ext2loc);
}

void pi_cl_ram_copy_2d(struct pi_device *device, uint32_t pi_ram_addr, void *addr, uint32_t size,
                       uint32_t stride, uint32_t length, int ext2loc, pi_cl_ram_req_t *req)
{
    req->device = device;
    xfer_ram(req, pi_ram_addr, addr, size, stride, length, ext2loc);
}

void pi_cl_ram_copy_wait(pi_cl_ram_req_t *req)
{
    xfer_wait(&req->xfer);
    req->done = 1;
}

/* The program image (static L2 arrays), bounds from the linker. */
extern char __executable_start[];
extern char _end[];

static int in_l2(uintptr_t p, uint32_t size)
{
    uintptr_t l2 = (uintptr_t)g_l2.mem, lo = (uintptr_t)__executable_start, hi = (uintptr_t)_end;
    return (p >= l2 && p + size <= l2 + g_l2.cap) || (p >= lo && p + size <= hi);
}

static void dma_issue(uintptr_t ext, uintptr_t loc, uint32_t size, uint32_t stride,
                      uint32_t length, pi_cl_dma_dir_e dir, pi_cl_dma_cmd_t *cmd)
{
    dg_host_xfer_t *x = &cmd->xfer;
    ensure_init();
    require_cluster("pi_cl_dma_cmd");
    if (dg_host_mem_level((const void *)loc) != DG_MEM_L1)
        dg_host_fatal("cluster DMA whose local (loc) address is not in L1");
    if (!in_l2(ext, 1))
        dg_host_fatal("cluster DMA whose external (ext) address is not in L2 (the L2 heap or the "
                      "program's static data)");
    x->ram = 0;
    x->to_loc = (dir == PI_CL_DMA_DIR_EXT2LOC);
    x->ext = ext;
    x->loc = loc;
    x->size = size;
    x->stride = stride;
    x->length = length ? length : 1;
    if (size == 0) {
        x->pending = 0;
        return;
    }
    xfer_issue(x);
}

void pi_cl_dma_cmd(uint32_t ext, uint32_t loc, uint32_t size, pi_cl_dma_dir_e dir,
                   pi_cl_dma_cmd_t *cmd)
{
    /* The SDK passes a 1-D size as unsigned short. */
    size &= 0xFFFFu;
    dma_issue(ext, loc, size, size, size, dir, cmd);
}

void pi_cl_dma_cmd_2d(uint32_t ext, uint32_t loc, uint32_t size, uint32_t stride, uint32_t length,
                      pi_cl_dma_dir_e dir, pi_cl_dma_cmd_t *cmd)
{
    length &= 0xFFFFu;
    dma_issue(ext, loc, size, stride, length, dir, cmd);
}

void pi_cl_dma_cmd_wait(pi_cl_dma_cmd_t *cmd) { xfer_wait(&cmd->xfer); }

void pi_cl_dma_flush(void)
{
    pthread_mutex_lock(&g_xfer_lock);
    dg_host_xfer_t **p = &g_pending;
    while (*p != NULL) {
        dg_host_xfer_t *x = *p;
        if (!x->ram) {
            *p = x->next;
            x->next = NULL;
            xfer_move(x);
        } else {
            p = &x->next;
        }
    }
    pthread_mutex_unlock(&g_xfer_lock);
}

/* ---- levels and report -------------------------------------------------------- */
int dg_host_mem_level(const void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    ensure_init();
    if (p >= (uintptr_t)g_l1.mem && p < (uintptr_t)g_l1.mem + g_l1.cap)
        return DG_MEM_L1;
    if (p >= (uintptr_t)DG_L3_BASE && p - (uintptr_t)DG_L3_BASE < g_l3.cap)
        return DG_MEM_L3;
    return DG_MEM_L2;
}

void dg_host_mem_stats(int level, size_t *in_use, size_t *peak, size_t *capacity)
{
    dg_heap_t *h = level == 1 ? &g_l1 : level == 2 ? &g_l2 : &g_l3;
    ensure_init();
    pthread_mutex_lock(&h->lock);
    if (in_use)
        *in_use = h->in_use;
    if (peak)
        *peak = h->peak;
    if (capacity)
        *capacity = h->cap;
    pthread_mutex_unlock(&h->lock);
}

void dg_host_report(void)
{
    const char *q = getenv("DG_HOST_QUIET");
    dg_heap_t *hs[3];
    int i;
    if (q && *q && *q != '0')
        return;
    ensure_init();
    hs[0] = &g_l1;
    hs[1] = &g_l2;
    hs[2] = &g_l3;
    fflush(stdout);
    for (i = 0; i < 3; i++) {
        pthread_mutex_lock(&hs[i]->lock);
        fprintf(stderr,
                "[pmsis-host] %s peak %s: %zu of %zu B (%lu allocations, %lu failed, %zu B still "
                "in use)\n",
                DG_HOST_PLATFORM_NAME, hs[i]->name, hs[i]->peak, hs[i]->cap, hs[i]->n_alloc,
                hs[i]->n_fail, hs[i]->in_use);
        pthread_mutex_unlock(&hs[i]->lock);
    }
}

/* ---- performance counters ------------------------------------------------------ */
static unsigned long long ns_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (unsigned long long)(t1.tv_sec - t0->tv_sec) * 1000000000ull +
           (unsigned long long)(t1.tv_nsec - t0->tv_nsec);
}

void pi_perf_conf(unsigned events) { (void)events; }

void pi_perf_reset(void)
{
    dg_thread_t *t = self();
    t->perf_acc = 0;
    if (t->perf_running)
        clock_gettime(CLOCK_MONOTONIC, &t->perf_t0);
}

void pi_perf_start(void)
{
    dg_thread_t *t = self();
    if (!t->perf_running) {
        clock_gettime(CLOCK_MONOTONIC, &t->perf_t0);
        t->perf_running = 1;
    }
}

void pi_perf_stop(void)
{
    dg_thread_t *t = self();
    if (t->perf_running) {
        t->perf_acc += ns_since(&t->perf_t0);
        t->perf_running = 0;
    }
}

unsigned int pi_perf_read(int id)
{
    dg_thread_t *t = self();
    unsigned long long v;
    if (id != PI_PERF_CYCLES && id != PI_PERF_ACTIVE_CYCLES)
        return 0;
    v = t->perf_acc + (t->perf_running ? ns_since(&t->perf_t0) : 0);
    return (unsigned int)v;
}

/* ---- OS ---------------------------------------------------------------------- */
static int g_exit_value;

int pmsis_kickoff(void *arg)
{
    void (*fn)(void);
    ensure_init();
    /* Line-buffered like a UART: a run that crashes keeps what it printed. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    memcpy(&fn, &arg, sizeof fn);
    fn();
    return g_exit_value;
}

void pmsis_exit(int err)
{
    g_exit_value = err;
    exit(err);
}
