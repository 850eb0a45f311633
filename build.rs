//! Compiles the vendored `proto/onnx.proto` with protox (pure Rust), so the
//! build needs no system `protoc` and fetches nothing; and lists the
//! `runtime/` files copied into every generated project, so a new kernel
//! file is never forgotten.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The `runtime/` folders copied into a project (plus `runtime/README.md`).
const RUNTIME_DIRS: &[&str] = &["kernels", "mem", "harness", "pmsis-host"];

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("read a runtime folder entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// `$OUT_DIR/runtime_files.rs`: the `(path under runtime/, bytes)` table,
/// sorted by path.
fn runtime_table() {
    println!("cargo:rerun-if-changed=runtime");
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR")).join("runtime");
    let mut files = vec![root.join("README.md")];
    for d in RUNTIME_DIRS {
        walk(&root.join(d), &mut files);
    }
    let mut rel: Vec<(String, PathBuf)> = files
        .into_iter()
        .map(|p| {
            let r = p.strip_prefix(&root).expect("under runtime/");
            let s = r.components().map(|c| c.as_os_str().to_str().expect("UTF-8 runtime path")).collect::<Vec<_>>();
            (s.join("/"), p)
        })
        .collect();
    rel.sort();
    let mut code = String::from("&[\n");
    for (r, p) in &rel {
        writeln!(code, "    ({r:?}, include_bytes!({:?}) as &[u8]),", p.to_str().expect("UTF-8 path")).unwrap();
    }
    code.push_str("]\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("runtime_files.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("write {}: {e}", out.display()));
}

fn main() {
    println!("cargo:rerun-if-changed=proto/onnx.proto");
    runtime_table();
    let fds = protox::compile(["onnx.proto"], ["proto"]).expect("compile proto/onnx.proto");
    prost_build::Config::new().compile_fds(fds).expect("generate Rust code for onnx.proto");
}
