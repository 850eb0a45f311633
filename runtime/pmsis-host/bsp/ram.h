/*
 * pmsis-host: external RAM (L3), declared where the SDK declares it (bsp/ram.h):
 * pi_ram_* from the fabric controller, pi_cl_ram_* from the cluster.
 */
#ifndef DG_PMSIS_HOST_BSP_RAM_H
#define DG_PMSIS_HOST_BSP_RAM_H

#include "pmsis.h"

#ifdef __cplusplus
extern "C" {
#endif

struct pi_ram_conf {
    void *api;
};
typedef struct pi_cl_ram_req_s {
    struct pi_device *device;
    void *addr;
    uint32_t pi_ram_addr;
    uint32_t size;
    uint8_t done;
    unsigned char ext2loc;
    dg_host_xfer_t xfer;
} pi_cl_ram_req_t;

typedef struct pi_cl_ram_alloc_req_s {
    struct pi_device *device;
    uint32_t result;
    uint32_t size;
    uint8_t done;
    char error;
} pi_cl_ram_alloc_req_t;

typedef struct pi_cl_ram_free_req_s {
    struct pi_device *device;
    uint32_t result;
    uint32_t size;
    uint32_t chunk;
    uint8_t done;
    char error;
} pi_cl_ram_free_req_t;

int32_t pi_ram_open(struct pi_device *device);
void pi_ram_close(struct pi_device *device);
int pi_ram_alloc(struct pi_device *device, uint32_t *addr, uint32_t size);
int pi_ram_free(struct pi_device *device, uint32_t addr, uint32_t size);
void pi_ram_read(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size);
void pi_ram_write(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size);
void pi_ram_copy(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size,
                 int ext2loc);

void pi_cl_ram_alloc(struct pi_device *device, uint32_t size, pi_cl_ram_alloc_req_t *req);
int32_t pi_cl_ram_alloc_wait(pi_cl_ram_alloc_req_t *req, uint32_t *chunk);
void pi_cl_ram_free(struct pi_device *device, uint32_t chunk, uint32_t size,
                    pi_cl_ram_free_req_t *req);
int32_t pi_cl_ram_free_wait(pi_cl_ram_free_req_t *req);
void pi_cl_ram_copy(struct pi_device *device, uint32_t pi_ram_addr, void *addr, uint32_t size,
                    int ext2loc, pi_cl_ram_req_t *req);
void pi_cl_ram_copy_wait(pi_cl_ram_req_t *req);

static inline void pi_cl_ram_read(struct pi_device *device, uint32_t pi_ram_addr, void *addr,
                                  uint32_t size, pi_cl_ram_req_t *req)
{
    pi_cl_ram_copy(device, pi_ram_addr, addr, size, 1, req);
}
static inline void pi_cl_ram_write(struct pi_device *device, uint32_t pi_ram_addr, void *addr,
                                   uint32_t size, pi_cl_ram_req_t *req)
{
    pi_cl_ram_copy(device, pi_ram_addr, addr, size, 0, req);
}
static inline void pi_cl_ram_read_wait(pi_cl_ram_req_t *req) { pi_cl_ram_copy_wait(req); }
static inline void pi_cl_ram_write_wait(pi_cl_ram_req_t *req) { pi_cl_ram_copy_wait(req); }
/* 2-D: `size` bytes in lines of `length` bytes, `stride` bytes apart in
 * L3; the local buffer is contiguous. */
void pi_cl_ram_copy_2d(struct pi_device *device, uint32_t pi_ram_addr, void *addr, uint32_t size,
                       uint32_t stride, uint32_t length, int ext2loc, pi_cl_ram_req_t *req);
static inline void pi_cl_ram_read_2d(struct pi_device *device, uint32_t pi_ram_addr, void *addr,
                                     uint32_t size, uint32_t stride, uint32_t length,
                                     pi_cl_ram_req_t *req)
{
    pi_cl_ram_copy_2d(device, pi_ram_addr, addr, size, stride, length, 1, req);
}
static inline void pi_cl_ram_write_2d(struct pi_device *device, uint32_t pi_ram_addr, void *addr,
                                      uint32_t size, uint32_t stride, uint32_t length,
                                      pi_cl_ram_req_t *req)
{
    pi_cl_ram_copy_2d(device, pi_ram_addr, addr, size, stride, length, 0, req);
}

#ifdef __cplusplus
}
#endif

#endif /* DG_PMSIS_HOST_BSP_RAM_H */
