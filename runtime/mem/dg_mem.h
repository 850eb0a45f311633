/*
 * deploygen memory layer: the few L3 operations generated code needs, on
 * top of the PMSIS RAM API, plus dg_copy, the one copy between any two
 * levels (L3 is reached only through it: docs/architecture.md, "Memory
 * planning"; runtime/README.md lists the calls). The same source builds
 * against the GAP SDK, the PULP SDK and runtime/pmsis-host.
 *
 * L3 buffers are plain `void *` holding the 32-bit external-RAM address;
 * they must never be dereferenced (the cluster cannot address L3, and on
 * the host emulation such a dereference faults).
 *
 * Calls may come from the fabric controller or from the cluster controller:
 * the layer picks pi_ram_* or pi_cl_ram_* by pi_is_fc(). They must not be
 * called from inside a team fork.
 */
#ifndef DG_MEM_H
#define DG_MEM_H

#include "pmsis.h"
#include "dg_chips.h"
/* pi_cl_ram_req_t (the DMA queues hold cluster-RAM requests): the SDK
 * declares it in bsp/ram.h, which pmsis.h does not include. */
#include "bsp/ram.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { DG_LEVEL_L1 = 1, DG_LEVEL_L2 = 2, DG_LEVEL_L3 = 3 };

/* Opens the external RAM (and, on the real SDK, flash + readfs for
 * dg_load_file_to_l3). Returns 0 on success. */
int dg_mem_init(void);

/* NULL when L3 is exhausted (or dg_mem_init was not called). */
void *dg_l3_malloc(size_t size);
void dg_l3_free(void *l3, size_t size);
/* dst / src on the other side are L2 buffers. */
void dg_l3_read(void *dst_l2, const void *src_l3, size_t size);
void dg_l3_write(void *dst_l3, const void *src_l2, size_t size);

/* Loads a raw little-endian file ("N.hex") into an L3 buffer and returns
 * the number of bytes loaded, or (size_t)-1 when the file cannot be read or
 * is larger than max_size. Host emulation: files are read from the folder
 * named by the DG_HEX_DIR environment variable (default: DG_HEX_DIR_DEFAULT,
 * itself "hex" unless defined). Real SDK: from the readfs flash image. */
size_t dg_load_file_to_l3(void *dst_l3, const char *name, size_t max_size);

/* One piece of a packed L3 image: `bytes` bytes at `offset` of the file go
 * to the L3 buffer `at` bytes from bases[base] (dg_load_l3_image's), so that
 * the table can be static data. */
typedef struct {
    uint32_t base;
    uint32_t at;
    uint32_t offset;
    uint32_t bytes;
} dg_l3_segment_t;

/* Loads the segments of a packed image file (raw little-endian, segments
 * sorted by offset, as deploygen writes it) into their L3 buffers, reading
 * the file once. Returns 0, or -1 (with a FATAL line) when the file cannot
 * be read or is shorter than its last segment. Files are found like those
 * of dg_load_file_to_l3. */
int dg_load_l3_image(const char *name, void *const *bases, const dg_l3_segment_t *segs, uint32_t n);

/* Memory level of a pointer: DG_LEVEL_L1, _L2 or _L3. */
int dg_mem_level(const void *ptr);

/* Copies n bytes between any two levels: between L1 and L2 on the cluster
 * controller by the cluster DMA, L2 -> L2 and L1 -> L1 there split over the
 * cluster's cores (a memcpy on the fabric controller, or for a few bytes);
 * a RAM read for L3 -> L2, a RAM write for L2 -> L3, and staging through a
 * small L2 buffer for L3 -> L3 and L1 <-> L3. Not reentrant (one static
 * stage and DMA queue). */
void dg_copy(void *dst, const void *src, size_t n);

/* DG_DUMP(name, ptr, n), after every node of a generated network: with
 * -DDG_DUMP_TENSORS it appends the n floats at ptr (any level) to the dump
 * file (`deploygen test --bisect` compares them with references); without,
 * it is nothing. Record: u32 name length, name, u32 n, n little-endian
 * floats. The file is DG_DUMP_FILE, default dumps.bin (host emulation only). */
#ifdef DG_DUMP_TENSORS
#define DG_DUMP(name, ptr, n) dg_dump_tensor((name), (ptr), (n))
#else
#define DG_DUMP(name, ptr, n) ((void)0)
#endif
void dg_dump_tensor(const char *name, const void *src, uint32_t n);

/* DG_PROFILE_BEGIN() and DG_PROFILE_END(step, op, name) around every node
 * of a generated network: with -DDG_PROFILE each node prints
 *   BENCH node <step> <op> <name> cycles=<n>
 * (the cycle counter that the harness's run task started; nanoseconds on
 * the host emulation), which `deploygen report --profile` tabulates; without,
 * they are nothing. The printing itself falls between nodes, so a run's
 * total cycles include it and the per-node figures do not. */
#ifdef DG_PROFILE
#define DG_PROFILE_BEGIN() dg_profile_begin()
#define DG_PROFILE_END(step, op, name) dg_profile_end((step), (op), (name))
#else
#define DG_PROFILE_BEGIN() ((void)0)
#define DG_PROFILE_END(step, op, name) ((void)0)
#endif
void dg_profile_begin(void);
void dg_profile_end(uint32_t step, const char *op, const char *name);
/* ---- tiles: operand parts through the cluster DMA ----------------------
 * Called from the cluster controller, outside any team fork.
 *
 * One operand part as byte runs (deploygen's plan/tile.rs writes them):
 * `run` contiguous bytes at byte offset `off` of the tensor, repeated n[0]
 * times s[0] bytes apart, that n[1] times s[1] apart, that n[2] times s[2]
 * apart. In L1 the part is packed. */
typedef struct {
    uint32_t off, run;
    uint32_t n[3];
    uint32_t s[3];
} dg_box_t;

/* Commands in flight per queue; a full queue is waited for first. */
#ifndef DG_DMA_CMDS
#define DG_DMA_CMDS 8
#endif
/* Cluster-RAM requests in flight per queue (one per run group of a part). */
#ifndef DG_RAM_REQS
#define DG_RAM_REQS 8
#endif
/* Largest 1-D command: the SDK truncates 1-D copies of 64 KiB or more. */
#define DG_DMA_CHUNK 32768u
/* One queue per L1 tile buffer: its DMA commands, its L3 part's RAM
 * requests, and the DMA of a packed L2 stage into L1 that waits for them. */
typedef struct {
    pi_cl_dma_cmd_t cmd[DG_DMA_CMDS];
    uint32_t n;
    pi_cl_ram_req_t ram[DG_RAM_REQS];
    uint32_t nram;
    int ram_write;
    uint8_t *stage;
    uint8_t *l1;
    uint32_t stage_bytes;
} dg_dma_q_t;

/* An empty queue. */
void dg_dma_init(dg_dma_q_t *q);
/* Starts fetching a part of `home` into the L1 buffer `l1` on queue q.
 * `home` in L2: DMA straight from it. `home` in L3: the part is read into
 * the L2 buffer `stage` (packed) by cluster-RAM requests that run while the
 * cores compute; the DMA from the stage into L1 follows when q is waited
 * for. The data is in L1 only after dg_dma_wait(q). */
void dg_tile_in(const void *home, void *stage, void *l1, const dg_box_t *b, dg_dma_q_t *q);
/* Starts writing the L1 buffer `l1` back to its part of `home` on queue q.
 * `home` in L3: the buffer is DMA'd into `stage` (waited here) and the RAM
 * writes from the stage run while the cores compute. The buffer and the
 * stage may be refilled only after dg_dma_wait(q). */
void dg_tile_out(void *home, void *stage, const void *l1, const dg_box_t *b, dg_dma_q_t *q);
/* Waits for every transfer of q: RAM requests, then the stage's DMA into
 * L1 (issued now), then the DMA commands. */
void dg_dma_wait(dg_dma_q_t *q);

#ifdef __cplusplus
}
#endif

#endif /* DG_MEM_H */
