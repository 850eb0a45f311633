//! The host emulation (`runtime/pmsis-host`) declares what generated code
//! calls with the real SDK's signatures and in the real SDK's headers
//! (`../shared/notes/pulp-sdk-facts.md`; the table below was read off
//! pulp-sdk d4b5bcdd): a type or function the SDK declares only in a
//! `bsp/` header is not visible through `pmsis.h` here either, so a
//! generated file that forgets an include fails `cargo test` as it would
//! fail against the SDK.

use crate::common;

use std::path::Path;
use std::process::Command;

const SIGNATURES: &str = r#"
#include "pmsis.h"
#include "bsp/ram.h"

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

/// How a declaration is used to see whether it is visible.
#[derive(Clone, Copy)]
enum Kind {
    /// A function (or a function-like inline).
    Fn,
    /// A typedef name.
    Type,
    /// A struct tag.
    Struct,
    /// An enumerator.
    Const,
}

use Kind::*;

/// Where the SDK declares each name the runtime and generated code use:
/// the header to include, and the names it (and nothing smaller) gives.
const SDK_HEADERS: &[(&str, &[(&str, Kind)])] = &[
    (
        "pmsis.h",
        &[
            ("pi_open_from_conf", Fn),
            ("pi_device", Struct),
            ("pi_task_t", Type),
            ("pi_cluster_conf", Struct),
            ("pi_cluster_task", Struct),
            ("pi_cluster_conf_init", Fn),
            ("pi_cluster_open", Fn),
            ("pi_cluster_close", Fn),
            ("pi_cluster_send_task_to_cl", Fn),
            ("pi_core_id", Fn),
            ("pi_is_fc", Fn),
            ("pi_cl_cluster_nb_cores", Fn),
            ("pi_cl_team_fork", Fn),
            ("pi_cl_team_barrier", Fn),
            ("pi_cl_l1_malloc", Fn),
            ("pi_cl_l1_free", Fn),
            ("pi_l2_malloc", Fn),
            ("pi_l2_free", Fn),
            ("pi_cl_dma_cmd", Fn),
            ("pi_cl_dma_cmd_2d", Fn),
            ("pi_cl_dma_cmd_wait", Fn),
            ("pi_cl_dma_flush", Fn),
            ("pi_cl_dma_cmd_t", Type),
            ("PI_CL_DMA_DIR_EXT2LOC", Const),
            ("pi_perf_conf", Fn),
            ("pi_perf_reset", Fn),
            ("pi_perf_start", Fn),
            ("pi_perf_stop", Fn),
            ("pi_perf_read", Fn),
            ("PI_PERF_CYCLES", Const),
            ("pmsis_kickoff", Fn),
            ("pmsis_exit", Fn),
        ],
    ),
    (
        "bsp/ram.h",
        &[
            ("pi_ram_conf", Struct),
            ("pi_ram_open", Fn),
            ("pi_ram_alloc", Fn),
            ("pi_ram_free", Fn),
            ("pi_ram_read", Fn),
            ("pi_ram_write", Fn),
            ("pi_cl_ram_req_t", Type),
            ("pi_cl_ram_read", Fn),
            ("pi_cl_ram_write", Fn),
            ("pi_cl_ram_read_2d", Fn),
            ("pi_cl_ram_write_2d", Fn),
            ("pi_cl_ram_read_wait", Fn),
            ("pi_cl_ram_write_wait", Fn),
        ],
    ),
    ("bsp/ram/hyperram.h", &[("pi_hyperram_conf", Struct), ("pi_hyperram_conf_init", Fn)]),
    ("bsp/flash.h", &[("pi_flash_conf", Struct), ("pi_flash_open", Fn), ("pi_flash_close", Fn)]),
    ("bsp/flash/hyperflash.h", &[("pi_hyperflash_conf", Struct), ("pi_hyperflash_conf_init", Fn)]),
    (
        "bsp/fs.h",
        &[
            ("pi_fs_conf", Struct),
            ("pi_fs_file_t", Type),
            ("pi_fs_mount", Fn),
            ("pi_fs_open", Fn),
            ("pi_fs_read", Fn),
            ("pi_fs_close", Fn),
            ("PI_FS_READ_ONLY", Const),
        ],
    ),
    ("bsp/fs/readfs.h", &[("pi_readfs_conf", Struct), ("pi_readfs_conf_init", Fn)]),
];

fn use_of(name: &str, kind: Kind) -> String {
    match kind {
        Fn => format!("const void *use_{name} = (const void *)&{name};\n"),
        Type => format!("unsigned long use_{name} = sizeof({name});\n"),
        Struct => format!("unsigned long use_{name} = sizeof(struct {name});\n"),
        Const => format!("int use_{name} = (int){name};\n"),
    }
}

fn have_gcc() -> bool {
    common::have_gcc(module_path!())
}

/// Compiles `src` against the host emulation; the compiler's stderr on failure.
fn compile(dir: &Path, file: &str, src: &str) -> Result<(), String> {
    let p = dir.join(file);
    std::fs::write(&p, src).unwrap();
    let inc = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/pmsis-host");
    let o = Command::new("gcc")
        .current_dir(dir)
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-D_POSIX_C_SOURCE=200809L", "-DDG_PLATFORM_SIRACUSA"])
        .args(["-fsyntax-only"])
        .arg(format!("-I{}", inc.display()))
        .arg(&p)
        .output()
        .expect("gcc");
    if o.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&o.stderr).into_owned())
    }
}

#[test]
fn dma_and_cluster_ram_calls_have_the_sdk_signatures() {
    if !have_gcc() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    compile(tmp.path(), "signatures.c", SIGNATURES).unwrap();
}

/// Each name is visible through the header the SDK declares it in, and a
/// `bsp/` name is not visible through `pmsis.h` alone.
#[test]
fn each_name_is_declared_in_the_header_the_sdk_declares_it_in() {
    if !have_gcc() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut wrong = vec![];
    for (i, (header, names)) in SDK_HEADERS.iter().enumerate() {
        let uses: String = names.iter().map(|(n, k)| use_of(n, *k)).collect();
        let src = format!("#include \"{header}\"\n{uses}");
        if let Err(e) = compile(tmp.path(), &format!("with{i}.c"), &src) {
            wrong.push(format!("{header} does not declare all of its names:\n{e}"));
        }
        if *header == "pmsis.h" {
            continue;
        }
        for (j, (n, k)) in names.iter().enumerate() {
            let src = format!("#include \"pmsis.h\"\n{}", use_of(n, *k));
            if compile(tmp.path(), &format!("without{i}_{j}.c"), &src).is_ok() {
                wrong.push(format!("{n} is visible through pmsis.h alone; the SDK declares it only in {header}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
