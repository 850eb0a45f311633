//! The runtime compiled once (`verify::cache`): the kernel-file index that
//! decides which runtime sources a project lists agrees with what gcc
//! compiles; a case links a cached archive instead of compiling the
//! runtime; concurrent processes build one archive; a project whose
//! runtime was changed gets its own.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use deploygen::emit::KERNEL_SYMBOLS;
use deploygen::verify::{generate_case, run_case, Case, Kind};

fn have_gcc() -> bool {
    Command::new("gcc").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// `nm` of one object: (defined global names, undefined names).
fn nm(obj: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let o = Command::new("nm").arg(obj).output().expect("nm (binutils) runs");
    assert!(o.status.success(), "nm {}", obj.display());
    let (mut def, mut undef) = (BTreeSet::new(), BTreeSet::new());
    for l in String::from_utf8_lossy(&o.stdout).lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        match w.as_slice() {
            ["U", name] => {
                undef.insert(name.to_string());
            }
            [_, t, name] if t.chars().all(|c| c.is_ascii_uppercase()) => {
                def.insert(name.to_string());
            }
            _ => {}
        }
    }
    (def, undef)
}

/// Every kernel file's object defines exactly the `dg_*` names the index
/// says, and each `dg_*` name it needs from another kernel file is defined
/// by a file the index makes it pull in: a project listing the closure
/// links (the runtime's other folders are always listed).
#[test]
fn the_kernel_index_agrees_with_the_objects() {
    if !have_gcc() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let rt = common::root().join("runtime");
    let mut objects = BTreeMap::new();
    for (file, _, _) in KERNEL_SYMBOLS {
        let obj = tmp.path().join(file.replace('/', "_") + ".o");
        let o = Command::new("gcc")
            .args(["-std=c99", "-O0", "-D_POSIX_C_SOURCE=200809L", "-DDG_PLATFORM_GAP9", "-DDG_FAULT_INJECTION"])
            .args(["-DNUM_CORES=8", "-c", "-o"])
            .arg(&obj)
            .arg(rt.join(file))
            .args(["-I", "runtime/kernels", "-I", "runtime/mem", "-I", "runtime/pmsis-host"])
            .current_dir(common::root())
            .output()
            .unwrap();
        assert!(o.status.success(), "gcc {file}: {}", String::from_utf8_lossy(&o.stderr));
        objects.insert(*file, nm(&obj));
    }
    let defined_by = |name: &str| objects.iter().find(|(_, (d, _))| d.contains(name)).map(|(f, _)| *f);
    for (file, defs, uses) in KERNEL_SYMBOLS {
        let (d, u) = &objects[file];
        let real: BTreeSet<&str> = d.iter().map(String::as_str).filter(|n| n.starts_with("dg_")).collect();
        let index: BTreeSet<&str> = defs.iter().copied().collect();
        assert_eq!(real, index, "{file}: the names the index says it defines");
        for name in u.iter().filter(|n| n.starts_with("dg_")) {
            if let Some(other) = defined_by(name) {
                let pulled = KERNEL_SYMBOLS.iter().find(|(f, _, _)| *f == other).unwrap();
                assert!(
                    uses.iter().any(|x| pulled.1.contains(x)),
                    "{file} needs {name} from {other}, but the index does not pull {other} in"
                );
            }
        }
    }
}

/// A project lists the kernel files of its own calls, not every file.
#[test]
fn a_project_lists_only_the_kernels_it_calls() {
    let all = deploygen::emit::runtime_sources(KERNEL_SYMBOLS.iter().flat_map(|(_, d, _)| d.iter().copied())).unwrap();
    let gemm = deploygen::emit::runtime_sources(["dg_gemm_f32"]).unwrap();
    assert!(gemm.contains(&"runtime/kernels/linear.c".to_string()), "{gemm:?}");
    assert!(gemm.contains(&"runtime/kernels/common.c".to_string()), "dg_split comes along: {gemm:?}");
    assert!(gemm.contains(&"runtime/mem/dg_mem.c".to_string()), "{gemm:?}");
    assert!(!gemm.iter().any(|s| s.contains("/conv_")), "{gemm:?}");
    // One file per convolution variant: a forward project does not compile
    // the gradients, and a dB alone compiles none of the other variants.
    let kernels = |calls: &[&str]| -> Vec<String> {
        let all = deploygen::emit::runtime_sources(calls.iter().copied()).unwrap();
        all.into_iter().filter(|s| s.contains("/conv_")).map(|s| s.replace("runtime/kernels/", "")).collect()
    };
    assert_eq!(kernels(&["dg_conv_f32"]), ["conv_depthwise.c", "conv_fwd.c", "conv_pointwise.c"]);
    assert_eq!(kernels(&["dg_conv_grad_db_f32"]), ["conv_grad_db.c"]);
    assert_eq!(kernels(&["dg_conv_grad_dw_f32"]), ["conv_depthwise.c", "conv_grad_dw.c", "conv_pointwise.c"]);
    // One file per quantized kernel variant as well.
    let quant = |calls: &[&str]| -> Vec<String> {
        let all = deploygen::emit::runtime_sources(calls.iter().copied()).unwrap();
        all.into_iter().filter(|s| s.contains("/quant")).map(|s| s.replace("runtime/kernels/", "")).collect()
    };
    assert_eq!(quant(&["dg_qlinear_conv"]), ["quant_conv.c"]);
    assert_eq!(quant(&["dg_qlinear_matmul"]), ["quant_matmul.c"]);
    assert_eq!(quant(&["dg_quantize_linear", "dg_qlinear_add"]), ["quant.c"]);
    assert!(gemm.len() < all.len());
    let e = deploygen::emit::runtime_sources(["dg_no_such_kernel"]).unwrap_err();
    assert!(e.to_string().contains("dg_no_such_kernel"), "{e}");
}

fn case(cache: &Path, platform: &str) -> Case {
    let mut c = Case::new(common::zoo("simple_mlp"), "simple_mlp", platform, "L2", Kind::Training);
    c.cache = Some(cache.to_path_buf());
    c
}

fn archives(cache: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(cache)
        .map(|d| d.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "a")).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// The first case builds the archive; the next case of the same flags
/// uses it (the project compiles only its own sources: no runtime object
/// appears in its folder); another platform gets another archive; a
/// project with a changed runtime file gets its own and sees the change.
#[test]
fn cases_share_one_runtime_archive_per_flags() {
    if !have_gcc() {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let first = run_case(&case(cache.path(), "GAP9"), &generate_case);
    assert!(first.passed(), "{}: {:?}", first.message, first.details);
    assert_eq!(archives(cache.path()).len(), 1);
    let mut kept = case(cache.path(), "GAP9");
    kept.keep = true;
    let second = run_case(&kept, &generate_case);
    assert!(second.passed(), "{}", second.message);
    let project = second.project.unwrap();
    assert!(project.join("main.o").is_file());
    assert!(!project.join("runtime/kernels/linear.o").exists(), "the runtime was compiled again");
    assert!(!project.join("runtime/pmsis-host/pmsis_host.o").exists(), "the emulation was compiled again");
    std::fs::remove_dir_all(project).unwrap();
    assert_eq!(archives(cache.path()).len(), 1, "the same flags, the same archive");

    let other = run_case(&case(cache.path(), "Siracusa"), &generate_case);
    assert!(other.passed(), "{}", other.message);
    assert_eq!(archives(cache.path()).len(), 2, "another platform, another archive");

    // A runtime file changed in the project: its own archive, and the
    // change is what runs (here: a loss kernel that reports a wrong loss).
    let broken = |c: &Case, dir: &Path| {
        generate_case(c, dir)?;
        let f = dir.join("runtime/harness/dg_check.c");
        let text = std::fs::read_to_string(&f).unwrap();
        let patched = text.replace("diff = dg_diff(computed[i], r);", "diff = 1.0f;");
        assert_ne!(text, patched, "the patch applies");
        std::fs::write(&f, patched).unwrap();
        Ok::<(), deploygen::verify::StageError>(())
    };
    let patched = run_case(&case(cache.path(), "GAP9"), &broken);
    assert!(!patched.passed(), "the patched harness must fail the case: {}", patched.message);
    assert_eq!(archives(cache.path()).len(), 3);
}

/// Two `deploygen test` processes at once on an empty cache: both pass,
/// the runtime is compiled once (the other process waits for it), and no
/// scratch folder or partial archive is left.
#[test]
fn concurrent_processes_build_one_archive() {
    if !have_gcc() {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_deploygen"))
            .args(["test", "models/simple_mlp", "models/kws_cnn", "--platform", "host", "--default-mem", "L2"])
            .arg("--cache-dir")
            .arg(cache.path())
            .args(["-j", "2", "--status"])
            .arg(common::root().join("status.toml"))
            .current_dir(common::root())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let mut compiled = 0;
    for p in [a, b] {
        let o = p.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{stderr}");
        compiled += stderr.matches("compiling the runtime once").count();
    }
    assert_eq!(compiled, 1, "the runtime is compiled by one case of one process");
    assert_eq!(archives(cache.path()).len(), 1);
    let leftovers: Vec<_> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("build-"))
        .collect();
    assert!(leftovers.is_empty(), "scratch folders left: {leftovers:?}");
}

fn digest(p: &Path) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(std::fs::read(p).unwrap()).iter().map(|b| format!("{b:02x}")).collect()
}

/// The cache is checked before it is linked: the folder is made `0700`;
/// each archive's SHA-256 is recorded beside it; a planted archive (one
/// of other flags, a truncated one, a linker script) is rebuilt, and the
/// case runs what this runtime compiles to.
#[test]
fn a_planted_or_broken_archive_is_rebuilt_before_it_is_linked() {
    use std::os::unix::fs::PermissionsExt;
    if !have_gcc() {
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let cache = base.path().join("new/cache");
    let first = run_case(&case(&cache, "GAP9"), &generate_case);
    assert!(first.passed(), "{}", first.message);
    let mode = std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "the cache folder is private");
    let [gap9] = archives(&cache).try_into().unwrap();
    let recorded = std::fs::read_to_string(format!("{}.sha256", gap9.display())).unwrap();
    assert_eq!(recorded.trim(), digest(&gap9));
    assert!(run_case(&case(&cache, "Siracusa"), &generate_case).passed());
    let siracusa = archives(&cache).into_iter().find(|a| *a != gap9).unwrap();

    let planted: [(&str, Vec<u8>); 3] = [
        ("another platform's archive", std::fs::read(&siracusa).unwrap()),
        ("a truncated archive", std::fs::read(&gap9).unwrap()[..1000].to_vec()),
        ("a linker script", b"INPUT(/nonexistent/evil.o)\n".to_vec()),
    ];
    for (what, bytes) in planted {
        std::fs::write(&gap9, &bytes).unwrap();
        let o = run_case(&case(&cache, "GAP9"), &generate_case);
        assert!(o.passed(), "{what}: {} {:?}", o.message, o.details);
        assert_ne!(std::fs::read(&gap9).unwrap(), bytes, "{what} is still in place");
        let recorded = std::fs::read_to_string(format!("{}.sha256", gap9.display())).unwrap();
        assert_eq!(recorded.trim(), digest(&gap9), "{what}");
    }
}

/// A cache folder that cannot be used (a file, a dangling link, a folder
/// others can write) does not fail the case: the runtime is built in the
/// project.
#[test]
fn an_unusable_cache_falls_back_to_building_in_the_project() {
    use std::os::unix::fs::PermissionsExt;
    if !have_gcc() {
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let file = base.path().join("a-file");
    std::fs::write(&file, "not a folder").unwrap();
    let dangling = base.path().join("dangling");
    std::os::unix::fs::symlink(base.path().join("nowhere"), &dangling).unwrap();
    let shared = base.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    for cache in [&file, &dangling, &shared] {
        let o = run_case(&case(cache, "GAP9"), &generate_case);
        assert!(o.passed(), "{}: {} {:?}", cache.display(), o.message, o.details);
    }
    assert!(archives(&shared).is_empty(), "nothing is cached where others can write");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a folder");
}

/// A relative --cache-dir or DEPLOYGEN_CACHE_DIR is taken from the working
/// directory (make runs in the project folder).
#[test]
fn a_relative_cache_folder_is_resolved_from_the_working_directory() {
    if !have_gcc() {
        return;
    }
    let cwd = tempfile::tempdir().unwrap();
    let status = cwd.path().join("status.toml");
    std::fs::write(&status, "").unwrap();
    for (flag, env) in [(true, false), (false, true)] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_deploygen"));
        cmd.arg("test").arg(common::zoo("simple_mlp")).args(["--platform", "host", "--status"]).arg(&status);
        let rel = if flag { "rel-flag" } else { "rel-env" };
        if flag {
            cmd.args(["--cache-dir", rel]);
        }
        if env {
            cmd.env("DEPLOYGEN_CACHE_DIR", rel);
        }
        let o = cmd.current_dir(cwd.path()).output().unwrap();
        assert!(
            o.status.success(),
            "{rel}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(archives(&cwd.path().join(rel)).len(), 1, "{rel}");
    }
}
