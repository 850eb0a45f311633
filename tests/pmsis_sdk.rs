//! The host emulation declares the cluster DMA and cluster-RAM calls that
//! tiled code makes with the real SDK's signatures
//! (`../shared/notes/pulp-sdk-facts.md`): `uint32_t` L2/L1 and L3
//! addresses, `pi_cl_dma_cmd_t`, `pi_cl_ram_req_t`. Code written against
//! the emulation then builds unchanged against the SDK.

use std::process::Command;

const SIGNATURES: &str = r#"
#include "pmsis.h"

void (*const dma_1d)(uint32_t, uint32_t, uint32_t, pi_cl_dma_dir_e, pi_cl_dma_cmd_t *) = pi_cl_dma_cmd;
void (*const dma_2d)(uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, pi_cl_dma_dir_e,
                     pi_cl_dma_cmd_t *) = pi_cl_dma_cmd_2d;
void (*const dma_wait)(pi_cl_dma_cmd_t *) = pi_cl_dma_cmd_wait;
void (*const ram_rd)(struct pi_device *, uint32_t, void *, uint32_t, pi_cl_ram_req_t *) = pi_cl_ram_read;
void (*const ram_wr)(struct pi_device *, uint32_t, void *, uint32_t, pi_cl_ram_req_t *) = pi_cl_ram_write;
void (*const ram_rd2)(struct pi_device *, uint32_t, void *, uint32_t, uint32_t, uint32_t,
                      pi_cl_ram_req_t *) = pi_cl_ram_read_2d;
void (*const ram_wr2)(struct pi_device *, uint32_t, void *, uint32_t, uint32_t, uint32_t,
                      pi_cl_ram_req_t *) = pi_cl_ram_write_2d;
void (*const ram_rd_wait)(pi_cl_ram_req_t *) = pi_cl_ram_read_wait;
void (*const ram_wr_wait)(pi_cl_ram_req_t *) = pi_cl_ram_write_wait;
"#;

#[test]
fn dma_and_cluster_ram_calls_have_the_sdk_signatures() {
    if !Command::new("gcc").arg("--version").output().is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED: no gcc on this machine");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("signatures.c");
    std::fs::write(&src, SIGNATURES).unwrap();
    let inc = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/pmsis-host");
    let o = Command::new("gcc")
        .current_dir(tmp.path())
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-D_POSIX_C_SOURCE=200809L", "-DDG_PLATFORM_GAP9", "-c"])
        .arg(format!("-I{}", inc.display()))
        .arg(&src)
        .output()
        .expect("gcc");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
