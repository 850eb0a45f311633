/*
 * pmsis-host: file systems (bsp/fs.h). The emulated readfs image is a
 * folder: the directory named by the DG_HEX_DIR environment variable,
 * "hex" by default (the generated project keeps its READFS_FILES there).
 * pi_fs_open takes a file's base name, as on the chips.
 */
#ifndef DG_PMSIS_HOST_BSP_FS_H
#define DG_PMSIS_HOST_BSP_FS_H

#include "pmsis.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { PI_FS_READ_ONLY = 0, PI_FS_HOST = 1 } pi_fs_type_e;
struct pi_fs_conf {
    pi_fs_type_e type;
    struct pi_device *flash;
};
typedef struct pi_fs_file_s {
    uint32_t size;
    void *handle;
} pi_fs_file_t;
int32_t pi_fs_mount(struct pi_device *device);
void pi_fs_unmount(struct pi_device *device);
pi_fs_file_t *pi_fs_open(struct pi_device *device, const char *file, int flags);
void pi_fs_close(pi_fs_file_t *file);
int32_t pi_fs_read(pi_fs_file_t *file, void *buffer, uint32_t size);

#ifdef __cplusplus
}
#endif

#endif /* DG_PMSIS_HOST_BSP_FS_H */
