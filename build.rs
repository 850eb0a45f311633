//! Compiles the vendored `proto/onnx.proto` with protox (pure Rust), so the
//! build needs no system `protoc` and fetches nothing; and lists the
//! `runtime/` files copied into every generated project, so a new kernel
//! file is never forgotten, with the functions each kernel file defines
//! and uses, so a project lists only the kernel files its calls need.

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

/// `dg_*` identifiers in `text`, in order of appearance.
fn dg_idents(text: &str) -> Vec<String> {
    let mut out = vec![];
    let b = text.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        if word(b[i]) {
            let start = i;
            while i < b.len() && word(b[i]) {
                i += 1;
            }
            if text[start..i].starts_with("dg_") {
                out.push(text[start..i].to_string());
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The external functions and variables a kernel file defines: top-level
/// lines (column 0, not `static`, `extern`, `typedef`, a directive or a
/// comment), named by the `dg_*` identifier before the first `(` of a
/// function head, the first argument of a defining macro, or the last
/// identifier of a variable definition.
fn definitions(text: &str) -> Vec<String> {
    let mut out = vec![];
    for line in text.lines() {
        let l = line.trim_end();
        let skip = ["static", "extern", "typedef", "#", "/", "*", "{", "}"];
        if l.is_empty() || l.starts_with(char::is_whitespace) || skip.iter().any(|s| l.starts_with(s)) {
            continue;
        }
        let name = match l.find('(') {
            // `DG_UNARY_KERNEL(dg_exp_f32, …)`: a macro that defines its first argument.
            Some(p) if l[..p].bytes().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_') => {
                dg_idents(&l[p..]).into_iter().next()
            }
            Some(p) if !l.ends_with(';') => dg_idents(&l[..p]).pop(),
            None if l.ends_with(';') => dg_idents(l.split(['=', '[']).next().unwrap_or("")).pop(),
            _ => None,
        };
        out.extend(name);
    }
    out
}

/// What a header brings into every file that includes it beyond
/// declarations: the `dg_*` names in its macro bodies and `static inline`
/// function bodies.
fn header_uses(text: &str) -> Vec<String> {
    let mut out = vec![];
    let (mut in_macro, mut depth, mut in_inline) = (false, 0i32, false);
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("#define") || in_macro {
            out.extend(dg_idents(line));
            in_macro = line.trim_end().ends_with('\\');
            continue;
        }
        if t.starts_with("static inline") {
            in_inline = true;
        }
        if in_inline {
            out.extend(dg_idents(line));
            depth += line.matches('{').count() as i32 - line.matches('}').count() as i32;
            if depth == 0 && line.contains('}') {
                in_inline = false;
            }
        }
    }
    out
}

/// `$OUT_DIR/runtime_symbols.rs`: per `kernels/*.c` file, the names it
/// defines and the `dg_*` names it (or a header it includes) uses.
fn kernel_symbols() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR")).join("runtime/kernels");
    let mut files = vec![];
    walk(&dir, &mut files);
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
    let mut code = String::from("&[\n");
    for p in files.iter().filter(|p| p.extension().is_some_and(|e| e == "c")) {
        let text = read(p);
        let mut uses = dg_idents(&text);
        for l in text.lines().filter(|l| l.trim_start().starts_with("#include \"")) {
            let h = dir.join(l.split('"').nth(1).unwrap_or(""));
            if h.is_file() {
                uses.extend(header_uses(&read(&h)));
            }
        }
        let defs = definitions(&text);
        uses.sort();
        uses.dedup();
        uses.retain(|u| !defs.contains(u));
        let name = format!("kernels/{}", p.file_name().and_then(|f| f.to_str()).expect("UTF-8 kernel file name"));
        writeln!(code, "    ({name:?}, &{defs:?}, &{uses:?}),").unwrap();
    }
    code.push_str("]\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("runtime_symbols.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("write {}: {e}", out.display()));
}

fn main() {
    println!("cargo:rerun-if-changed=proto/onnx.proto");
    runtime_table();
    kernel_symbols();
    let fds = protox::compile(["onnx.proto"], ["proto"]).expect("compile proto/onnx.proto");
    prost_build::Config::new().compile_fds(fds).expect("generate Rust code for onnx.proto");
}
