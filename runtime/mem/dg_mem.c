/* deploygen memory layer, see dg_mem.h. */
#include "dg_mem.h"

#include <stdio.h>
#include <string.h>

/* Copies on the cluster smaller than this stay one memcpy: a DMA command
 * or a fork costs more than they move. */
#ifndef DG_COPY_DMA_MIN
#define DG_COPY_DMA_MIN 256
#endif
/* The L2 stage of copies between L3 and L1 or L3: two halves, so the
 * RAM moves one while the cluster DMA moves the other. */
#ifndef DG_COPY_STAGE_BYTES
#define DG_COPY_STAGE_BYTES 8192
#endif
#define DG_STAGE_HALF (DG_COPY_STAGE_BYTES / 2)

static struct pi_device dg_ram_dev;
static int dg_ram_ready;
PI_L2 static uint8_t dg_stage[DG_COPY_STAGE_BYTES];

/* The RAM and the readfs image in flash: the same code on the SDKs and on
 * the host emulation (whose readfs is a folder). */
#include "bsp/bsp.h"
#include "bsp/flash.h"
#include "bsp/fs.h"
#include "bsp/fs/readfs.h"
#include "bsp/ram.h"
/* HyperRAM and HyperFlash where the board has them (dg_chips.h) */
#if defined(DG_CHIP_HYPERBUS_MEMORY)
#include "bsp/flash/hyperflash.h"
#include "bsp/ram/hyperram.h"
static struct pi_hyperram_conf dg_ram_conf;
#define DG_RAM_CONF_INIT(c) pi_hyperram_conf_init(c)
static struct pi_hyperflash_conf dg_flash_conf;
#define DG_FLASH_CONF_INIT(c) pi_hyperflash_conf_init(c)
#else
static struct pi_default_ram_conf dg_ram_conf;
#define DG_RAM_CONF_INIT(c) pi_default_ram_conf_init(c)
static struct pi_default_flash_conf dg_flash_conf;
#define DG_FLASH_CONF_INIT(c) pi_default_flash_conf_init(c)
#endif
/* A chip whose RAM driver takes one cluster-RAM request at a time
 * (dg_chips.h, e.g. Siracusa: overlapping requests of several queues hang
 * the PULP SDK's hyperram path on GVSoC) keeps one in flight across all
 * queues: the next request, of any queue, first waits for it. It still
 * overlaps the compute that follows its issue. */
#ifdef DG_CHIP_RAM_REQS_IN_FLIGHT
#if DG_CHIP_RAM_REQS_IN_FLIGHT != 1
#error "dg_mem.c keeps one RAM request in flight (a limit of 1); another limit needs a count"
#endif
#define DG_RAM_SERIAL 1
#else
#define DG_RAM_SERIAL 0
#endif
/* The queue whose RAM request is in flight (DG_RAM_SERIAL), or NULL. */
static dg_dma_q_t *dg_ram_busy;
static void dg_ram_settle(void);
static struct pi_device dg_flash_dev;
static struct pi_device dg_fs_dev;
static struct pi_readfs_conf dg_fs_conf;
static int dg_fs_ready;

int dg_mem_init(void)
{
    if (dg_ram_ready)
        return 0;
    DG_RAM_CONF_INIT(&dg_ram_conf);
    pi_open_from_conf(&dg_ram_dev, &dg_ram_conf);
    if (pi_ram_open(&dg_ram_dev) != 0) {
        printf("FATAL: cannot open the external RAM (L3)\r\n");
        return -1;
    }
    dg_ram_ready = 1;
    DG_FLASH_CONF_INIT(&dg_flash_conf);
    pi_open_from_conf(&dg_flash_dev, &dg_flash_conf);
    if (pi_flash_open(&dg_flash_dev) == 0) {
        pi_readfs_conf_init(&dg_fs_conf);
        dg_fs_conf.fs.flash = &dg_flash_dev;
        pi_open_from_conf(&dg_fs_dev, &dg_fs_conf);
        dg_fs_ready = (pi_fs_mount(&dg_fs_dev) == 0);
    }
    return 0;
}

void *dg_l3_malloc(size_t size)
{
    uint32_t addr = 0;
    if (!dg_ram_ready || size > 0xFFFFFFFFu)
        return NULL;
    if (pi_is_fc()) {
        if (pi_ram_alloc(&dg_ram_dev, &addr, (uint32_t)size) != 0)
            return NULL;
    } else {
        pi_cl_ram_alloc_req_t req;
        dg_ram_settle();
        pi_cl_ram_alloc(&dg_ram_dev, (uint32_t)size, &req);
        if (pi_cl_ram_alloc_wait(&req, &addr) != 0)
            return NULL;
    }
    return (void *)(uintptr_t)addr;
}

void dg_l3_free(void *l3, size_t size)
{
    if (!dg_ram_ready || l3 == NULL)
        return;
    if (pi_is_fc()) {
        pi_ram_free(&dg_ram_dev, (uint32_t)(uintptr_t)l3, (uint32_t)size);
    } else {
        pi_cl_ram_free_req_t req;
        dg_ram_settle();
        pi_cl_ram_free(&dg_ram_dev, (uint32_t)(uintptr_t)l3, (uint32_t)size, &req);
        pi_cl_ram_free_wait(&req);
    }
}

static void dg_l3_xfer(uint32_t l3, void *l2, size_t size, int ext2loc)
{
    if (size == 0)
        return;
    if (pi_is_fc()) {
        pi_ram_copy(&dg_ram_dev, l3, l2, (uint32_t)size, ext2loc);
    } else {
        pi_cl_ram_req_t req;
        dg_ram_settle();
        pi_cl_ram_copy(&dg_ram_dev, l3, l2, (uint32_t)size, ext2loc, &req);
        pi_cl_ram_copy_wait(&req);
    }
}

void dg_l3_read(void *dst_l2, const void *src_l3, size_t size)
{
    dg_l3_xfer((uint32_t)(uintptr_t)src_l3, dst_l2, size, 1);
}

void dg_l3_write(void *dst_l3, const void *src_l2, size_t size)
{
    /* The SDK takes a non-const local pointer; a write only reads it. */
    void *src;
    memcpy(&src, &src_l2, sizeof src);
    dg_l3_xfer((uint32_t)(uintptr_t)dst_l3, src, size, 0);
}

int dg_mem_level(const void *ptr)
{
#ifdef DG_PMSIS_HOST
    return dg_host_mem_level(ptr);
#else
    /* The chip's windows (dg_chips.h); L3 is anything else: on Siracusa
     * HyperRAM addresses sit below the on-chip memories. */
    uintptr_t p = (uintptr_t)ptr;
    if (p >= DG_CHIP_L1_BASE && p < DG_CHIP_L1_END)
        return DG_LEVEL_L1;
    if (p >= DG_CHIP_L2_BASE && p < DG_CHIP_L2_END)
        return DG_LEVEL_L2;
    return DG_LEVEL_L3;
#endif
}

static void dg_dma_lines(uint8_t *ext, uint8_t *loc, uint32_t run, uint32_t lines, uint32_t stride,
                         int to_l1, dg_dma_q_t *q);
static void dg_copy_l3_l1(uint8_t *l1, uint32_t l3, size_t n, int to_l1);

/* One share of a copy over the cluster team. */
typedef struct {
    uint8_t *dst;
    const uint8_t *src;
    size_t n;
} dg_copy_job_t;

static void dg_copy_share(void *arg)
{
    const dg_copy_job_t *j = (const dg_copy_job_t *)arg;
    const size_t cores = (size_t)pi_cl_team_nb_cores();
    const size_t per = ((j->n + cores - 1) / cores + 3u) & ~(size_t)3u;
    const size_t lo = per * pi_core_id();
    if (lo < j->n)
        memcpy(j->dst + lo, j->src + lo, j->n - lo < per ? j->n - lo : per);
}

/* L1 <-> L2 and L2 <-> L2 / L1 <-> L1 on the cluster controller: through
 * the cluster DMA, or split over the team's cores (a one-core memcpy
 * moves about a byte per 5 cycles). */
static void dg_copy_cluster(void *dst, const void *src, size_t n, int ld, int ls)
{
    static dg_dma_q_t q;
    if (ld != ls) {
        const int to_l1 = ld == DG_LEVEL_L1;
        uint8_t *from = (uint8_t *)(uintptr_t)src, *to = (uint8_t *)dst;
        dg_dma_init(&q);
        dg_dma_lines(to_l1 ? from : to, to_l1 ? to : from, (uint32_t)n, 1, 0, to_l1, &q);
        dg_dma_wait(&q);
    } else {
        dg_copy_job_t j;
        j.dst = (uint8_t *)dst;
        j.src = (const uint8_t *)src;
        j.n = n;
        pi_cl_team_fork(pi_cl_cluster_nb_cores(), dg_copy_share, &j);
    }
}

void dg_copy(void *dst, const void *src, size_t n)
{
    int ld = dg_mem_level(dst), ls = dg_mem_level(src);
    size_t done, k;
    if (n == 0 || dst == src)
        return;
    if (ld != DG_LEVEL_L3 && ls != DG_LEVEL_L3) {
        if (pi_is_fc() || n < DG_COPY_DMA_MIN)
            memcpy(dst, src, n);
        else
            dg_copy_cluster(dst, src, n, ld, ls);
    } else if (ld == DG_LEVEL_L2 && ls == DG_LEVEL_L3) {
        dg_l3_read(dst, src, n);
    } else if (ld == DG_LEVEL_L3 && ls == DG_LEVEL_L2) {
        dg_l3_write(dst, src, n);
    } else if (!pi_is_fc() && ld == DG_LEVEL_L1) {
        dg_copy_l3_l1((uint8_t *)dst, (uint32_t)(uintptr_t)src, n, 1);
    } else if (!pi_is_fc() && ls == DG_LEVEL_L1) {
        dg_copy_l3_l1((uint8_t *)(uintptr_t)src, (uint32_t)(uintptr_t)dst, n, 0);
    } else {
        /* L3 -> L3 (and L1 on the controller): through the L2 stage, chunk by chunk. */
        for (done = 0; done < n; done += k) {
            k = n - done < DG_COPY_STAGE_BYTES ? n - done : DG_COPY_STAGE_BYTES;
            if (ls == DG_LEVEL_L3)
                dg_l3_read(dg_stage, (const uint8_t *)src + done, k);
            else
                memcpy(dg_stage, (const uint8_t *)src + done, k);
            if (ld == DG_LEVEL_L3)
                dg_l3_write((uint8_t *)dst + done, dg_stage, k);
            else
                memcpy((uint8_t *)dst + done, dg_stage, k);
        }
    }
}

/* ---- tiles ------------------------------------------------------------- */
static pi_cl_dma_cmd_t *dg_dma_slot(dg_dma_q_t *q)
{
    if (q->n == DG_DMA_CMDS)
        dg_dma_wait(q);
    return &q->cmd[q->n++];
}

void dg_dma_init(dg_dma_q_t *q)
{
    if (dg_ram_busy == q)
        dg_ram_settle(); /* a queue reset with its request in flight */
    q->n = 0;
    q->nram = 0;
    q->ram_write = 0;
    q->stage = NULL;
    q->l1 = NULL;
    q->stage_bytes = 0;
}

/* Waits for the queue's RAM requests. */
static void dg_ram_wait(dg_dma_q_t *q)
{
    uint32_t i;
    for (i = 0; i < q->nram; i++) {
        if (q->ram_write)
            pi_cl_ram_write_wait(&q->ram[i]);
        else
            pi_cl_ram_read_wait(&q->ram[i]);
    }
    q->nram = 0;
    if (dg_ram_busy == q)
        dg_ram_busy = NULL;
}

/* Waits for the RAM request in flight, whichever queue issued it. */
static void dg_ram_settle(void)
{
    if (dg_ram_busy != NULL)
        dg_ram_wait(dg_ram_busy);
}

void dg_dma_wait(dg_dma_q_t *q)
{
    uint32_t i, bytes = q->stage_bytes;
    dg_ram_wait(q);
    if (bytes != 0) {
        /* The stage now holds the part: into L1. */
        q->stage_bytes = 0;
        dg_dma_lines(q->stage, q->l1, bytes, 1, 0, 1, q);
    }
    for (i = 0; i < q->n; i++)
        pi_cl_dma_cmd_wait(&q->cmd[i]);
    q->n = 0;
}

/* A cluster-side address, as the SDK's DMA takes it. */
static uint32_t dg_addr(const uint8_t *p) { return (uint32_t)(uintptr_t)p; }

/* `lines` lines of `run` bytes, `stride` apart in L2, packed in L1: 2-D
 * commands below 64 KiB each, 1-D chunks where the lines are contiguous
 * or too long. */
static void dg_dma_lines(uint8_t *ext, uint8_t *loc, uint32_t run, uint32_t lines, uint32_t stride,
                         int to_l1, dg_dma_q_t *q)
{
    pi_cl_dma_dir_e dir = to_l1 ? PI_CL_DMA_DIR_EXT2LOC : PI_CL_DMA_DIR_LOC2EXT;
    uint32_t i, k, done;
    if (lines == 1 || stride == run) {
        uint32_t total = run * lines;
        for (done = 0; done < total; done += k) {
            k = total - done < DG_DMA_CHUNK ? total - done : DG_DMA_CHUNK;
            pi_cl_dma_cmd(dg_addr(ext + done), dg_addr(loc + done), k, dir, dg_dma_slot(q));
        }
    } else if (run <= 0xFFFFu) {
        uint32_t per = 0xFFFFu / run;
        for (i = 0; i < lines; i += k) {
            k = lines - i < per ? lines - i : per;
            pi_cl_dma_cmd_2d(dg_addr(ext + (size_t)i * stride), dg_addr(loc + (size_t)i * run),
                             k * run, stride, run, dir, dg_dma_slot(q));
        }
    } else {
        for (i = 0; i < lines; i++)
            dg_dma_lines(ext + (size_t)i * stride, loc + (size_t)i * run, run, 1, run, to_l1, q);
    }
}

/* Offsets of group (i1, i2) of n[0] lines: in the tensor and packed. */
static uint32_t dg_box_ext(const dg_box_t *b, uint32_t i1, uint32_t i2)
{
    return b->off + i1 * b->s[1] + i2 * b->s[2];
}

static uint32_t dg_box_loc(const dg_box_t *b, uint32_t i1, uint32_t i2)
{
    return (i2 * b->n[1] + i1) * b->n[0] * b->run;
}

/* A free RAM request of q for a transfer in direction `write` (waiting
 * for the outstanding ones when full or of the other direction). */
static pi_cl_ram_req_t *dg_ram_slot(dg_dma_q_t *q, int write)
{
    if (DG_RAM_SERIAL)
        dg_ram_settle();
    if (q->nram == DG_RAM_REQS || (q->nram > 0 && q->ram_write != write))
        dg_ram_wait(q);
    q->ram_write = write;
    if (DG_RAM_SERIAL)
        dg_ram_busy = q;
    return &q->ram[q->nram++];
}

/* The bytes of the chunk at `done` of an n-byte staged copy. */
static uint32_t dg_stage_chunk(size_t n, size_t done)
{
    return (uint32_t)(n - done < DG_STAGE_HALF ? n - done : DG_STAGE_HALF);
}

/* n bytes between L3 and L1 on the cluster, DG_STAGE_HALF at a time:
 * chunk i's RAM transfer overlaps the cluster DMA of chunk i - 1 (reading)
 * or i + 1 (writing) through the other half of the stage. */
static void dg_copy_l3_l1(uint8_t *l1, uint32_t l3, size_t n, int to_l1)
{
    static dg_dma_q_t qr, qd; /* RAM requests; stage <-> L1 DMA */
    size_t done, k;
    uint32_t b = 0;
    dg_dma_init(&qr);
    dg_dma_init(&qd);
    if (to_l1)
        pi_cl_ram_read(&dg_ram_dev, l3, dg_stage, dg_stage_chunk(n, 0), dg_ram_slot(&qr, 0));
    for (done = 0; done < n; done += k, b ^= 1u) {
        uint8_t *half = dg_stage + b * DG_STAGE_HALF, *other = dg_stage + (b ^ 1u) * DG_STAGE_HALF;
        k = dg_stage_chunk(n, done);
        if (to_l1) {
            dg_ram_wait(&qr); /* chunk i is in `half` */
            dg_dma_wait(&qd); /* chunk i - 1 has left `other` */
            if (done + k < n)
                pi_cl_ram_read(&dg_ram_dev, l3 + (uint32_t)(done + k), other, dg_stage_chunk(n, done + k),
                               dg_ram_slot(&qr, 0));
            dg_dma_lines(half, l1 + done, (uint32_t)k, 1, 0, 1, &qd);
        } else {
            dg_dma_lines(half, l1 + done, (uint32_t)k, 1, 0, 0, &qd);
            dg_dma_wait(&qd);
            dg_ram_wait(&qr); /* chunk i - 1 is written; `other` is free */
            pi_cl_ram_write(&dg_ram_dev, l3 + (uint32_t)done, half, (uint32_t)k, dg_ram_slot(&qr, 1));
        }
    }
    dg_dma_wait(&qd);
    dg_ram_wait(&qr);
}

/* The RAM side of an L3 part, issued on q: L3 <-> the packed L2 stage. */
static void dg_ram_box(uint32_t l3, uint8_t *stage, const dg_box_t *b, int read, dg_dma_q_t *q)
{
    uint32_t bytes = b->run * b->n[0], i1, i2;
    for (i2 = 0; i2 < b->n[2]; i2++)
        for (i1 = 0; i1 < b->n[1]; i1++) {
            uint32_t eo = dg_box_ext(b, i1, i2), lo = dg_box_loc(b, i1, i2);
            pi_cl_ram_req_t *req = dg_ram_slot(q, !read);
            if (b->n[0] == 1 || b->s[0] == b->run) {
                if (read)
                    pi_cl_ram_read(&dg_ram_dev, l3 + eo, stage + lo, bytes, req);
                else
                    pi_cl_ram_write(&dg_ram_dev, l3 + eo, stage + lo, bytes, req);
            } else if (read) {
                pi_cl_ram_read_2d(&dg_ram_dev, l3 + eo, stage + lo, bytes, b->s[0], b->run, req);
            } else {
                pi_cl_ram_write_2d(&dg_ram_dev, l3 + eo, stage + lo, bytes, b->s[0], b->run, req);
            }
        }
}

static uint32_t dg_box_bytes(const dg_box_t *b) { return b->run * b->n[0] * b->n[1] * b->n[2]; }

void dg_tile_in(const void *home, void *stage, void *l1, const dg_box_t *b, dg_dma_q_t *q)
{
    uint8_t *h, *s = (uint8_t *)stage, *l = (uint8_t *)l1;
    uint32_t i1, i2;
    memcpy(&h, &home, sizeof h); /* the DMA takes a non-const address */
    if (stage != NULL) {
        if (q->stage_bytes != 0)
            dg_dma_wait(q);
        dg_ram_box((uint32_t)(uintptr_t)home, s, b, 1, q);
        q->stage = s;
        q->l1 = l;
        q->stage_bytes = dg_box_bytes(b);
        return;
    }
    for (i2 = 0; i2 < b->n[2]; i2++)
        for (i1 = 0; i1 < b->n[1]; i1++)
            dg_dma_lines(h + dg_box_ext(b, i1, i2), l + dg_box_loc(b, i1, i2), b->run, b->n[0], b->s[0], 1, q);
}

void dg_tile_out(void *home, void *stage, const void *l1, const dg_box_t *b, dg_dma_q_t *q)
{
    uint8_t *h = (uint8_t *)home, *s = (uint8_t *)stage, *l;
    uint32_t i1, i2;
    memcpy(&l, &l1, sizeof l);
    if (stage != NULL) {
        dg_dma_lines(s, l, dg_box_bytes(b), 1, 0, 0, q);
        dg_dma_wait(q);
        dg_ram_box((uint32_t)(uintptr_t)home, s, b, 0, q);
        return;
    }
    for (i2 = 0; i2 < b->n[2]; i2++)
        for (i1 = 0; i1 < b->n[1]; i1++)
            dg_dma_lines(h + dg_box_ext(b, i1, i2), l + dg_box_loc(b, i1, i2), b->run, b->n[0], b->s[0], 0, q);
}

/* ---- files: the readfs flash image (a folder on the host emulation) ---- */
typedef pi_fs_file_t dg_file_t;

static dg_file_t *dg_file_open(const char *name, size_t *size)
{
    pi_fs_file_t *fd;
    if (!dg_fs_ready)
        return NULL;
    fd = pi_fs_open(&dg_fs_dev, name, 0);
    if (fd != NULL)
        *size = fd->size;
    return fd;
}

static size_t dg_file_read(dg_file_t *f, void *buf, size_t n)
{
    int32_t k = pi_fs_read(f, buf, (uint32_t)n);
    return k < 0 ? 0 : (size_t)k;
}

static void dg_file_close(dg_file_t *f) { pi_fs_close(f); }

/* "FATAL: cannot open NAME", with the folder the host emulation looked in. */
static void dg_cannot_open(const char *name)
{
#ifdef DG_PMSIS_HOST
    printf("FATAL: cannot open %s in %s (the readfs folder: DG_HEX_DIR, default hex/ in the working directory)\r\n", name,
           dg_host_fs_dir());
#else
    printf("FATAL: cannot open %s in the flash file system (readfs)\r\n", name);
#endif
}

size_t dg_load_file_to_l3(void *dst_l3, const char *name, size_t max_size)
{
    size_t size = 0, total = 0, k;
    dg_file_t *f = dg_file_open(name, &size);
    if (f == NULL) {
        dg_cannot_open(name);
        return (size_t)-1;
    }
    if (size > max_size) {
        printf("FATAL: %s is larger than its L3 buffer (%lu B)\r\n", name, (unsigned long)max_size);
        dg_file_close(f);
        return (size_t)-1;
    }
    while (total < size) {
        k = size - total < sizeof dg_stage ? size - total : sizeof dg_stage;
        if (dg_file_read(f, dg_stage, k) != k) {
            dg_file_close(f);
            return (size_t)-1;
        }
        dg_l3_write((uint8_t *)dst_l3 + total, dg_stage, k);
        total += k;
    }
    dg_file_close(f);
    return total;
}

int dg_load_l3_image(const char *name, void *const *bases, const dg_l3_segment_t *segs, uint32_t n)
{
    size_t size = 0, pos = 0, k, want, skip;
    uint32_t i;
    dg_file_t *f = dg_file_open(name, &size);
    if (f == NULL) {
        dg_cannot_open(name);
        return -1;
    }
    for (i = 0; i < n; i++) {
        size_t end = (size_t)segs[i].offset + segs[i].bytes, done = 0;
        if (segs[i].offset < pos || end > size) {
            printf("FATAL: %s: segment %u (offset %lu, %lu B) is outside the file (%lu B)\r\n",
                   name, (unsigned)i, (unsigned long)segs[i].offset,
                   (unsigned long)segs[i].bytes, (unsigned long)size);
            dg_file_close(f);
            return -1;
        }
        /* Skip the padding between segments. */
        for (skip = segs[i].offset - pos; skip > 0; skip -= k) {
            k = skip < sizeof dg_stage ? skip : sizeof dg_stage;
            if (dg_file_read(f, dg_stage, k) != k)
                goto short_read;
        }
        while (done < segs[i].bytes) {
            want = segs[i].bytes - done;
            k = want < sizeof dg_stage ? want : sizeof dg_stage;
            if (dg_file_read(f, dg_stage, k) != k)
                goto short_read;
            dg_l3_write((uint8_t *)bases[segs[i].base] + segs[i].at + done, dg_stage, k);
            done += k;
        }
        pos = end;
    }
    dg_file_close(f);
    return 0;
short_read:
    printf("FATAL: %s: short read\r\n", name);
    dg_file_close(f);
    return -1;
}

/* ---- per-node cycles (DG_PROFILE) ----------------------------------------- */
static uint32_t dg_profile_t0;

void dg_profile_begin(void)
{
    dg_profile_t0 = pi_perf_read(PI_PERF_CYCLES);
}

void dg_profile_end(uint32_t step, const char *op, const char *name)
{
    /* Unsigned difference: right across one wrap of the 32-bit counter. */
    uint32_t cycles = (uint32_t)pi_perf_read(PI_PERF_CYCLES) - dg_profile_t0;
    printf("BENCH node %u %s %s cycles=%u\r\n", (unsigned)step, op, name, (unsigned)cycles);
}

/* ---- tensor dumps (DG_DUMP) ----------------------------------------------- */
#ifdef DG_PMSIS_HOST
#include <stdlib.h>

void dg_dump_tensor(const char *name, const void *src, uint32_t n)
{
    static FILE *out;
    static int opened;
    PI_L2 static float chunk[256];
    uint32_t len = (uint32_t)strlen(name), done, k;
    if (!opened) {
        const char *path = getenv("DG_DUMP_FILE");
        opened = 1;
        out = fopen(path != NULL && *path != '\0' ? path : "dumps.bin", "wb");
        if (out == NULL)
            printf("FATAL: cannot write the tensor dump %s\r\n", path != NULL ? path : "dumps.bin");
    }
    if (out == NULL)
        return;
    fwrite(&len, sizeof len, 1, out);
    fwrite(name, 1, len, out);
    fwrite(&n, sizeof n, 1, out);
    for (done = 0; done < n; done += k) {
        k = n - done < 256u ? n - done : 256u;
        dg_copy(chunk, (const uint8_t *)src + (size_t)done * sizeof(float), (size_t)k * sizeof(float));
        fwrite(chunk, sizeof(float), k, out);
    }
    fflush(out);
}
#else
void dg_dump_tensor(const char *name, const void *src, uint32_t n)
{
    (void)src;
    printf("[dump %s] %u values: tensor dumps need the host emulation\r\n", name, (unsigned)n);
}
#endif
