//! Projects built in memory, and the comparison of a project built from
//! hostile names with the same project built from plain ones.

use std::path::{Path, PathBuf};

use deploygen::cli::build::{generate, Args};

use super::c_text::same_but_names;

/// A project's files: path and contents.
pub type Files = Vec<(PathBuf, Vec<u8>)>;

/// The build files: they may hold the project name, nothing else of the model.
const BUILD_FILES: &[&str] = &["Makefile.host", "Makefile", "CMakeLists.txt"];

#[derive(Clone, Copy)]
pub struct Target {
    pub platform: &'static str,
    pub level: &'static str,
    pub hex_files: bool,
    /// `--l2-image 0`: every weight goes to L3.
    pub weights_in_l3: bool,
}

pub const GAP9_L2: Target = Target { platform: "GAP9", level: "L2", hex_files: false, weights_in_l3: false };
pub const GAP9_HEX: Target = Target { platform: "GAP9", level: "L3", hex_files: true, weights_in_l3: true };
pub const SIRACUSA_L3: Target = Target { platform: "Siracusa", level: "L3", hex_files: false, weights_in_l3: true };
pub const HOST_L2: Target = Target { platform: "host", level: "L2", hex_files: false, weights_in_l3: false };

pub fn files(model: &Path, t: Target) -> Files {
    try_files(model, t).unwrap_or_else(|e| panic!("{}: {e}", model.display()))
}

/// The project's files, or the error `build` would exit with.
pub fn try_files(model: &Path, t: Target) -> deploygen::Result<Files> {
    let a = Args {
        model: model.to_path_buf(),
        platform: t.platform.into(),
        default_mem: Some(t.level.into()),
        hex_files: t.hex_files,
        plan: deploygen::cli::plan_args::PlanArgs { l2_image: t.weights_in_l3.then_some(0), ..Default::default() },
        ..Default::default()
    };
    generate(&a).map(|b| b.project.files)
}

/// `hostile` is `plain` with only its names changed: the same C code,
/// comments that neither open nor close, string literals holding the
/// hostile names' bytes (`names`: plain → hostile), build files with the
/// plain folder name `folder` replaced by one sanitised name, every other
/// file (but the manifest) the same.
pub fn only_names_differ(
    plain: &[(PathBuf, Vec<u8>)],
    hostile: &[(PathBuf, Vec<u8>)],
    names: &[(String, Vec<u8>)],
    folder: &str,
) -> Result<(), String> {
    let plain_paths: Vec<&PathBuf> = plain.iter().map(|(p, _)| p).collect();
    let hostile_paths: Vec<&PathBuf> = hostile.iter().map(|(p, _)| p).collect();
    if plain_paths != hostile_paths {
        return Err(format!("the file lists differ:\n  {plain_paths:?}\n  {hostile_paths:?}"));
    }
    for ((rel, p), (_, h)) in plain.iter().zip(hostile) {
        let file = rel.display().to_string();
        let name = rel.file_name().unwrap().to_string_lossy();
        if BUILD_FILES.contains(&name.as_ref()) {
            build_file_holds_only_the_project_name(&file, p, h, folder)?;
        } else if !rel.starts_with("runtime") && (file.ends_with(".c") || file.ends_with(".h")) {
            same_but_names(&file, &without_layout_hash(p), &without_layout_hash(h), names)?;
        } else if name != "deploygen.json" && p != h {
            return Err(format!("{file} differs"));
        }
    }
    Ok(())
}

/// The code with the checkpoint layout hash's value blanked: the hash
/// covers the tensors' names by design (a checkpoint of a model whose
/// names differ must not load), so it is the one value names may change.
fn without_layout_hash(code: &[u8]) -> Vec<u8> {
    const KEY: &[u8] = b"DG_MODEL_LAYOUT_HASH 0x";
    let mut out = Vec::with_capacity(code.len());
    let mut i = 0;
    while i < code.len() {
        if code[i..].starts_with(KEY) {
            out.extend_from_slice(KEY);
            i += KEY.len();
            while i < code.len() && code[i].is_ascii_hexdigit() {
                i += 1;
            }
        } else {
            out.push(code[i]);
            i += 1;
        }
    }
    out
}

/// The hostile build file is the plain one with the plain folder name
/// replaced, everywhere, by one name of `[A-Za-z_][A-Za-z0-9_]*`.
fn build_file_holds_only_the_project_name(
    file: &str,
    plain: &[u8],
    hostile: &[u8],
    folder: &str,
) -> Result<(), String> {
    let plain = std::str::from_utf8(plain).map_err(|e| format!("{file}: {e}"))?;
    let Ok(hostile) = std::str::from_utf8(hostile) else {
        return Err(format!("{file} is not UTF-8: {:?}", String::from_utf8_lossy(hostile)));
    };
    let first = plain.find(folder).ok_or(format!("{file}: the plain project name is not in it"))?;
    let ident: String = hostile[first..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    if ident.is_empty() || ident.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(format!("{file}: the project name is not sanitised: {:?}", &hostile[first..]));
    }
    let want = plain.replace(folder, &ident);
    if hostile != want {
        let at = want.bytes().zip(hostile.bytes()).take_while(|(a, b)| a == b).count();
        let line = hostile[..at].lines().count();
        return Err(format!("{file}: line {line} holds more than the sanitised name '{ident}':\n{hostile}"));
    }
    Ok(())
}
