/*
 * pmsis-host: a host (POSIX) emulation of the PMSIS subset that deploygen's
 * generated GAP9 / Siracusa projects use. Generated code includes this file
 * exactly as it would include the SDK's "pmsis.h"; building the same sources
 * against the GAP SDK or the PULP SDK uses the real header instead.
 *
 * Names, argument and return types follow the GAP SDK / PULP SDK headers.
 * Semantics kept from the chips (see runtime/README.md):
 *  - a cluster task sent with pi_cluster_send_task_to_cl() runs once, on the
 *    cluster controller, whose pi_core_id() is 8 on GAP9 and 0 on Siracusa;
 *  - pi_cl_team_fork() runs the entry once per core id 0..n-1, on real POSIX
 *    threads (or, inline, on the calling thread until the first barrier),
 *    and pi_cl_team_barrier() is a real barrier;
 *  - L1 / L2 / L3 allocators enforce the configured capacities and return
 *    NULL (L3: -1) when exhausted; peak usage per level is reported at exit.
 *
 * Platform (compile time): -DDG_PLATFORM_GAP9, -DDG_PLATFORM_SIRACUSA or
 * -DDG_PLATFORM_HOST (one is required: runtime/mem/dg_chips.h). Capacities: -DDG_L1_SIZE=, -DDG_L2_SIZE=,
 * -DDG_L3_SIZE= (bytes), overridable at run time by the environment variables
 * of the same names. The emulation must be compiled with
 * -D_POSIX_C_SOURCE=200809L (it uses pthreads); code that only includes this
 * header does not need it.
 */
#ifndef DG_PMSIS_HOST_PMSIS_H
#define DG_PMSIS_HOST_PMSIS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Lets shared runtime code tell the emulation from the real SDK. */
#define DG_PMSIS_HOST 1

/* The chip's facts; no platform define is an #error there. */
#include "../mem/dg_chips.h"

#define DG_HOST_PLATFORM_NAME DG_CHIP_NAME

#ifdef __cplusplus
extern "C" {
#endif

/* ---- memory placement attributes -------------------------------------- */
/* No-ops on the host. DG_PMSIS_SECTIONS gives them the SDK's sections, so a
 * cross build meets what the SDK's compiler does (a const and a writable
 * object in one section are a "section type conflict"). */
#ifdef DG_PMSIS_SECTIONS
#define PI_L2 __attribute__((section(".l2_data")))
#define PI_CL_L1 __attribute__((section(".data_l1")))
#define PI_L1 PI_CL_L1
#define PI_FC_L1 __attribute__((section(".data_fc")))
#else
#define PI_L1
#define PI_L2
#define PI_CL_L1
#define PI_FC_L1
#endif
#define PI_L1_TINY
#define PI_FC_TINY

/* ---- devices ------------------------------------------------------------ */
typedef enum {
    PI_DEVICE_UNKWN_TYPE = 0,
    PI_DEVICE_CLUSTER_TYPE,
    PI_DEVICE_HYPERBUS_TYPE,
    PI_DEVICE_OCTOSPI_TYPE,
    PI_DEVICE_RAM_TYPE
} pi_device_e;

struct pi_device {
    void *api;
    void *config;
    void *data;
};

void pi_open_from_conf(struct pi_device *device, void *conf);

/* ---- tasks (only what blocking cluster calls need) ---------------------- */
typedef struct pi_task {
    volatile int done;
} pi_task_t;

pi_task_t *pi_task_block(pi_task_t *task);
void pi_task_wait_on(pi_task_t *task);

/* ---- cluster ------------------------------------------------------------ */
typedef enum {
    PI_CLUSTER_FLAGS_FORK_BASED = (0 << 0),
    PI_CLUSTER_FLAGS_TASK_BASED = (1 << 0)
} pi_cluster_flags_e;

struct pi_cluster_conf {
    pi_device_e device_type;
    int id;
    void *heap_start;
    uint32_t heap_size;
    void *event_kernel;
    pi_cluster_flags_e flags;
    uint32_t cc_stack_size;
    uint32_t icache_conf;
};

struct pi_cluster_task {
    void (*entry)(void *);
    void *arg;
    void *stacks;
    uint32_t stack_size;
    uint32_t slave_stack_size;
    int nb_cores;
    pi_task_t *completion_callback;
    int stack_allocated;
    struct pi_cluster_task *next;
};

void pi_cluster_conf_init(struct pi_cluster_conf *conf);
int pi_cluster_open(struct pi_device *device);
int pi_cluster_close(struct pi_device *device);
int pi_cluster_send_task_to_cl(struct pi_device *device, struct pi_cluster_task *task);
uint8_t pi_cluster_is_on(void);

static inline struct pi_cluster_task *pi_cluster_task(struct pi_cluster_task *task,
                                                      void (*entry)(void *), void *arg)
{
    memset(task, 0, sizeof(*task));
    task->entry = entry;
    task->arg = arg;
    return task;
}

static inline int pi_cluster_send_task(struct pi_device *device, struct pi_cluster_task *task)
{
    return pi_cluster_send_task_to_cl(device, task);
}

/* ---- cores and teams ---------------------------------------------------- */
uint32_t pi_core_id(void);
uint32_t pi_cluster_id(void);
int pi_is_fc(void);
int pi_cl_cluster_nb_cores(void);
int pi_cl_cluster_nb_pe_cores(void);
void pi_cl_team_fork(int nb_cores, void (*entry)(void *), void *arg);
void pi_cl_team_barrier(void);
int pi_cl_team_nb_cores(void);
void pi_cl_team_critical_enter(void);
void pi_cl_team_critical_exit(void);

/* ---- L1 / L2 allocators --------------------------------------------------
 * As in the GAP SDK, pi_l1_malloc / pi_l1_free are macros over the cluster
 * L1 allocator; the caller passes the size back when freeing. */
void *pi_cl_l1_malloc(struct pi_device *device, uint32_t size);
void pi_cl_l1_free(struct pi_device *device, void *chunk, int size);
#define pi_l1_malloc(dev, size) pi_cl_l1_malloc((dev), (size))
#define pi_l1_free(dev, chunk, size) pi_cl_l1_free((dev), (chunk), (size))

void *pi_l2_malloc(int size);
void pi_l2_free(void *chunk, int size);

/* A transfer the emulation defers until it is waited for (cluster DMA and
 * cluster RAM requests; see "cluster DMA" below). */
typedef struct dg_host_xfer_s {
    struct dg_host_xfer_s *next;
    int pending;
    int ram; /* 0: cluster DMA (ext L2, loc L1); 1: RAM (ext L3, loc L1/L2) */
    int to_loc;
    uintptr_t ext;
    uintptr_t loc;
    uint32_t size, stride, length;
} dg_host_xfer_t;

/* ---- cluster DMA: pmsis/cluster/dma/cl_dma.h ------------------------------
 * Between L2 (`ext`) and L1 (`loc`), with the SDK's signatures: addresses
 * are uint32_t (callers cast a pointer with (uint32_t)(uintptr_t)). The
 * emulation keeps its L1 and L2 memories, and the program image (the host
 * build links with -no-pie), below 4 GiB so such an address is the
 * pointer; an address outside them is a fatal error. As on the chips, a
 * 1-D copy's size and a 2-D line's length are 16-bit: larger ones are
 * truncated.
 *
 * Mistakes are made visible: a copy (DMA or cluster RAM request) moves its
 * bytes only when it is waited for (pi_cl_dma_cmd_wait, pi_cl_dma_flush,
 * pi_cl_ram_*_wait), so reading before the wait reads stale data; with
 * DG_HOST_DMA=random in the environment each pending copy moves at a
 * random point between its issue and its wait (at a later transfer call,
 * DG_HOST_DMA_SEED seeding the choice), so refilling a buffer that is
 * still read gives wrong results. */
typedef enum { PI_CL_DMA_DIR_LOC2EXT = 0, PI_CL_DMA_DIR_EXT2LOC = 1 } pi_cl_dma_dir_e;
typedef struct pi_cl_dma_cmd_s {
    dg_host_xfer_t xfer;
} pi_cl_dma_cmd_t;
void pi_cl_dma_cmd(uint32_t ext, uint32_t loc, uint32_t size, pi_cl_dma_dir_e dir,
                   pi_cl_dma_cmd_t *cmd);
void pi_cl_dma_cmd_2d(uint32_t ext, uint32_t loc, uint32_t size, uint32_t stride, uint32_t length,
                      pi_cl_dma_dir_e dir, pi_cl_dma_cmd_t *cmd);
void pi_cl_dma_cmd_wait(pi_cl_dma_cmd_t *cmd);
void pi_cl_dma_flush(void);

/* ---- performance counters ----------------------------------------------
 * The host has no cycle counter that means anything for the chip: the
 * emulation counts nanoseconds of wall time per thread and reports them as
 * PI_PERF_CYCLES / PI_PERF_ACTIVE_CYCLES. Other events read 0. */
typedef enum {
    PI_PERF_CYCLES = 17,
    PI_PERF_ACTIVE_CYCLES = 0,
    PI_PERF_INSTR = 1
} pi_perf_event_e;

void pi_perf_conf(unsigned events);
void pi_perf_reset(void);
void pi_perf_start(void);
void pi_perf_stop(void);
unsigned int pi_perf_read(int id);

/* ---- OS entry points ---------------------------------------------------- */
int pmsis_kickoff(void *arg);
void pmsis_exit(int err);

/* ---- emulation-only API (never in the SDK) -------------------------------
 * For tests and the deploygen runtime layer (dg_mem.c). */
typedef enum { DG_MEM_L1 = 1, DG_MEM_L2 = 2, DG_MEM_L3 = 3 } dg_mem_level_e;

/* Which level a pointer belongs to: L1 pool, L3 window, otherwise L2. */
int dg_host_mem_level(const void *ptr);
/* Bytes in use, peak and capacity of one level (1, 2, 3). */
void dg_host_mem_stats(int level, size_t *in_use, size_t *peak, size_t *capacity);
/* Print the per-level peak report now (it is also printed at exit). */
void dg_host_report(void);
/* Controller core id of the emulated platform (8 on GAP9, 0 otherwise). */
uint32_t dg_host_controller_core_id(void);
/* Non-zero while the calling thread runs inside pi_cl_team_fork(). */
int dg_host_in_fork(void);
/* Non-zero when forks run inline (DG_HOST_TEAM_INLINE / DG_HOST_TEAM=inline),
 * zero when every core of a fork runs on its own thread. */
int dg_host_team_inline(void);
/* The folder the emulated readfs reads its files from (DG_HEX_DIR, default
 * "hex"), as an absolute path when the working directory is known. */
const char *dg_host_fs_dir(void);
/* Print "[pmsis-host] FATAL: <msg>" and abort(). */
void dg_host_fatal(const char *msg);

#ifdef __cplusplus
}
#endif

#endif /* DG_PMSIS_HOST_PMSIS_H */
