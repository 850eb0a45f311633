//! `triage` keys from arbitrary text: a model folder inside the root with
//! a plain name, or an error; never a folder outside the root.
#![no_main]

use deploygen::triage::resolve::{self, is_plain_name};
use deploygen::verify::status::StatusTable;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let key = String::from_utf8_lossy(data);
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("repo");
    std::fs::create_dir_all(root.join("models")).unwrap();
    let outside = base.path().join("victim");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("training_model.onnx"), b"").unwrap();
    let table = StatusTable::read(&root.join("status.toml")).unwrap();
    if let Ok(found) = resolve::resolve(&root, &key, &table) {
        let dir = found.dir.canonicalize().unwrap();
        assert!(dir.starts_with(root.canonicalize().unwrap()), "{key:?} resolved to {}", dir.display());
        assert!(is_plain_name(&found.key.model), "{key:?}");
    }
});
