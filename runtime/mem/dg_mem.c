/* deploygen memory layer, see dg_mem.h. */
#include "dg_mem.h"

#include <stdio.h>
#include <string.h>

#ifndef DG_COPY_STAGE_BYTES
#define DG_COPY_STAGE_BYTES 1024
#endif
#ifndef DG_HEX_DIR_DEFAULT
#define DG_HEX_DIR_DEFAULT "hex"
#endif

static struct pi_device dg_ram_dev;
static int dg_ram_ready;
PI_L2 static uint8_t dg_stage[DG_COPY_STAGE_BYTES];

#ifndef DG_PMSIS_HOST
/* Real SDK: the RAM and the readfs image in flash. */
#include "bsp/bsp.h"
#include "bsp/flash.h"
#include "bsp/fs.h"
#include "bsp/fs/readfs.h"
#include "bsp/ram.h"
#if defined(DG_PLATFORM_GAP9)
static struct pi_default_ram_conf dg_ram_conf;
#define DG_RAM_CONF_INIT(c) pi_default_ram_conf_init(c)
static struct pi_default_flash_conf dg_flash_conf;
#define DG_FLASH_CONF_INIT(c) pi_default_flash_conf_init(c)
#else
#include "bsp/flash/hyperflash.h"
#include "bsp/ram/hyperram.h"
static struct pi_hyperram_conf dg_ram_conf;
#define DG_RAM_CONF_INIT(c) pi_hyperram_conf_init(c)
static struct pi_hyperflash_conf dg_flash_conf;
#define DG_FLASH_CONF_INIT(c) pi_hyperflash_conf_init(c)
#endif
static struct pi_device dg_flash_dev;
static struct pi_device dg_fs_dev;
static struct pi_readfs_conf dg_fs_conf;
static int dg_fs_ready;
#else
static struct pi_default_ram_conf dg_ram_conf;
#define DG_RAM_CONF_INIT(c) pi_default_ram_conf_init(c)
#endif

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
#ifndef DG_PMSIS_HOST
    DG_FLASH_CONF_INIT(&dg_flash_conf);
    pi_open_from_conf(&dg_flash_dev, &dg_flash_conf);
    if (pi_flash_open(&dg_flash_dev) == 0) {
        pi_readfs_conf_init(&dg_fs_conf);
        dg_fs_conf.fs.flash = &dg_flash_dev;
        pi_open_from_conf(&dg_fs_dev, &dg_fs_conf);
        dg_fs_ready = (pi_fs_mount(&dg_fs_dev) == 0);
    }
#endif
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
    uintptr_t p = (uintptr_t)ptr;
#if defined(DG_PLATFORM_GAP9)
    if (p >= 0x10000000u && p < 0x10040000u)
        return DG_LEVEL_L1;
    if (p >= 0x1C000000u && p < 0x1C200000u)
        return DG_LEVEL_L2;
    return DG_LEVEL_L3;
#else
    /* Siracusa: HyperRAM addresses sit below the on-chip memories. */
    if (p < 0x10000000u)
        return DG_LEVEL_L3;
    if (p < 0x10400000u)
        return DG_LEVEL_L1;
    return DG_LEVEL_L2;
#endif
#endif
}

void dg_copy(void *dst, const void *src, size_t n)
{
    int ld = dg_mem_level(dst), ls = dg_mem_level(src);
    size_t done, k;
    if (n == 0 || dst == src)
        return;
    if (ld != DG_LEVEL_L3 && ls != DG_LEVEL_L3) {
        memcpy(dst, src, n);
    } else if (ld == DG_LEVEL_L2 && ls == DG_LEVEL_L3) {
        dg_l3_read(dst, src, n);
    } else if (ld == DG_LEVEL_L3 && ls == DG_LEVEL_L2) {
        dg_l3_write(dst, src, n);
    } else {
        /* L3 -> L3, L1 -> L3, L3 -> L1: through the L2 stage, chunk by chunk. */
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

#ifdef DG_PMSIS_HOST
#include <stdlib.h>

size_t dg_load_file_to_l3(void *dst_l3, const char *name, size_t max_size)
{
    const char *dir = getenv("DG_HEX_DIR");
    char path[1024];
    FILE *f;
    size_t total = 0, k;
    if (dir == NULL || *dir == '\0')
        dir = DG_HEX_DIR_DEFAULT;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return (size_t)-1;
    f = fopen(path, "rb");
    if (f == NULL) {
        printf("FATAL: cannot open %s\r\n", path);
        return (size_t)-1;
    }
    while ((k = fread(dg_stage, 1, sizeof dg_stage, f)) > 0) {
        if (total + k > max_size) {
            printf("FATAL: %s is larger than its L3 buffer (%lu B)\r\n", path,
                   (unsigned long)max_size);
            fclose(f);
            return (size_t)-1;
        }
        dg_l3_write((uint8_t *)dst_l3 + total, dg_stage, k);
        total += k;
    }
    fclose(f);
    return total;
}
#else
size_t dg_load_file_to_l3(void *dst_l3, const char *name, size_t max_size)
{
    pi_fs_file_t *fd;
    size_t total = 0, k;
    if (!dg_fs_ready)
        return (size_t)-1;
    fd = pi_fs_open(&dg_fs_dev, name, 0);
    if (fd == NULL) {
        printf("FATAL: cannot open %s\r\n", name);
        return (size_t)-1;
    }
    if (fd->size > max_size) {
        printf("FATAL: %s is larger than its L3 buffer (%lu B)\r\n", name,
               (unsigned long)max_size);
        pi_fs_close(fd);
        return (size_t)-1;
    }
    while (total < fd->size) {
        k = fd->size - total < sizeof dg_stage ? fd->size - total : sizeof dg_stage;
        if ((size_t)pi_fs_read(fd, dg_stage, k) != k) {
            pi_fs_close(fd);
            return (size_t)-1;
        }
        dg_l3_write((uint8_t *)dst_l3 + total, dg_stage, k);
        total += k;
    }
    pi_fs_close(fd);
    return total;
}
#endif
