//! Stacks on the chip. A cluster stack that is too small overwrites the
//! L1 arena beside it without a word, so the code a project runs on the
//! cluster is compiled here for 32-bit RISC-V and its worst-case stack
//! use (each function's frame plus its deepest chain of callees, read off
//! the disassembly) is checked against what the project gives it:
//!
//! - every kernel entry against `runtime/kernels/stack_usage.txt`, for
//!   clang -O3 (zfinx, as a chip build compiles the kernels) and gcc -O2
//!   (soft-float); `UPDATE_STACKS=1` rewrites the table;
//! - the network, runtime, `dg_model.c` and harness code of zoo projects,
//!   built with gcc -O2 as the SDK builds them, against the `STACK_SIZE` /
//!   `CC_STACK_SIZE` the generated `dg_model.h` asks for (on Siracusa
//!   core 0 also runs its share of every kernel on that stack).
//!
//! Calls through a pointer may reach any function whose address the same
//! object takes; a recursive function must be listed in [`RECURSION`] with
//! its depth. Functions outside the compiled files (the SDK's, libc's) are
//! covered by `SDK_MARGIN_BYTES`.
//!
//! Needs Debian's `gcc-riscv64-unknown-elf` and `picolibc-riscv64-unknown-elf`
//! and `python3 -m ziglang`; `.ci/run` installs them.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use deploygen::target::{kernel_stacks, Platform, SDK_MARGIN_BYTES};

/// Functions that call back into themselves, and how deep: conv_interior
/// splits an accumulating row into tiles it then calls itself on once;
/// dg_dma_wait issues the stage's DMA, whose full queue waits once more
/// with the stage already gone.
const RECURSION: &[(&str, u64)] = &[("conv_interior", 2), ("dg_dma_wait", 2)];

fn recursion_depth(f: &str) -> u64 {
    let base = f.split('@').next().unwrap();
    RECURSION.iter().find(|(n, _)| *n == base).map_or(1, |(_, d)| *d)
}

const GCC: &str = "riscv64-unknown-elf-gcc";
const OBJDUMP: &str = "riscv64-unknown-elf-objdump";
const NM: &str = "riscv64-unknown-elf-nm";
const PICOLIBC: &str = "/usr/lib/picolibc/riscv64-unknown-elf/include";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn works(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd).args(args).output().is_ok_and(|o| o.status.success())
}

/// The missing tools, if any.
fn missing_tools() -> Vec<&'static str> {
    let mut m = vec![];
    if !works(GCC, &["--version"]) || !works(OBJDUMP, &["--version"]) {
        m.push("gcc-riscv64-unknown-elf");
    }
    if !Path::new(PICOLIBC).join("stdint.h").is_file() {
        m.push("picolibc-riscv64-unknown-elf");
    }
    if !works("python3", &["-m", "ziglang", "version"]) {
        m.push("python3 -m ziglang");
    }
    m
}

fn tools_or_skip(test: &str) -> bool {
    let m = missing_tools();
    if m.is_empty() {
        common::ran(test);
        return true;
    }
    common::skip_unless_ci(test, &format!("missing {}", m.join(", ")));
    false
}

#[derive(Clone, Copy)]
enum Compiler {
    /// ziglang's clang, as a chip build compiles `runtime/kernels`.
    ClangO3,
    /// Debian's riscv gcc, as the SDK compiles everything else.
    GccO2,
}

/// Compiles `src` into `out` (an object) with the project's include folders.
fn compile(c: Compiler, src: &Path, out: &Path, includes: &[PathBuf], defines: &[&str]) {
    let mut cmd = match c {
        Compiler::ClangO3 => {
            let mut k = Command::new("python3");
            k.args(["-m", "ziglang", "cc", "-target", "riscv32-linux-musl", "-mcpu=generic_rv32+m+c+zfinx"]);
            k.args(["-mabi=ilp32", "-O3"]);
            k
        }
        Compiler::GccO2 => {
            let mut k = Command::new(GCC);
            k.args(["-march=rv32imc", "-mabi=ilp32", "-misa-spec=2.2", "-O2", "-std=gnu99"]);
            k.arg("-idirafter").arg(PICOLIBC);
            k
        }
    };
    cmd.arg("-c").arg(src).arg("-o").arg(out);
    for i in includes {
        cmd.arg(format!("-I{}", i.display()));
    }
    cmd.args(defines.iter().map(|d| format!("-D{d}")));
    let o = cmd.output().expect("running the compiler");
    assert!(o.status.success(), "compiling {}:\n{}", src.display(), String::from_utf8_lossy(&o.stderr));
}

/// One function of the disassembly.
#[derive(Default, Debug)]
struct Func {
    frame: u64,
    /// Callees by symbol name (resolved to an id later).
    calls: BTreeSet<String>,
    indirect: bool,
}

/// The functions of some objects, keyed `name` (global) or `name@object` (local).
#[derive(Default)]
struct Code {
    funcs: BTreeMap<String, Func>,
    /// Per object: its local functions' names, and the functions whose address it takes.
    locals: BTreeMap<String, BTreeSet<String>>,
    taken: BTreeMap<String, BTreeSet<String>>,
    /// Object of each function id.
    object: BTreeMap<String, String>,
}

fn run(cmd: &str, args: &[&str], obj: &Path) -> String {
    let o = Command::new(cmd).args(args).arg(obj).output().expect(cmd);
    assert!(o.status.success(), "{cmd} {}: {}", obj.display(), String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

impl Code {
    fn read(objs: &[PathBuf]) -> Code {
        let mut code = Code::default();
        for obj in objs {
            code.add(obj);
        }
        code
    }

    fn add(&mut self, obj: &Path) {
        let key = obj.file_name().unwrap().to_string_lossy().into_owned();
        let mut locals = BTreeSet::new();
        let mut functions = BTreeSet::new();
        for l in run(NM, &[], obj).lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() == 3 && (f[1] == "t" || f[1] == "T") && !f[2].starts_with(".L") {
                functions.insert(f[2].to_string());
                if f[1] == "t" {
                    locals.insert(f[2].to_string());
                }
            }
        }
        let id = |n: &str| if locals.contains(n) { format!("{n}@{key}") } else { n.to_string() };
        // Address-taken functions: any relocation but a call's naming a function.
        let mut taken = BTreeSet::new();
        for l in run(OBJDUMP, &["-r"], obj).lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() == 3 && f[1].starts_with("R_RISCV_") && !f[1].contains("CALL") && f[1] != "R_RISCV_JAL" {
                let sym = f[2].split('+').next().unwrap();
                if functions.contains(sym) {
                    taken.insert(sym.to_string());
                }
            }
        }
        let mut cur: Option<String> = None;
        let mut covered = false;
        let mut prev = String::new();
        for l in run(OBJDUMP, &["-dr", "--no-show-raw-insn"], obj).lines() {
            if let Some(name) = l.strip_suffix(">:").and_then(|h| h.split_once(" <")).map(|(_, n)| n) {
                if !name.starts_with(".L") {
                    let fid = id(name);
                    self.object.insert(fid.clone(), key.clone());
                    self.funcs.entry(fid.clone()).or_default();
                    cur = Some(fid);
                    covered = false;
                }
                continue;
            }
            let Some(fid) = cur.clone() else { continue };
            let func = self.funcs.get_mut(&fid).unwrap();
            if let Some(pos) = l.find("R_RISCV_") {
                let f: Vec<&str> = l[pos..].split_whitespace().collect();
                let sym = f.get(1).map(|s| s.split('+').next().unwrap().to_string()).unwrap_or_default();
                if f[0] == "R_RISCV_CALL" || f[0] == "R_RISCV_CALL_PLT" {
                    func.calls.insert(sym);
                    covered = true;
                } else if f[0] == "R_RISCV_JAL" && prev.contains("\tjal\t") {
                    func.calls.insert(sym);
                }
                continue;
            }
            let Some((_, insn)) = l.split_once(":\t") else { continue };
            prev = l.to_string();
            let mut parts = insn.splitn(2, '\t');
            let (op, args) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            if (op == "addi" || op == "add" || op == "c.addi16sp") && args.starts_with("sp,sp,-") {
                let n: u64 =
                    args["sp,sp,-".len()..].split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap();
                func.frame += n;
            } else if op == "sub" && args.starts_with("sp,sp,") {
                panic!("{fid} in {key} moves the stack pointer by a register (a variable-length array?): {l}");
            } else if op == "jalr" {
                if !covered {
                    // A call the assembler resolved in the object: `jalr off(ra) # addr <sym>`.
                    let target = args.split_once(" <").map(|(_, t)| t.trim_end_matches('>'));
                    match target {
                        Some(t) if !t.contains('+') && !t.starts_with(".L") && args.contains("(ra)") => {
                            func.calls.insert(t.to_string());
                        }
                        _ => func.indirect = true,
                    }
                }
                covered = false;
            }
        }
        self.locals.insert(key.clone(), locals);
        self.taken.insert(key, taken);
    }

    /// The id a call from `from` to `sym` reaches, if the code defines it.
    fn resolve(&self, from: &str, sym: &str) -> Option<String> {
        let obj = &self.object[from];
        let local = format!("{sym}@{obj}");
        if self.funcs.contains_key(&local) {
            Some(local)
        } else {
            self.funcs.contains_key(sym).then(|| sym.to_string())
        }
    }

    fn callees(&self, f: &str) -> Vec<String> {
        let func = &self.funcs[f];
        let mut out: Vec<String> = func.calls.iter().filter_map(|c| self.resolve(f, c)).collect();
        if func.indirect {
            let obj = &self.object[f];
            out.extend(self.taken[obj].iter().filter_map(|c| self.resolve(f, c)));
        }
        out.sort();
        out.dedup();
        out
    }

    /// Worst-case stack bytes of `f` and its callees, or the cycle that
    /// makes it unbounded. A call back into a function of [`RECURSION`]
    /// on the path adds nothing there; that function's whole need counts
    /// `depth` times instead. The flag: whether a call was skipped so
    /// (such a figure holds only under that caller, and is not memoised).
    fn need(&self, f: &str, path: &mut Vec<String>, memo: &mut BTreeMap<String, u64>) -> Result<(u64, bool), String> {
        if let Some(&v) = memo.get(f) {
            return Ok((v, false));
        }
        let depth = recursion_depth(f);
        path.push(f.to_string());
        let (mut deepest, mut skipped) = (0, false);
        for c in self.callees(f) {
            if path.contains(&c) {
                if recursion_depth(&c) > 1 {
                    skipped |= c != f;
                    continue;
                }
                return Err(format!("recursion without a listed depth: {} -> {c}", path.join(" -> ")));
            }
            let (v, s) = self.need(&c, path, memo)?;
            deepest = deepest.max(v);
            skipped |= s;
        }
        path.pop();
        let v = (self.funcs[f].frame + deepest) * depth;
        if !skipped {
            memo.insert(f.to_string(), v);
        }
        Ok((v, skipped))
    }

    fn need_of(&self, f: &str) -> u64 {
        self.need(f, &mut vec![], &mut BTreeMap::new()).unwrap_or_else(|e| panic!("{e}")).0
    }
}

/// Every kernel file compiled by `c` into `dir`.
fn kernel_objects(c: Compiler, dir: &Path) -> Vec<PathBuf> {
    let rt = root().join("runtime");
    let mut objs = vec![];
    let mut srcs: Vec<PathBuf> = std::fs::read_dir(rt.join("kernels"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    srcs.sort();
    for s in srcs {
        let o = dir.join(s.file_stem().unwrap()).with_extension("o");
        compile(c, &s, &o, &[rt.join("kernels"), rt.join("pmsis-host")], &["DG_PLATFORM_SIRACUSA", "NUM_CORES=8"]);
        objs.push(o);
    }
    objs
}

/// The kernels' worst cases over both compilers: global `dg_*` functions.
fn measured_kernels() -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for c in [Compiler::ClangO3, Compiler::GccO2] {
        let tmp = tempfile::tempdir().unwrap();
        let code = Code::read(&kernel_objects(c, tmp.path()));
        for f in code.funcs.keys().filter(|f| f.starts_with("dg_") && !f.contains('@')) {
            let v = code.need_of(f);
            let e = out.entry(f.clone()).or_insert(0);
            *e = (*e).max(v);
        }
    }
    out
}

#[test]
fn kernels_fit_the_stack_table() {
    if !tools_or_skip("kernels_fit_the_stack_table") {
        return;
    }
    let measured = measured_kernels();
    let table: BTreeMap<String, u64> = kernel_stacks().map(|(k, b)| (k.to_string(), b)).collect();
    if std::env::var_os("UPDATE_STACKS").is_some() {
        let p = root().join("runtime/kernels/stack_usage.txt");
        let text = std::fs::read_to_string(&p).unwrap();
        let mut out: String = text.lines().take_while(|l| l.starts_with('#')).map(|l| format!("{l}\n")).collect();
        for (k, v) in &measured {
            out.push_str(&format!("{k} {v}\n"));
        }
        std::fs::write(&p, out).unwrap();
        return;
    }
    let mut bad = vec![];
    for (k, v) in &measured {
        match table.get(k) {
            None => bad.push(format!("{k}: needs {v} B, not in the table")),
            Some(t) if v > t => bad.push(format!("{k}: needs {v} B, the table says {t} B")),
            _ => {}
        }
    }
    for k in table.keys().filter(|k| !measured.contains_key(*k)) {
        bad.push(format!("{k}: in the table, but no kernel file defines it"));
    }
    assert!(
        bad.is_empty(),
        "runtime/kernels/stack_usage.txt is out of date (UPDATE_STACKS=1 rewrites it):\n{}",
        bad.join("\n")
    );
}

/// `#define NAME value` of a generated file.
fn define(text: &str, name: &str) -> Option<u64> {
    let pat = format!("#define {name} ");
    text.lines().find_map(|l| l.trim().strip_prefix(&pat)).and_then(|v| v.trim().parse().ok())
}

/// The project's cluster code compiled with gcc -O2: the worst case of each
/// task the harness and `dg_model.c` send, with the stack `dg_model.h`
/// gives the core that runs it.
fn check_project(model: &str, platform: &'static str, level: &'static str) -> Vec<String> {
    check_project_at(&root().join("models").join(model), model, platform, level)
}

/// [`check_project`] for the model at `path`.
fn check_project_at(path: &Path, model: &str, platform: &'static str, level: &'static str) -> Vec<String> {
    let target = common::project::Target { platform, level, hex_files: false, weights_in_l3: false };
    let files = common::project::try_files(path, target).unwrap_or_else(|e| panic!("{model} {platform} {level}: {e}"));
    let tmp = tempfile::tempdir().unwrap();
    for (rel, data) in &files {
        let p = tmp.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, data).unwrap();
    }
    let d = tmp.path();
    let rt = d.join("runtime");
    let includes = [d.to_path_buf(), rt.join("kernels"), rt.join("mem"), rt.join("harness"), rt.join("pmsis-host")];
    let chip = Platform::by_name(platform).unwrap();
    let define_flag = chip.c_define.clone();
    let mut objs = vec![];
    for src in [
        "main.c",
        "TrainingNetwork.c",
        "Network.c",
        "OptimizerNetwork.c",
        "PredictNetwork.c",
        "dg_model.c",
        "runtime/mem/dg_mem.c",
        "runtime/harness/dg_check.c",
    ] {
        let s = d.join(src);
        if s.is_file() {
            let o = d.join(format!("{}.o", src.replace('/', "_")));
            compile(
                Compiler::GccO2,
                &s,
                &o,
                &includes,
                &[&define_flag, "NUM_CORES=8", "DG_STACK_CHECK", "DG_PMSIS_SECTIONS"],
            );
            objs.push(o);
        }
    }
    // Placed in the SDK's sections, as the SDK compiles them (not part of the stack graph).
    for src in ["demo.c", "Weights.c"] {
        let s = d.join(src);
        if s.is_file() {
            let o = d.join(format!("{src}.sections.o"));
            compile(Compiler::GccO2, &s, &o, &includes, &[&define_flag, "NUM_CORES=8", "DG_PMSIS_SECTIONS"]);
        }
    }
    let code = Code::read(&objs);
    let header = std::fs::read_to_string(d.join("dg_model.h")).unwrap();
    let stacks = chip.stacks();
    let (core, given) = if chip.separate_controller() {
        ("CC_STACK_SIZE", define(&header, "CC_STACK_SIZE"))
    } else {
        ("STACK_SIZE", define(&header, "STACK_SIZE"))
    };
    let given = given.unwrap_or_else(|| panic!("{model}: dg_model.h defines no {core}"));
    let slave = define(&header, "SLAVE_STACK_SIZE").expect("SLAVE_STACK_SIZE");
    // Core 0 runs its share of each fork on the same stack where it is the controller.
    let forked = if chip.separate_controller() { 0 } else { deploygen::target::kernel_max() };
    let mut bad = vec![];
    // The harness's comparison, and dg_model.c's task (every network it runs).
    let tasks: Vec<&String> =
        code.funcs.keys().filter(|f| f.ends_with("_task@main.c.o") || f.ends_with("_task@dg_model.c.o")).collect();
    let run_task = "run_task@dg_model.c.o";
    let runs = code.callees(run_task);
    // Every network of the project is measured through that task (a
    // training project without a prediction never runs RunPredictNetwork).
    let no_predict = header.contains("This model has no prediction");
    for net in ["RunNetwork", "RunTrainingNetwork", "RunOptimizerNetwork", "RunPredictNetwork"] {
        if code.funcs.contains_key(net) && !(no_predict && net == "RunPredictNetwork") {
            assert!(runs.iter().any(|r| r == net), "{model}: {run_task} does not call {net}: {runs:?}");
        }
    }
    assert!(
        tasks.len() >= 2,
        "{model}: no task functions found in main.c and dg_model.c: {:?}",
        code.funcs.keys().collect::<Vec<_>>()
    );
    for t in tasks {
        let need = code.need_of(t) + forked + SDK_MARGIN_BYTES;
        if need > given {
            bad.push(format!("{model} {platform} {level}: {t} needs {need} B, dg_model.h gives {core} {given} B"));
        }
    }
    if slave < stacks.worker {
        bad.push(format!("{model} {platform} {level}: SLAVE_STACK_SIZE {slave} B, the kernels need {}", stacks.worker));
    }
    bad
}

#[test]
fn zoo_projects_fit_the_stacks_main_gives() {
    if !tools_or_skip("zoo_projects_fit_the_stacks_main_gives") {
        return;
    }
    let cases = [
        ("resnet8", "Siracusa", "L2"),
        ("resnet8", "Siracusa", "L3"),
        ("resnet8", "GAP9", "L2"),
        ("cct", "Siracusa", "L2"),
        ("kws_cnn_derived_sgd", "Siracusa", "L2"),
        ("mobilenet_v1", "Siracusa", "L3"),
        ("conv1d_autoencoder_train", "GAP9", "L3"),
        ("simple_mlp", "Siracusa", "L2"),
        // Inference projects: the network runs in one task too.
        ("kws_cnn", "GAP9", "L2"),
        ("kws_cnn", "Siracusa", "L2"),
    ];
    let bad: Vec<String> = cases.iter().flat_map(|(m, p, l)| check_project(m, p, l)).collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// A 2x2 -> 512x512 linear upsample on GAP9: its tap tables (16 KiB) are
/// static data, not RunNetwork's frame (they once took 16,464 B of a
/// 2,304 B stack).
#[test]
fn resize_tables_stay_off_the_stack() {
    if !tools_or_skip("resize_tables_stay_off_the_stack") {
        return;
    }
    let mut b = common::ModelBuilder::new();
    b.input("x", common::F32, &[1, 1, 2, 2])
        .init_i64("sizes", &[1, 1, 512, 512])
        .node("Resize", &["x", "", "", "sizes"], &["y"], vec![common::attr_str("mode", "linear")])
        .output("y", common::F32, &[1, 1, 512, 512]);
    let dir = tempfile::tempdir().unwrap();
    b.write(dir.path(), "network.onnx");
    let bad: Vec<String> = [("GAP9", "L2"), ("Siracusa", "L2")]
        .iter()
        .flat_map(|&(p, l)| check_project_at(dir.path(), "resize 2x2 -> 512x512", p, l))
        .collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The widest operand lists a call takes (`ops::kernel::LIST_MAX`): a
/// Concat of 64 inputs and a Split into 64 outputs keep RunNetwork's
/// frame within the stack of the core that runs it.
#[test]
fn the_widest_operand_lists_fit_the_stack() {
    if !tools_or_skip("the_widest_operand_lists_fit_the_stack") {
        return;
    }
    let n = deploygen::ops::kernel::LIST_MAX;
    let mut b = common::ModelBuilder::new();
    let names: Vec<String> = (0..n).map(|i| format!("x{i}")).collect();
    for x in &names {
        b.input(x, common::F32, &[1, 2]);
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    b.node("Concat", &refs, &["c"], vec![common::attr_int("axis", 0)]);
    let outs: Vec<String> = (0..n).map(|i| format!("y{i}")).collect();
    let orefs: Vec<&str> = outs.iter().map(String::as_str).collect();
    b.node("Split", &["c"], &orefs, vec![common::attr_int("axis", 0)]);
    for y in &outs {
        b.output(y, common::F32, &[1, 2]);
    }
    let dir = tempfile::tempdir().unwrap();
    b.write(dir.path(), "network.onnx");
    let bad: Vec<String> = [("GAP9", "L2"), ("Siracusa", "L2")]
        .iter()
        .flat_map(|&(p, l)| check_project_at(dir.path(), "concat and split of 64", p, l))
        .collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
