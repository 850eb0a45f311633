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

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
}

/// The runtime headers `text` (the file `at`) includes with `#include "…"`,
/// and the headers they include, each once, in order of first inclusion
/// (a name that is no file beside the includer, as `pmsis.h`, is the
/// SDK's or the emulation's and left out).
fn included(at: &Path, text: &str, seen: &mut Vec<PathBuf>) {
    for l in text.lines().filter(|l| l.trim_start().starts_with("#include \"")) {
        let h = at.parent().expect("a runtime file's folder").join(l.split('"').nth(1).unwrap_or(""));
        let Ok(h) = h.canonicalize() else { continue };
        if h.is_file() && !seen.contains(&h) {
            seen.push(h.clone());
            included(&h, &read(&h), seen);
        }
    }
}

/// `$OUT_DIR/runtime_symbols.rs`: per `kernels/*.c` file, the names it
/// defines and the `dg_*` names it (or a header it includes, directly or
/// through another header) uses.
fn kernel_symbols() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR")).join("runtime/kernels");
    let mut files = vec![];
    walk(&dir, &mut files);
    let mut code = String::from("&[\n");
    for p in files.iter().filter(|p| p.extension().is_some_and(|e| e == "c")) {
        let text = read(p);
        let mut uses = dg_idents(&text);
        let mut headers = vec![];
        included(p, &text, &mut headers);
        for h in &headers {
            uses.extend(header_uses(&read(h)));
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

/// `text` without its `/* */` comments.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("/*") {
        out.push_str(&rest[..i]);
        rest = rest[i + 2..].find("*/").map_or("", |j| &rest[i + 2 + j + 2..]);
    }
    out.push_str(rest);
    out
}

/// One field declarator of a struct: name, C type of an element
/// (`ptr` for any pointer) and array dimensions.
fn declarator(base: &str, decl: &str, defines: &[(String, u64)]) -> (String, String, Vec<u64>) {
    let (head, dims) = match decl.find('[') {
        Some(i) => (&decl[..i], &decl[i..]),
        None => (decl, ""),
    };
    let name = head.trim().rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next().unwrap_or("").to_string();
    let ctype = if head.contains('*') || base.contains('*') { "ptr".to_string() } else { base.trim().to_string() };
    let dims = dims
        .split(['[', ']'])
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| d.parse().ok().or_else(|| defines.iter().find(|(n, _)| n == d).map(|(_, v)| *v)))
        .map(|d| d.unwrap_or_else(|| panic!("dg_kernels.h: array size of {name} is not a number or a #define")))
        .collect();
    (name, ctype, dims)
}

/// The declarators of one field statement (`uint32_t m, n, k`, `const
/// float *const *x`): the base type binds to all, stars to one each.
fn statement(stmt: &str, defines: &[(String, u64)]) -> Vec<(String, String, Vec<u64>)> {
    let mut parts = stmt.split(',');
    let first = parts.next().unwrap_or("");
    let name_at = first.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '[' || c == ']'));
    let cut = first[..name_at.map_or(0, |i| i + 1)].trim_end_matches(['*', ' ']).len();
    let cut = cut.min(first.find('[').unwrap_or(first.len()));
    let base = first[..cut].trim().trim_end_matches("const").trim();
    let mut out = vec![declarator(base, &first[cut..], defines)];
    out.extend(parts.map(|d| declarator(base, d, defines)));
    out
}

/// `$OUT_DIR/kernel_args.rs`: every `dg_*_args_t` of
/// `runtime/kernels/dg_kernels.h` and the family headers it includes
/// (`dg_k_*.h`) as `(struct, [(field, element type,
/// dims, optional)])` — a field is optional when its line's comment says
/// `optional` (its zero means off) — and `$OUT_DIR/kernel_enums.rs`, the
/// header's enumerators; for the emitter's check of each kernel call.
fn kernel_args() {
    let p = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"))
        .join("runtime/kernels/dg_kernels.h");
    let mut raw = read(&p);
    let mut headers = vec![];
    included(&p, &raw, &mut headers);
    for h in headers.iter().filter(|h| h.file_name().and_then(|f| f.to_str()).is_some_and(|f| f.starts_with("dg_k_"))) {
        raw.push_str(&read(h));
    }
    let defines: Vec<(String, u64)> = raw
        .lines()
        .filter_map(|l| l.trim().strip_prefix("#define "))
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            Some((f.next()?.to_string(), f.next()?.trim_end_matches('u').parse().ok()?))
        })
        .collect();
    let mut code = String::from("&[\n");
    let (mut fields, mut in_struct, mut in_comment) = (vec![], false, false);
    for line in raw.lines() {
        let t = line.trim();
        if t.starts_with("typedef struct {") {
            (in_struct, in_comment) = (true, false);
            fields.clear();
            continue;
        }
        if !in_struct {
            continue;
        }
        // This line's code and its comment text.
        let (mut code_part, mut comment) = (String::new(), String::new());
        let mut rest = line;
        while !rest.is_empty() {
            if in_comment {
                let end = rest.find("*/");
                comment.push_str(&rest[..end.unwrap_or(rest.len())]);
                rest = end.map_or("", |e| &rest[e + 2..]);
                in_comment = end.is_none();
            } else if let Some(i) = rest.find("/*") {
                code_part.push_str(&rest[..i]);
                rest = &rest[i + 2..];
                in_comment = true;
            } else {
                code_part.push_str(rest);
                rest = "";
            }
        }
        if let Some(close) = code_part.find('}') {
            in_struct = false;
            let name = code_part[close + 1..].trim().trim_end_matches(';').trim().to_string();
            if name.ends_with("_args_t") {
                let f: Vec<String> = fields
                    .iter()
                    .map(|(n, t, d, o): &(String, String, Vec<u64>, bool)| format!("({n:?}, {t:?}, &{d:?}, {o})"))
                    .collect();
                writeln!(code, "    ({name:?}, &[{}]),", f.join(", ")).unwrap();
            }
            continue;
        }
        let optional = comment.contains("optional");
        for stmt in code_part.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            fields.extend(statement(stmt, &defines).into_iter().map(|(n, t, d)| (n, t, d, optional)));
        }
    }
    code.push_str("]\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("kernel_args.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("write {}: {e}", out.display()));
    let text = strip_comments(&raw);
    let mut enums = vec![];
    let mut rest = text.as_str();
    while let Some(i) = rest.find("enum") {
        let Some(open) = rest[i..].find('{') else { break };
        let close = rest[i + open..].find('}').expect("an enum closes") + i + open;
        for item in rest[i + open + 1..close].split(',') {
            let n = item.split('=').next().unwrap_or("").trim();
            if !n.is_empty() {
                enums.push(n.to_string());
            }
        }
        rest = &rest[close..];
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("kernel_enums.rs");
    std::fs::write(&out, format!("&{enums:?}\n")).unwrap_or_else(|e| panic!("write {}: {e}", out.display()));
}

fn main() {
    println!("cargo:rerun-if-changed=proto/onnx.proto");
    runtime_table();
    kernel_symbols();
    kernel_args();
    let fds = protox::compile(["onnx.proto"], ["proto"]).expect("compile proto/onnx.proto");
    prost_build::Config::new().compile_fds(fds).expect("generate Rust code for onnx.proto");
}
