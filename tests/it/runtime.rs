//! Tests of the C runtime (runtime/): the fp32 kernels against onnxruntime
//! reference vectors, the PMSIS host emulation, and that every check can
//! fail. Each test compiles the C sources with gcc, runs the driver and
//! asserts on its exit status and report lines.
//!
//! Needs gcc with libasan, libubsan and libtsan.

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const STRICT: &[&str] = &["-std=c99", "-Wall", "-Wextra", "-Werror"];
const POSIX: &str = "-D_POSIX_C_SOURCE=200809L";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("runtime")
}

fn kernel_sources() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(root().join("kernels"))
        .expect("runtime/kernels")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    v.sort();
    v
}

/// Compiles the kernels, the emulation and `driver` into `out` with the
/// strict flags, `opt` and `extra`; panics with gcc's output on failure.
fn build(out: &Path, driver: &str, opt: &str, extra: &[&str]) {
    build_faulty(out, driver, opt, extra, &[]);
}

/// [`build`], with `emulation` (a `DG_HOST_FAULT_*` define, which only
/// pmsis_host.c reads) given to the emulation's source alone: the other
/// objects are those of the build without it.
fn build_faulty(out: &Path, driver: &str, opt: &str, extra: &[&str], emulation: &[&str]) {
    let r = root();
    let mut flags: Vec<String> = STRICT.iter().map(|f| f.to_string()).collect();
    flags.extend([opt.to_string(), POSIX.to_string()]);
    flags.extend(["pmsis-host", "kernels", "mem"].map(|inc| format!("-I{}", r.join(inc).display())));
    flags.extend(extra.iter().map(|f| f.to_string()));
    let mut sources = kernel_sources();
    sources.extend([r.join("mem/dg_mem.c"), r.join("tests").join(driver)]);
    let cc = vec!["gcc".to_string()];
    let what = format!("gcc for {driver} {extra:?} {emulation:?}");
    let mut objs = objects(&cc, &flags, &sources, &what);
    let mut emu_flags = flags.clone();
    emu_flags.extend(emulation.iter().map(|f| f.to_string()));
    objs.push(object(&cc, &emu_flags, &r.join("pmsis-host/pmsis_host.c"), &what));
    // -no-pie, as Makefile.host links: static L2 arrays (the copy stage)
    // need the 32-bit addresses the cluster DMA takes
    link(&cc, &flags, &objs, &["-lm", "-pthread", "-no-pie"], out, &what);
}

/// Links `objects` into `out` with `cc`, `flags` (sanitizers link their
/// libraries) and `libs`.
fn link(cc: &[String], flags: &[String], objects: &[PathBuf], libs: &[&str], out: &Path, what: &str) {
    let o = Command::new(&cc[0]).args(&cc[1..]).args(flags).args(objects).args(libs).arg("-o").arg(out).output();
    let o = o.unwrap_or_else(|e| panic!("running {what}: {e}"));
    assert!(o.status.success(), "{what} failed to link:\n{}", String::from_utf8_lossy(&o.stderr));
}

/// The objects of `sources` compiled by `cc` with `flags`, two compilers
/// at a time. A source is compiled once per test binary for each set of
/// flags, however many drivers link it: most builds share the kernels
/// with the same platform and flags.
fn objects(cc: &[String], flags: &[String], sources: &[PathBuf], what: &str) -> Vec<PathBuf> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let mut done = vec![];
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        let Some(src) = sources.get(i) else { return done };
                        done.push((i, object(cc, flags, src, what)));
                    }
                })
            })
            .collect();
        let mut all: Vec<(usize, PathBuf)> =
            workers.into_iter().flat_map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect();
        all.sort();
        all.into_iter().map(|(_, o)| o).collect()
    })
}

/// `src` compiled by `cc` with `flags`, once per test binary: the first
/// caller compiles it, later callers (and concurrent ones, who wait) get
/// the same object.
fn object(cc: &[String], flags: &[String], src: &Path, what: &str) -> PathBuf {
    type Cell = std::sync::Arc<std::sync::OnceLock<PathBuf>>;
    static OBJECTS: std::sync::Mutex<BTreeMap<String, Cell>> = std::sync::Mutex::new(BTreeMap::new());
    let key = format!("{} {} -c {}", cc.join(" "), flags.join(" "), src.display());
    let (n, cell) = {
        let mut map = OBJECTS.lock().unwrap_or_else(|e| e.into_inner());
        let n = map.len();
        let cell = map.entry(key).or_default().clone();
        (n, cell)
    };
    cell.get_or_init(|| {
        let stem = src.file_stem().unwrap().to_string_lossy();
        let obj = objects_dir().join(format!("{n}-{stem}.o"));
        let o = Command::new(&cc[0]).args(&cc[1..]).args(flags).arg("-c").arg(src).arg("-o").arg(&obj).output();
        let o = o.unwrap_or_else(|e| panic!("running {what} (is it installed?): {e}"));
        assert!(o.status.success(), "{what} failed on {}:\n{}", src.display(), String::from_utf8_lossy(&o.stderr));
        obj
    })
    .clone()
}

/// This process's folder of objects under the target's temp folder; the
/// folders of processes that are gone are removed first.
fn objects_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("runtime-test-objects");
        for e in fs::read_dir(&base).into_iter().flatten().flatten() {
            let pid = e.file_name().to_string_lossy().into_owned();
            if !Path::new("/proc").join(&pid).exists() {
                let _ = fs::remove_dir_all(e.path());
            }
        }
        let dir = base.join(std::process::id().to_string());
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    })
}

fn run(exe: &Path, args: &[&str]) -> (Output, String) {
    let o = Command::new(exe).args(args).env("DG_HOST_QUIET", "1").output().expect("running a test driver");
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    (o, text)
}

// ---------------------------------------------------------------- npz -> raw

/// Parses one .npy member: (dtype code as in the manifest, shape, raw data).
fn parse_npy(bytes: &[u8]) -> (String, Vec<usize>, Vec<u8>) {
    assert_eq!(&bytes[..6], b"\x93NUMPY", "not an npy member");
    let (hlen, start) = if bytes[6] == 1 {
        (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10)
    } else {
        (u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize, 12)
    };
    let header = std::str::from_utf8(&bytes[start..start + hlen]).unwrap();
    let field = |key: &str| -> &str {
        let i = header.find(key).unwrap_or_else(|| panic!("{key} in {header}")) + key.len();
        header[i..].trim_start_matches([':', ' '])
    };
    assert!(field("'fortran_order'").starts_with("False"), "fortran order in {header}");
    let descr = field("'descr'");
    let descr = &descr[1..descr[1..].find('\'').unwrap() + 1];
    let code = match descr {
        "<f4" => "f4",
        "<i8" => "i8",
        "<i4" => "i4",
        "|b1" => "b1",
        "|u1" => "u1",
        "|i1" => "i1",
        other => panic!("unsupported dtype {other}"),
    };
    let shape_s = field("'shape'");
    let shape_s = &shape_s[1..shape_s.find(')').unwrap()];
    let shape: Vec<usize> =
        shape_s.split(',').map(str::trim).filter(|s| !s.is_empty()).map(|s| s.parse().unwrap()).collect();
    (code.to_string(), shape, bytes[start + hlen..].to_vec())
}

/// Unpacks every runtime/tests/refs/*.npz into dir/<case>/{manifest.txt,
/// <key>.bin}; returns the case names.
fn unpack_refs(dir: &Path) -> Vec<String> {
    unpack_refs_from(&root().join("tests/refs"), dir)
}

/// Unpacks every `src`/*.npz as [`unpack_refs`] does.
fn unpack_refs_from(src: &Path, dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    let mut files: Vec<PathBuf> = fs::read_dir(src)
        .unwrap_or_else(|e| panic!("{}: {e}", src.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "npz"))
        .collect();
    files.sort();
    for f in files {
        let name = f.file_stem().unwrap().to_string_lossy().to_string();
        let cdir = dir.join(&name);
        fs::create_dir_all(&cdir).unwrap();
        let mut zip = zip::ZipArchive::new(fs::File::open(&f).unwrap()).unwrap();
        let mut manifest = String::new();
        for i in 0..zip.len() {
            let mut m = zip.by_index(i).unwrap();
            let key = m.name().trim_end_matches(".npy").to_string();
            let mut bytes = Vec::new();
            m.read_to_end(&mut bytes).unwrap();
            let (code, shape, data) = parse_npy(&bytes);
            let elem = match code.as_str() {
                "f4" | "i4" => 4,
                "i8" => 8,
                _ => 1,
            };
            assert_eq!(data.len(), shape.iter().product::<usize>() * elem, "{name}/{key}");
            fs::write(cdir.join(format!("{key}.bin")), &data).unwrap();
            let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            manifest.push_str(&format!("{key} {code} {} {}\n", shape.len(), dims.join(" ")));
        }
        fs::write(cdir.join("manifest.txt"), manifest).unwrap();
        names.push(name);
    }
    names
}

/// Builds the kernel driver with `platform` / `extra`, runs it on the
/// references with `args` and asserts a clean pass of every case.
fn kernels_pass(platform: &str, opt: &str, extra: &[&str], args: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let refs = tmp.path().join("refs");
    let names = unpack_refs(&refs);
    assert!(names.len() >= 60, "only {} reference cases", names.len());
    let exe = tmp.path().join("kernel_tests");
    let mut flags = vec![platform];
    flags.extend_from_slice(extra);
    build(&exe, "kernel_tests.c", opt, &flags);
    let mut a = vec![refs.to_str().unwrap()];
    a.extend_from_slice(args);
    let (o, text) = run(&exe, &a);
    assert!(o.status.success(), "kernel tests failed ({flags:?}):\n{text}");
    assert!(!text.contains("ThreadSanitizer") && !text.contains("runtime error"), "{text}");
    // every reference file was used, none vacuously
    for n in &names {
        assert!(text.contains(&format!("ok   {n} ")), "case {n} did not pass:\n{text}");
    }
    assert!(text.contains("kernel tests: "), "{text}");
    assert!(text.contains(" 0 failed"), "{text}");
}

#[test]
fn refs_are_small() {
    let total: u64 =
        fs::read_dir(root().join("tests/refs")).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum();
    assert!(total < 1_000_000, "reference vectors take {total} bytes");
}

#[test]
fn kernels_match_onnxruntime_gap9_1_3_8_cores() {
    kernels_pass("-DDG_PLATFORM_GAP9", "-O2", &[], &["--cores", "1,3,8"]);
}

/// Inline forks (generated projects' default) give the same bits: GAP9's
/// controller runs the cores' shares itself, the host's works as core 0.
#[test]
fn kernels_match_onnxruntime_with_the_inline_team() {
    kernels_pass("-DDG_PLATFORM_GAP9", "-O2", &["-DDG_HOST_TEAM_INLINE"], &["--cores", "1,3,8"]);
    kernels_pass("-DDG_PLATFORM_HOST", "-O2", &["-DDG_HOST_TEAM_INLINE"], &["--cores", "8"]);
    ops_pass("-DDG_PLATFORM_GAP9", "-O2", &["-DDG_HOST_TEAM_INLINE"], &["--cores", "1,3,8"]);
}

/// The 32-bit cores' code paths (4-wide tiles, the A panels of the matrix
/// products) built on the host give the same bits on 1, 3 and 8 cores and
/// match the references.
#[test]
fn kernels_match_onnxruntime_with_the_rv32_tiling() {
    kernels_pass(
        "-DDG_PLATFORM_GAP9",
        "-O2",
        &["-DDG_TILE_N=4", "-DDG_MM_PANEL", "-DDG_CONV_PANEL"],
        &["--cores", "1,3,8"],
    );
    ops_pass("-DDG_PLATFORM_GAP9", "-O2", &["-DDG_TILE_N=4", "-DDG_MM_PANEL", "-DDG_CONV_PANEL"], &["--cores", "1,8"]);
}

/// Whether the ziglang clang and qemu-riscv32 are here for the rv32 test
/// `what`; without them the test is a skip (a failure under CI=true).
fn rv32_tools(what: &str) -> bool {
    let have = |c: &mut Command| c.output().is_ok_and(|o| o.status.success());
    if !have(Command::new("python3").args(["-m", "ziglang", "version"]))
        || !have(Command::new("qemu-riscv32").arg("--version"))
    {
        common::skip_unless_ci(
            what,
            "python3 -m ziglang or qemu-riscv32 missing (pip install ziglang; apt-get install qemu-user)",
        );
        return false;
    }
    common::ran(what);
    true
}

/// Builds `driver` and the kernels with the ziglang clang for riscv32 +
/// zfinx at -O3 (the CPU of tests/it/rv32.rs, so both use one build of musl),
/// with the defines `defs`.
fn rv32_build(tmp: &Path, driver: &str, defs: &[&str]) -> PathBuf {
    let exe = tmp.join(format!("{driver}.rv32"));
    let r = root();
    let cc: Vec<String> =
        ["python3", "-m", "ziglang", "cc", "-target", "riscv32-linux-musl", "-mcpu=generic_rv32+m+a+zfinx"]
            .map(String::from)
            .into();
    let mut flags: Vec<String> = vec!["-O3".into()];
    flags.extend(STRICT.iter().map(|f| f.to_string()));
    flags.push(POSIX.to_string());
    flags.extend(defs.iter().map(|d| d.to_string()));
    flags.extend(["pmsis-host", "kernels", "mem"].map(|inc| format!("-I{}", r.join(inc).display())));
    let mut sources = kernel_sources();
    sources.extend([r.join("mem/dg_mem.c"), r.join("pmsis-host/pmsis_host.c"), r.join("tests").join(driver)]);
    let what = format!("the ziglang clang (rv32 build of {driver})");
    link(&cc, &flags, &objects(&cc, &flags, &sources, &what), &["-lm"], &exe, &what);
    exe
}

/// Runs an rv32 program under qemu-riscv32 (zfinx): its success and output.
fn qemu_rv32(exe: &Path, args: &[&str]) -> (bool, String) {
    let o = Command::new("qemu-riscv32")
        .args(["-cpu", "rv32,f=false,d=false,zfinx=true"])
        .arg(exe)
        .args(args)
        .env("DG_HOST_QUIET", "1")
        .output()
        .expect("running qemu-riscv32");
    (o.status.success(), format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)))
}

/// Runs `driver` (see rv32_build) under qemu-riscv32 on `refs`, 1, 3 and 8
/// cores; asserts that every case in `names` passed.
fn rv32_pass(tmp: &Path, driver: &str, refs: &Path, names: &[String]) {
    let exe = rv32_build(tmp, driver, &["-DDG_PLATFORM_GAP9"]);
    let (ok, text) = qemu_rv32(&exe, &[refs.to_str().unwrap(), "--cores", "1,3,8"]);
    assert!(ok, "rv32 {driver} failed:\n{text}");
    for n in names {
        assert!(text.contains(&format!("ok   {n} ")), "case {n} did not pass on rv32:\n{text}");
    }
    assert!(text.contains(" 0 failed"), "{text}");
}

#[test]
fn kernels_match_onnxruntime_on_rv32_zfinx() {
    if !rv32_tools("rv32 kernel tests") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let refs = tmp.path().join("refs");
    let names = unpack_refs(&refs);
    rv32_pass(tmp.path(), "kernel_tests.c", &refs, &names);
    let refs2 = tmp.path().join("refs2");
    let names2 = unpack_ops(&refs2);
    rv32_pass(tmp.path(), "kernel_tests_ops.c", &refs2, &names2);
}

#[test]
fn kernels_match_onnxruntime_siracusa_and_host() {
    // Siracusa: the controller is core 0 and works inside the fork.
    kernels_pass("-DDG_PLATFORM_SIRACUSA", "-O2", &[], &["--cores", "8,1"]);
    kernels_pass("-DDG_PLATFORM_HOST", "-O2", &[], &["--cores", "1"]);
}

/// AddressSanitizer and UndefinedBehaviorSanitizer, with the conversion of
/// a float outside the target's range (which `-fsanitize=undefined` leaves
/// out) and every report fatal.
const ASAN_UBSAN: &[&str] = &["-g", "-fsanitize=address,undefined,float-cast-overflow", "-fno-sanitize-recover=all"];

#[test]
fn kernels_clean_under_asan_ubsan() {
    kernels_pass("-DDG_PLATFORM_GAP9", "-O1", ASAN_UBSAN, &["--cores", "1,8"]);
}

#[test]
fn kernels_clean_under_tsan() {
    kernels_pass("-DDG_PLATFORM_GAP9", "-O1", &["-g", "-fsanitize=thread"], &["--cores", "3,8"]);
}

#[test]
fn kernel_checks_catch_injected_faults() {
    let tmp = tempfile::tempdir().unwrap();
    let refs = tmp.path().join("refs");
    unpack_refs(&refs);
    let exe = tmp.path().join("kernel_tests_fault");
    build(&exe, "kernel_tests.c", "-O2", &["-DDG_PLATFORM_GAP9", "-DDG_FAULT_INJECTION"]);
    // the hooks are inert until a fault is selected
    let (o, text) = run(&exe, &[refs.to_str().unwrap(), "--cores", "8"]);
    assert!(o.status.success(), "{text}");
    let (o, text) = run(&exe, &[refs.to_str().unwrap(), "--fault"]);
    assert!(o.status.success(), "an injected fault went unnoticed:\n{text}");
    let detected = text.lines().filter(|l| l.ends_with(": detected")).count();
    assert!(!text.contains("MISSED"), "{text}");
    // every kernel output of every case has a fault of its own
    assert!(detected >= 90, "only {detected} faults detected:\n{text}");
}

#[test]
fn kernels_and_layer_build_as_strict_c99() {
    // The kernels and dg_mem need no POSIX define and are -pedantic clean.
    let tmp = tempfile::tempdir().unwrap();
    let r = root();
    let mut cmd = Command::new("gcc");
    cmd.current_dir(tmp.path()).args(STRICT).args(["-O2", "-pedantic", "-c", "-DDG_PLATFORM_GAP9"]);
    for inc in ["pmsis-host", "kernels", "mem"] {
        cmd.arg(format!("-I{}", r.join(inc).display()));
    }
    cmd.args(kernel_sources()).arg(r.join("mem/dg_mem.c"));
    let o = cmd.output().expect("gcc");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

// ---------------------------------------------------------------- dg_math.h

/// Builds runtime/tests/math_tests.c against the dg_math.h in `kernels`
/// with gcc, runs it on every `stride`-th float and returns whether it
/// passed, with its report.
fn math_tests(tmp: &Path, kernels: &Path, stride: &str) -> (bool, String) {
    let exe = tmp.join("math_tests");
    let o = Command::new("gcc")
        .args(STRICT)
        .arg("-O2")
        .arg(format!("-I{}", kernels.display()))
        .arg(root().join("tests/math_tests.c"))
        .args(["-lm", "-o"])
        .arg(&exe)
        .output()
        .expect("running gcc (is it installed?)");
    assert!(o.status.success(), "gcc failed for math_tests.c:\n{}", String::from_utf8_lossy(&o.stderr));
    let (o, text) = run(&exe, &[stride]);
    (o.status.success(), text)
}

/// The kernels' expf and erff (dg_math.h) stay within 2 ulp of the
/// correctly rounded result over every 17th float of their ranges, on the
/// host and as the 32-bit cores build them (ziglang clang, zfinx, under
/// qemu-riscv32, every 1021st float; skipped without those tools).
#[test]
fn kernel_math_within_two_ulp() {
    let tmp = tempfile::tempdir().unwrap();
    let (ok, text) = math_tests(tmp.path(), &root().join("kernels"), "17");
    assert!(ok && text.contains("math_tests: ok"), "{text}");

    if !rv32_tools("rv32 math tests") {
        return;
    }
    let exe = tmp.path().join("math_tests.rv32");
    let o = Command::new("python3")
        .args(["-m", "ziglang", "cc", "-target", "riscv32-linux-musl", "-mcpu=generic_rv32+m+a+zfinx", "-O3"])
        .args(STRICT)
        .arg(format!("-I{}", root().join("kernels").display()))
        .arg(root().join("tests/math_tests.c"))
        .args(["-lm", "-o"])
        .arg(&exe)
        .output()
        .expect("running the ziglang clang");
    assert!(o.status.success(), "rv32 build of math_tests.c failed:\n{}", String::from_utf8_lossy(&o.stderr));
    let (ok, text) = qemu_rv32(&exe, &["1021"]);
    assert!(ok && text.contains("math_tests: ok"), "rv32 math_tests failed:\n{text}");
}

/// Each of the three polynomials of dg_math.h, one coefficient changed in
/// its fourth digit, fails math_tests.
#[test]
fn kernel_math_checks_catch_a_wrong_coefficient() {
    let src = fs::read_to_string(root().join("kernels/dg_math.h")).unwrap();
    for (good, bad) in
        [("4.166814312e-02f", "4.160e-02f"), ("-2.679177746e-02f", "-2.670e-02f"), ("2.187913656e-01f", "2.180e-01f")]
    {
        assert_eq!(src.matches(good).count(), 1, "dg_math.h no longer has the coefficient {good}");
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("dg_math.h"), src.replace(good, bad)).unwrap();
        let (ok, text) = math_tests(tmp.path(), tmp.path(), "101");
        assert!(!ok && text.contains("math_tests: FAILED"), "{good} -> {bad} went unnoticed:\n{text}");
    }
}

// ---------------------------------------------------------------- int8 conv

/// dg_qlinear_conv's and dg_qlinear_matmul's packed paths (gathered
/// windows, B's rows, 4-byte dot products) and their direct loops give the
/// same int32 sums and requantized (or float) values for
/// every pair of operand types, on 1, 3, 8 and 11 cores (an emulated
/// cluster of 12: past the 8 scratch slots, cores idle).
#[test]
fn qconv_packed_and_direct_paths_agree() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = tmp.path().join("qconv_tests");
    build(&exe, "qconv_tests.c", "-O2", &["-DDG_PLATFORM_HOST", "-DDG_CLUSTER_CORES=12"]);
    for cores in ["1", "3", "8", "11"] {
        let (o, text) = run(&exe, &["--cores", cores]);
        assert!(o.status.success(), "{cores} cores:\n{text}");
        assert!(text.contains(&format!("126 cases on {cores} cores")) && text.contains(", 0 differ"), "{text}");
    }
}

/// The same agreement as the 32-bit cores build the kernels (ziglang
/// clang, rv32 zfinx, -O3, under qemu-riscv32): the packed path rounds
/// with the FPU's fcvt.w.s (static rne) where the direct loop adds and
/// takes away 1.5 * 2^23, so this pins the conversion's rounding mode.
#[test]
fn qconv_paths_agree_on_rv32_zfinx() {
    if !rv32_tools("qconv on rv32") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let exe = rv32_build(tmp.path(), "qconv_tests.c", &["-DDG_PLATFORM_HOST", "-DDG_CLUSTER_CORES=12"]);
    for cores in ["1", "8"] {
        let (ok, text) = qemu_rv32(&exe, &["--cores", cores]);
        assert!(ok, "{cores} cores:\n{text}");
        assert!(text.contains(&format!("126 cases on {cores} cores")) && text.contains(", 0 differ"), "{text}");
    }
}

/// The Xpulpv2 instructions (OP-V, funct3 1 = bytes) in an object file:
/// how many of pv.sdotsp.b, pv.sdotup.b and pv.sdotusp.b, at every
/// 2-byte offset (compressed code aligns instructions so).
fn packed_dots(obj: &[u8]) -> [usize; 3] {
    let mut n = [0; 3];
    for i in (0..obj.len().saturating_sub(3)).step_by(2) {
        let w = u32::from_le_bytes(obj[i..i + 4].try_into().unwrap());
        if w & 0x707F != 0x1057 {
            continue;
        }
        match w >> 25 {
            0x5C => n[0] += 1,
            0x50 => n[1] += 1,
            0x54 => n[2] += 1,
            _ => {}
        }
    }
    n
}

/// The chips' SDK builds define DG_XPULP: the int8 convolution's inner
/// loops then are Xpulpv2's packed dot products, which the stock
/// assemblers know only as `.insn` encodings. Built as the chip recipe
/// builds the kernels (ziglang clang, rv32 zfinx), the int8 convolution
/// and matrix product (quant_conv.c, quant_matmul.c) hold all three forms
/// with the switch and none without it (GVSoC runs them: see
/// docs/performance.md; qemu has no Xpulp).
#[test]
fn xpulp_switch_puts_packed_dot_products_in_the_int8_kernels() {
    let have_zig =
        Command::new("python3").args(["-m", "ziglang", "version"]).output().is_ok_and(|o| o.status.success());
    if !have_zig {
        common::skip_unless_ci("xpulp kernels", "python3 -m ziglang missing (pip install ziglang)");
        return;
    }
    common::ran("xpulp kernels");
    let tmp = tempfile::tempdir().unwrap();
    let r = root();
    let build = |defs: &[&str], file: &str| -> Vec<u8> {
        let obj = tmp.path().join(format!("{file}{}.o", defs.len()));
        let o = Command::new("python3")
            .args(["-m", "ziglang", "cc", "-target", "riscv32-linux-musl", "-mcpu=generic_rv32+m+a+c+zfinx"])
            .args(["-O3", "-c", POSIX])
            .args(STRICT)
            .args(["-DDG_PLATFORM_SIRACUSA"])
            .args(defs)
            .args(["pmsis-host", "kernels", "mem"].map(|inc| format!("-I{}", r.join(inc).display())))
            .arg(r.join(format!("kernels/{file}.c")))
            .arg("-o")
            .arg(&obj)
            .output()
            .expect("ziglang cc");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        fs::read(&obj).unwrap()
    };
    for file in ["quant_conv", "quant_matmul"] {
        let with = packed_dots(&build(&["-DDG_XPULP"], file));
        let without = packed_dots(&build(&[], file));
        assert!(with.iter().all(|&n| n >= 8), "{file}.c: sdotsp, sdotup, sdotusp with DG_XPULP: {with:?}");
        assert_eq!(without, [0, 0, 0], "{file}.c without DG_XPULP");
    }
    // The other quantized kernels have no packed products.
    assert_eq!(packed_dots(&build(&["-DDG_XPULP"], "quant")), [0, 0, 0], "quant.c with DG_XPULP");
}

// ---------------------------------------------------------------- emulation

fn emu_build(tmp: &Path, name: &str, opt: &str, extra: &[&str]) -> PathBuf {
    let exe = tmp.join(name);
    build(&exe, "emu_tests.c", opt, extra);
    exe
}

fn emu_run(exe: &Path, tmp: &Path, extra_args: &[&str]) -> (Output, String) {
    let hex = tmp.join("hex");
    fs::create_dir_all(&hex).unwrap();
    let mut a = vec![hex.to_str().unwrap()];
    a.extend_from_slice(extra_args);
    run(exe, &a)
}

const EMU_TESTS: &[&str] = &[
    "core_ids",
    "fork_ids",
    "fork_threads",
    "barrier_orders_writes",
    "l1_capacity",
    "l2_capacity",
    "hex_roundtrip_l3",
    "l3_l1_copy",
    "kernel_default_team",
];

fn assert_emu_pass(text: &str, ok: bool) {
    assert!(ok, "emulation tests failed:\n{text}");
    for t in EMU_TESTS {
        assert!(text.contains(&format!("ok   {t}\n")), "{t} did not pass:\n{text}");
    }
}

#[test]
fn emulation_semantics_per_platform() {
    let tmp = tempfile::tempdir().unwrap();
    for platform in ["GAP9", "SIRACUSA", "HOST"] {
        let exe = emu_build(tmp.path(), &format!("emu_{platform}"), "-O2", &[&format!("-DDG_PLATFORM_{platform}")]);
        let (o, text) = emu_run(&exe, tmp.path(), &[]);
        assert_emu_pass(&text, o.status.success());
        // an exhausted L1 prints the SDK's own line
        assert!(text.contains("Allocation failed for allocator 2"), "{text}");
    }
}

/// The inline team of generated projects (`-DDG_HOST_TEAM_INLINE`, see
/// runtime/README.md) keeps every semantic of the emulation, on each
/// platform, and DG_HOST_TEAM switches the mode at run time.
#[test]
fn emulation_semantics_with_the_inline_team() {
    let tmp = tempfile::tempdir().unwrap();
    for platform in ["GAP9", "SIRACUSA", "HOST"] {
        let define = format!("-DDG_PLATFORM_{platform}");
        let exe = emu_build(tmp.path(), &format!("emu_inline_{platform}"), "-O2", &[&define, "-DDG_HOST_TEAM_INLINE"]);
        let (o, text) = emu_run(&exe, tmp.path(), &[]);
        assert_emu_pass(&text, o.status.success());
        assert!(text.contains("ok   fork_threads\n"), "{text}");
        // and with threads again, chosen at run time
        let o = Command::new(&exe)
            .arg(tmp.path().join("hex"))
            .env("DG_HOST_QUIET", "1")
            .env("DG_HOST_TEAM", "threads")
            .output()
            .unwrap();
        assert_emu_pass(&String::from_utf8_lossy(&o.stdout), o.status.success());
    }
    let tsan = emu_build(
        tmp.path(),
        "emu_inline_tsan",
        "-O1",
        &["-DDG_PLATFORM_GAP9", "-DDG_HOST_TEAM_INLINE", "-g", "-fsanitize=thread"],
    );
    let (o, text) = emu_run(&tsan, tmp.path(), &[]);
    assert_emu_pass(&text, o.status.success());
    assert!(!text.contains("ThreadSanitizer"), "{text}");
    // a barrier core 0 never calls would deadlock the chip: inline, it aborts
    let exe = tmp.path().join("emu_inline_GAP9");
    let (o, text) = emu_run(&exe, tmp.path(), &["--death", "late_barrier"]);
    assert!(!o.status.success(), "late_barrier did not abort:\n{text}");
    assert!(text.contains("reached a barrier that core 0 of its team never called"), "{text}");
}

#[test]
fn emulation_peak_report_at_exit() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = emu_build(tmp.path(), "emu", "-O2", &["-DDG_PLATFORM_GAP9"]);
    let hex = tmp.path().join("hex");
    fs::create_dir_all(&hex).unwrap();
    let o = Command::new(&exe).arg(&hex).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    for level in ["L1", "L2", "L3"] {
        assert!(err.contains(&format!("[pmsis-host] GAP9 peak {level}: ")), "{err}");
    }
    assert!(err.contains("peak L1: 131072 of 131072 B"), "{err}");
}

#[test]
fn emulation_clean_under_sanitizers() {
    let tmp = tempfile::tempdir().unwrap();
    let mut flags = vec!["-DDG_PLATFORM_GAP9"];
    flags.extend_from_slice(ASAN_UBSAN);
    let asan = emu_build(tmp.path(), "emu_asan", "-O1", &flags);
    let (o, text) = emu_run(&asan, tmp.path(), &[]);
    assert_emu_pass(&text, o.status.success());
    let tsan = emu_build(tmp.path(), "emu_tsan", "-O1", &["-DDG_PLATFORM_SIRACUSA", "-g", "-fsanitize=thread"]);
    let (o, text) = emu_run(&tsan, tmp.path(), &[]);
    assert_emu_pass(&text, o.status.success());
    assert!(!text.contains("ThreadSanitizer"), "{text}");
}

/// Each emulation test fails when the property it guards is broken.
#[test]
fn emulation_checks_catch_injected_faults() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: &[(&str, &[&str], &str)] = &[
        ("cc_id0", &["-DDG_HOST_FAULT_CC_ID0"], "core_ids"),
        ("no_barrier", &["-DDG_HOST_FAULT_NO_BARRIER"], "barrier_orders_writes"),
        ("no_l1_cap", &["-DDG_HOST_FAULT_NO_L1_CAP"], "l1_capacity"),
        ("l3_trunc", &["-DDG_HOST_FAULT_L3_TRUNC"], "hex_roundtrip_l3"),
    ];
    for (name, defs, test) in cases {
        let exe = tmp.path().join(format!("emu_{name}"));
        build_faulty(&exe, "emu_tests.c", "-O2", &["-DDG_PLATFORM_GAP9"], defs);
        let (o, text) = emu_run(&exe, tmp.path(), &[]);
        assert!(!o.status.success(), "fault {name} went unnoticed:\n{text}");
        assert!(text.contains(&format!("FAIL {test}\n")), "fault {name}: {test} did not fail:\n{text}");
    }
    // without the barrier, ThreadSanitizer sees the race as well
    let exe = tmp.path().join("emu_no_barrier_tsan");
    let tsan = ["-DDG_PLATFORM_GAP9", "-g", "-fsanitize=thread"];
    build_faulty(&exe, "emu_tests.c", "-O1", &tsan, &["-DDG_HOST_FAULT_NO_BARRIER"]);
    let (o, text) = emu_run(&exe, tmp.path(), &[]);
    assert!(!o.status.success());
    assert!(text.contains("ThreadSanitizer: data race"), "{text}");
}

/// Misuse that would corrupt silently on the chip aborts on the emulation.
#[test]
fn emulation_aborts_on_misuse() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = emu_build(tmp.path(), "emu", "-O2", &["-DDG_PLATFORM_GAP9"]);
    let cases = [
        ("l3_oob", "is not inside one live L3 allocation"),
        ("kernel_outside_fork", "called outside pi_cl_team_fork"),
        ("fork_from_fc", "pi_cl_team_fork called from the fabric controller"),
        ("l2_free_wrong_size", "L2 free with size 128 B"),
    ];
    for (scenario, message) in cases {
        let (o, text) = emu_run(&exe, tmp.path(), &["--death", scenario]);
        assert!(!o.status.success(), "{scenario} did not abort:\n{text}");
        assert!(text.contains(message), "{scenario}: expected '{message}':\n{text}");
    }
    // Siracusa's RAM driver takes one cluster-RAM request at a time (dg_chips.h):
    // a second in flight aborts there, and only there
    let sir = emu_build(tmp.path(), "emu_siracusa", "-O2", &["-DDG_PLATFORM_SIRACUSA"]);
    let (o, text) = emu_run(&sir, tmp.path(), &["--death", "ram_overlap"]);
    assert!(!o.status.success(), "ram_overlap did not abort on Siracusa:\n{text}");
    assert!(text.contains("limit of them is in flight"), "{text}");
    let (o, text) = emu_run(&exe, tmp.path(), &["--death", "ram_overlap"]);
    assert!(o.status.success() && text.contains("did not abort"), "GAP9 takes overlapping RAM requests:\n{text}");
}

// ---------------------------------------------------------------- operator kernels

/// The operator kernels' references (runtime/tests/refs/ops) unpacked into `dir`.
fn unpack_ops(dir: &Path) -> Vec<String> {
    unpack_refs_from(&root().join("tests/refs/ops"), dir)
}

/// Builds kernel_tests_ops.c with `platform` / `extra`, runs it with
/// `args` and asserts that every operator case passed.
fn ops_pass(platform: &str, opt: &str, extra: &[&str], args: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let refs = tmp.path().join("refs");
    let names = unpack_ops(&refs);
    assert!(names.len() >= 60, "only {} operator reference cases", names.len());
    let exe = tmp.path().join("kernel_tests_ops");
    let mut flags = vec![platform];
    flags.extend_from_slice(extra);
    build(&exe, "kernel_tests_ops.c", opt, &flags);
    let mut a = vec![refs.to_str().unwrap()];
    a.extend_from_slice(args);
    let (o, text) = run(&exe, &a);
    assert!(o.status.success(), "operator kernel tests failed ({flags:?}):\n{text}");
    assert!(!text.contains("ThreadSanitizer") && !text.contains("runtime error"), "{text}");
    for n in &names {
        assert!(text.contains(&format!("ok   {n} ")), "case {n} did not pass:\n{text}");
    }
    assert!(text.contains(&format!("operator kernel tests: {} passed, 0 failed", names.len())), "{text}");
}

#[test]
fn operator_refs_are_small() {
    let total: u64 =
        fs::read_dir(root().join("tests/refs/ops")).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum();
    assert!(total < 500_000, "operator reference vectors take {total} bytes");
}

#[test]
fn operator_kernels_match_onnxruntime_gap9_1_3_8_cores() {
    ops_pass("-DDG_PLATFORM_GAP9", "-O2", &[], &["--cores", "1,3,8"]);
}

#[test]
fn operator_kernels_match_onnxruntime_siracusa_and_host() {
    ops_pass("-DDG_PLATFORM_SIRACUSA", "-O2", &[], &["--cores", "8,1"]);
    ops_pass("-DDG_PLATFORM_HOST", "-O2", &[], &["--cores", "1"]);
}

/// Also the float-to-integer conversions of NaN, infinities and values
/// outside the target's range (`*_out_of_range` cases): C leaves them
/// undefined, the kernels give onnxruntime's values.
#[test]
fn operator_kernels_clean_under_asan_ubsan() {
    ops_pass("-DDG_PLATFORM_GAP9", "-O1", ASAN_UBSAN, &["--cores", "1,8"]);
}

#[test]
fn operator_kernels_clean_under_tsan() {
    ops_pass("-DDG_PLATFORM_GAP9", "-O1", &["-g", "-fsanitize=thread"], &["--cores", "3,8"]);
}

#[test]
fn operator_kernel_checks_catch_injected_faults() {
    let tmp = tempfile::tempdir().unwrap();
    let refs = tmp.path().join("refs");
    let names = unpack_ops(&refs);
    let exe = tmp.path().join("kernel_tests_ops_fault");
    build(&exe, "kernel_tests_ops.c", "-O2", &["-DDG_PLATFORM_GAP9", "-DDG_FAULT_INJECTION"]);
    // the hooks are inert until a fault is selected
    let (o, text) = run(&exe, &[refs.to_str().unwrap(), "--cores", "8"]);
    assert!(o.status.success(), "{text}");
    let (o, text) = run(&exe, &[refs.to_str().unwrap(), "--fault"]);
    assert!(o.status.success(), "an injected fault went unnoticed:\n{text}");
    assert!(!text.contains("MISSED"), "{text}");
    // every case perturbs each of its outputs
    for n in &names {
        assert!(text.contains(&format!("fault {n} #")), "case {n} has no fault:\n{text}");
    }
    let detected = text.lines().filter(|l| l.ends_with(": detected")).count();
    assert!(detected > names.len(), "only {detected} faults detected:\n{text}");
}

// ---------------------------------------------------------------- errors in the data

/// A project whose int64 `Div` (and, as `Mod`, its remainder) meets a zero
/// divisor at run time, built with `extra` C flags and run: its output.
fn divide_by_zero_project(tmp: &Path, op: &str, extra: &str) -> (Output, String) {
    use deploygen::ir::TensorData;
    let model = tmp.join(format!("{op}_by_zero"));
    fs::create_dir_all(&model).unwrap();
    let mut b = common::ModelBuilder::new();
    b.input("a", common::I64, &[4]).input("b", common::I64, &[4]).output("y", common::I64, &[4]);
    let attrs = if op == "Mod" { vec![common::attr_int("fmod", 1)] } else { vec![] };
    b.node(op, &["a", "b"], &["y"], attrs);
    b.write(&model, "network.onnx");
    let npz = |arrays: &[(&str, &TensorData)]| deploygen::bind::npz::write_npz(arrays).unwrap();
    let (a, d) = (TensorData::from_i64(vec![4], &[7, -9, 5, 8]), TensorData::from_i64(vec![4], &[2, 4, 0, -3]));
    // onnxruntime raises on a zero divisor; 0 is what the kernels store
    let y = if op == "Mod" { [1, -1, 0, 2] } else { [3, -2, 0, -2] };
    fs::write(model.join("inputs.npz"), npz(&[("a", &a), ("b", &d)])).unwrap();
    fs::write(model.join("outputs.npz"), npz(&[("y", &TensorData::from_i64(vec![4], &y))])).unwrap();
    let out = tmp.join(format!("{op}_project{}", extra.len()));
    let o = Command::new(env!("CARGO_BIN_EXE_deploygen"))
        .arg("build")
        .arg(&model)
        .args(["--platform", "GAP9", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "build: {}", String::from_utf8_lossy(&o.stderr));
    let o = common::make_host(&out, Some(extra), &[]);
    assert!(o.status.success(), "make: {}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new(out.join("app")).current_dir(&out).env("DG_HOST_QUIET", "1").output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    (o, text)
}

/// An integer Div or Mod by zero is an error on the chips as on the host:
/// the host emulation aborts with FATAL; the chips' kernels store 0 and
/// record it, and the harness prints it as a FATAL line and fails (built
/// on the host with `-DDG_KERNEL_ERRORS_AS_STATUS`, the chips' behaviour),
/// which `deploygen test` classifies as FAILED_RUNTIME.
#[test]
fn integer_division_by_zero_fails_on_the_host_and_on_the_chips() {
    if !common::have_gcc(module_path!()) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    for (op, msg) in [("Div", "integer Div by zero"), ("Mod", "integer Mod by zero")] {
        let (o, text) = divide_by_zero_project(tmp.path(), op, "");
        assert!(!o.status.success(), "{op}: the host run passed:\n{text}");
        assert!(text.contains(&format!("[pmsis-host] FATAL: {msg}")), "{op}:\n{text}");
        let (o, text) = divide_by_zero_project(tmp.path(), op, "-DDG_KERNEL_ERRORS_AS_STATUS");
        assert!(!o.status.success(), "{op}: the chip build passed:\n{text}");
        assert!(text.contains(&format!("FATAL: {msg} (found by a kernel")), "{op}:\n{text}");
        // the values themselves match: only the error status fails the run
        assert!(text.contains("Errors: 0 out of 4"), "{op}:\n{text}");
    }
}

// ---------------------------------------------------------------- the harness's comparison

/// The harness compares floats as numpy's `allclose` does, with the
/// default tolerances the generator writes into `testoutputs.h`: a 2-ulp
/// error on a large value (6239663.0 for 6239662.5, what the kernels'
/// `expf` may give) passes, and a 1e-3 error on a value of 1e-4 fails — the
/// other way round from the absolute 1e-3 alone (shown too). Loss lines
/// print each value's own bound; NaN never passes for a number, nor a
/// number for an infinity.
#[test]
fn the_harness_compares_as_allclose_with_the_default_tolerances() {
    let tmp = tempfile::tempdir().unwrap();
    let (atol, rtol) = (deploygen::emit::DEFAULT_TOLERANCE, deploygen::emit::DEFAULT_RTOL);
    let driver = format!(
        r#"#include "dg_check.h"
#include "pmsis.h"
#include <math.h>
#include <stdio.h>
#define ATOL {atol:e}f
#define RTOL {rtol:e}f
static void run(void)
{{
    const float big_c[2] = {{6239663.0f, -6239663.0f}}, big_r[2] = {{6239662.5f, -6239662.5f}};
    const float small_c[1] = {{1.1e-3f}}, small_r[1] = {{1e-4f}};
    const float nan_c[1] = {{NAN}}, one_r[1] = {{1.0f}};
    const float nan_nan[1] = {{NAN}}, inf_c[2] = {{INFINITY, 1e30f}}, inf_r[2] = {{INFINITY, INFINITY}};
    uint32_t n = 0;
    printf("big %u\n", (unsigned)dg_check_close("big", big_c, big_r, 2, ATOL, RTOL, &n));
    printf("small %u\n", (unsigned)dg_check_close("small", small_c, small_r, 1, ATOL, RTOL, &n));
    printf("nan %u\n", (unsigned)dg_check_close("nan", nan_c, one_r, 1, ATOL, 1.0f, &n));
    printf("nan_nan %u\n", (unsigned)dg_check_close("nan_nan", nan_nan, nan_nan, 1, ATOL, RTOL, &n));
    printf("inf %u\n", (unsigned)dg_check_close("inf", inf_c, inf_r, 2, ATOL, RTOL, &n));
    printf("abs_big %u\n", (unsigned)dg_check_tensor("abs_big", big_c, big_r, 2, 1e-3f, &n));
    printf("abs_small %u\n", (unsigned)dg_check_tensor("abs_small", small_c, small_r, 1, 1e-3f, &n));
    printf("losses %u\n", (unsigned)dg_check_losses(big_c, big_r, 2, ATOL, RTOL, &n));
    printf("compared %u\n", (unsigned)n);
    pmsis_exit(0);
}}
int main(void) {{ return pmsis_kickoff((void *)run); }}
"#
    );
    let src = tmp.path().join("check_driver.c");
    fs::write(&src, driver).unwrap();
    let exe = tmp.path().join("check_driver");
    let r = root();
    let mut cmd = Command::new("gcc");
    cmd.args(STRICT).arg("-O2").arg(POSIX).arg("-DDG_PLATFORM_GAP9");
    for inc in ["pmsis-host", "kernels", "mem", "harness"] {
        cmd.arg(format!("-I{}", r.join(inc).display()));
    }
    cmd.arg(r.join("harness/dg_check.c")).arg(r.join("mem/dg_mem.c")).arg(r.join("pmsis-host/pmsis_host.c"));
    cmd.arg(&src).args(["-lm", "-pthread", "-o"]).arg(&exe);
    let o = cmd.output().expect("gcc");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (o, text) = run(&exe, &[]);
    assert!(o.status.success(), "{text}");
    // NaN matches a NaN reference and infinity an equal one; a finite value
    // never matches an infinite reference (its relative bound is no bound)
    for line in
        ["big 0", "small 1", "nan 1", "nan_nan 0", "inf 1", "abs_big 2", "abs_small 0", "losses 0", "compared 12"]
    {
        assert!(text.lines().any(|l| l == line), "expected '{line}':\n{text}");
    }
    assert!(text.contains("mismatch small[0] computed=0.001100 ref=0.000100"), "{text}");
    // a loss line's tol is its own bound: atol + rtol * |ref|
    let bound = atol + rtol * 6239662.5f32;
    assert!(text.contains(&format!("diff=0.500000 tol={bound:.6}")), "{text}");
}
