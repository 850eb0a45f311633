//! Golden files: `golden/<model>/<platform>-<level>/` holds the generated
//! sources of a representative set of projects (the copied `runtime/` is
//! left out; data files over 32 KiB — test vectors, references, baked
//! weights — and the binary L3 image are kept as a summary: size, hash and
//! first lines). Every file is diffed with a
//! readable unified diff; `UPDATE_GOLDEN=1 cargo test` rewrites them.
//! A second test compiles every golden project against the host emulation.

use crate::common;

use std::path::{Path, PathBuf};

use deploygen::cli::build::{generate, Args as BuildArgs};
use similar::TextDiff;

/// Files above this size are kept as a summary.
const SUMMARY_ABOVE: usize = 32 * 1024;
const SUMMARY_SUFFIX: &str = ".golden-summary";

struct Case {
    model: &'static str,
    platform: &'static str,
    level: &'static str,
    /// `--l2-image` (the ResNet-8 case stages its weights through L3).
    l2_image: Option<u64>,
    /// `--no-tiling`: the untiled plan, kept for comparison.
    untiled: bool,
}

const CASES: &[Case] = &[
    Case { model: "simple_mlp", platform: "GAP9", level: "L2", l2_image: None, untiled: false },
    Case { model: "simple_mlp", platform: "GAP9", level: "L3", l2_image: None, untiled: false },
    Case { model: "simple_mlp", platform: "GAP9", level: "L2", l2_image: None, untiled: true },
    Case { model: "simple_mlp", platform: "Siracusa", level: "L2", l2_image: None, untiled: false },
    Case { model: "simple_mlp", platform: "Siracusa", level: "L3", l2_image: None, untiled: false },
    Case { model: "simple_mlp", platform: "host", level: "L2", l2_image: None, untiled: false },
    // The L2 image holds 362,904 B of test data; 420,000 B leaves room for
    // all but one weight: baked, l3-staged and (evicted) l3-hex together.
    Case { model: "resnet8", platform: "GAP9", level: "L2", l2_image: Some(420_000), untiled: false },
    Case { model: "resnet8", platform: "GAP9", level: "L3", l2_image: None, untiled: false },
    Case { model: "cct", platform: "GAP9", level: "L3", l2_image: None, untiled: false },
    Case { model: "kws_cnn", platform: "GAP9", level: "L2", l2_image: None, untiled: false },
    Case { model: "kws_cnn", platform: "host", level: "L3", l2_image: None, untiled: false },
    Case { model: "mobilenet_v3_block", platform: "Siracusa", level: "L2", l2_image: None, untiled: false },
    Case { model: "cnn_inline_sgd", platform: "GAP9", level: "L2", l2_image: None, untiled: false },
    Case { model: "cnn_inline_sgd", platform: "Siracusa", level: "L3", l2_image: None, untiled: false },
];

fn golden_dir(c: &Case) -> PathBuf {
    let tag = if c.untiled { "-untiled" } else { "" };
    common::root().join("golden").join(c.model).join(format!("{}-{}{tag}", c.platform, c.level))
}

fn args(c: &Case) -> BuildArgs {
    BuildArgs {
        model: common::zoo(c.model),
        platform: c.platform.into(),
        default_mem: Some(c.level.into()),
        plan: deploygen::cli::plan_args::PlanArgs { l2_image: c.l2_image, no_tiling: c.untiled, ..Default::default() },
        ..Default::default()
    }
}

fn fnv1a64(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in data {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// Files that hold data (test vectors, references, baked weights) rather
/// than code: kept as a summary when large. Code is always kept exactly.
fn is_data(rel: &Path) -> bool {
    let name = rel.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    matches!(name.as_str(), "testinputs.h" | "testoutputs.h" | "Weights.c")
}

/// The manifest's runtime file hashes folded into one entry: the runtime is
/// pinned by its own tests, and a kernel edit should change one line of
/// each golden manifest, not one per runtime file.
fn fold_runtime_hashes(manifest: &str) -> String {
    let lines: Vec<&str> = manifest.lines().collect();
    let mut out = Vec::new();
    let (mut folded, mut count, mut at) = (String::new(), 0, None);
    let mut i = 0;
    while i < lines.len() {
        let entry = lines.get(i..i + 4).filter(|e| {
            e[0].trim() == "{" && e[1].trim_start().starts_with("\"path\": \"runtime/") && e[3].trim().starts_with('}')
        });
        if let Some(e) = entry {
            folded.push_str(e[1].trim());
            folded.push_str(e[2].trim());
            count += 1;
            at.get_or_insert(out.len());
            i += 4;
            continue;
        }
        out.push(lines[i].to_string());
        i += 1;
    }
    if let Some(at) = at {
        let entry = format!(
            "    {{\n      \"path\": \"runtime/ ({count} files)\",\n      \"fnv1a64\": \"{:016x}\"\n    }},",
            fnv1a64(folded.as_bytes())
        );
        out.insert(at, entry);
    }
    out.join("\n") + "\n"
}

/// The golden form of one generated file: (path in golden/, contents).
fn golden_form(rel: &Path, data: &[u8]) -> (PathBuf, String) {
    match std::str::from_utf8(data) {
        Ok(text) if rel == Path::new("deploygen.json") => (rel.to_path_buf(), fold_runtime_hashes(text)),
        Ok(text) if data.len() <= SUMMARY_ABOVE || !is_data(rel) => (rel.to_path_buf(), text.to_string()),
        text => {
            let mut s = format!(
                "deploygen golden summary of {} (too large to keep)\nbytes {}\nfnv1a64 {:016x}\n",
                rel.display(),
                data.len(),
                fnv1a64(data)
            );
            if let Ok(t) = text {
                s.push_str(&format!("lines {}\n--- first 40 lines ---\n", t.lines().count()));
                for l in t.lines().take(40) {
                    s.push_str(l);
                    s.push('\n');
                }
            }
            (PathBuf::from(format!("{}{SUMMARY_SUFFIX}", rel.display())), s)
        }
    }
}

/// The generated project of a case in golden form, sorted by path.
fn expected(c: &Case) -> Vec<(PathBuf, String, Vec<u8>)> {
    let built = generate(&args(c)).unwrap_or_else(|e| panic!("{} {} {}: {e}", c.model, c.platform, c.level));
    built
        .project
        .files
        .iter()
        .filter(|(p, _)| !p.starts_with("runtime"))
        .map(|(p, d)| {
            let (gp, text) = golden_form(p, d);
            (gp, text, d.clone())
        })
        .collect()
}

fn files_in(dir: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir.join(rel)) else { return };
    for e in rd.flatten() {
        let r = rel.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            files_in(dir, &r, out);
        } else {
            out.push(r);
        }
    }
}

/// A folder of golden/ that no case writes would pin nothing while looking
/// like it does; UPDATE_GOLDEN=1 removes it.
#[test]
fn every_golden_folder_belongs_to_a_case() {
    let update = std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1");
    let root = common::root().join("golden");
    let cases: Vec<PathBuf> = CASES.iter().map(golden_dir).collect();
    let mut orphans = vec![];
    for model in std::fs::read_dir(&root).unwrap().flatten().filter(|e| e.path().is_dir()) {
        for case in std::fs::read_dir(model.path()).unwrap().flatten() {
            if !cases.contains(&case.path()) {
                orphans.push(case.path());
            }
        }
        if update && orphans.iter().any(|o| o.starts_with(model.path())) {
            for o in orphans.iter().filter(|o| o.starts_with(model.path())) {
                std::fs::remove_dir_all(o).unwrap();
            }
            let _ = std::fs::remove_dir(model.path());
        }
    }
    assert!(update || orphans.is_empty(), "golden folders no case writes (UPDATE_GOLDEN=1 removes them): {orphans:#?}");
}

#[test]
fn generated_projects_match_the_golden_files() {
    let update = std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1");
    let mut report = String::new();
    for c in CASES {
        let dir = golden_dir(c);
        let want = expected(c);
        if update {
            let _ = std::fs::remove_dir_all(&dir);
            for (p, text, _) in &want {
                let path = dir.join(p);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, text).unwrap();
            }
            continue;
        }
        let mut have = vec![];
        files_in(&dir, Path::new(""), &mut have);
        for h in &have {
            if !want.iter().any(|(p, _, _)| p == h) {
                report.push_str(&format!("{}: golden file {} is no longer generated\n", dir.display(), h.display()));
            }
        }
        for (p, text, _) in &want {
            let path = dir.join(p);
            match std::fs::read_to_string(&path) {
                Err(_) => report.push_str(&format!("{}: missing (generated, not in golden/)\n", path.display())),
                Ok(old) if old == *text => {}
                Ok(old) => {
                    let d = TextDiff::from_lines(&old, text);
                    report.push_str(&format!(
                        "{}\n",
                        d.unified_diff().context_radius(3).header(
                            &format!("golden/{}", path.strip_prefix(common::root().join("golden")).unwrap().display()),
                            "generated"
                        )
                    ));
                }
            }
        }
    }
    assert!(
        report.is_empty(),
        "generated output differs from golden/ (UPDATE_GOLDEN=1 cargo test rewrites it):\n{report}"
    );
}

/// Every golden project is real C: its files (summarised ones checked
/// against their hash and taken from the generator) build with
/// `make -f Makefile.host` against the host emulation, two at a time. The
/// first builds standalone, runtime and all, as a user's `make` does; the
/// others link the runtime from the archive `deploygen test` uses.
#[test]
fn golden_projects_compile_on_the_host() {
    if !common::have_gcc(module_path!()) {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let mut dirs = vec![];
    for (i, c) in CASES.iter().enumerate() {
        let golden = golden_dir(c);
        let out = work.path().join(format!("p{i}"));
        let built = generate(&args(c)).unwrap();
        for (rel, data) in &built.project.files {
            let dst = out.join(rel);
            std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
            if rel.starts_with("runtime") {
                std::fs::write(&dst, data).unwrap();
                continue;
            }
            let (gp, text) = golden_form(rel, data);
            let g = std::fs::read_to_string(golden.join(&gp))
                .unwrap_or_else(|_| panic!("{}: no golden {} (UPDATE_GOLDEN=1)", golden.display(), gp.display()));
            assert_eq!(g, text, "{}: {} differs from golden", golden.display(), gp.display());
            std::fs::write(&dst, data).unwrap();
        }
        dirs.push((format!("{} {}-{}", c.model, c.platform, c.level), out));
    }
    let failures = std::sync::Mutex::new(vec![]);
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some((name, dir)) = dirs.get(i) else { break };
                let mut make = std::process::Command::new("make");
                make.args(["-s", "-f", "Makefile.host"]).current_dir(dir);
                if i > 0 {
                    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("runtime-cache");
                    let vars = deploygen::verify::cache::MakeVars::default();
                    let timeout = std::time::Duration::from_secs(900);
                    match deploygen::verify::cache::archive(&cache, dir, &vars, 1, timeout) {
                        Ok(lib) => {
                            make.arg(format!("RUNTIME_LIB={}", lib.display()));
                        }
                        Err(e) => failures.lock().unwrap().push(format!("{name}: no runtime archive: {e:?}")),
                    }
                }
                let o = make.output().unwrap();
                if !o.status.success() || !dir.join("app").is_file() {
                    failures.lock().unwrap().push(format!(
                        "{name}: make -f Makefile.host failed\n{}{}",
                        String::from_utf8_lossy(&o.stdout),
                        String::from_utf8_lossy(&o.stderr)
                    ));
                }
                // A training project's second client, demo.c (dg_model.h).
                if dir.join("demo.c").is_file() {
                    let o = make.arg("demo").output().unwrap();
                    if !o.status.success() || !dir.join("demo").is_file() {
                        failures.lock().unwrap().push(format!(
                            "{name}: make -f Makefile.host demo failed\n{}{}",
                            String::from_utf8_lossy(&o.stdout),
                            String::from_utf8_lossy(&o.stderr)
                        ));
                    }
                }
            });
        }
    });
    let f = failures.into_inner().unwrap();
    assert!(f.is_empty(), "{}", f.join("\n"));
}
