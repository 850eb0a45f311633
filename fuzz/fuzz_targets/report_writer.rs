//! The report writer (`--dot`, `--svg`, `--junit`, `merge-junit --out`,
//! status tables): the first byte picks what is at the path (nothing, a
//! regular file, a folder, a FIFO, a link to a file, a dangling link), the
//! rest is the report. A new name or a regular file is written with
//! exactly those bytes; anything else is refused and left as it was; a
//! link's target never changes; nothing else is left in the folder.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, contents)) = data.split_first() else { return };
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("report");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let kind = pick % 6;
    match kind {
        0 => {}
        1 => std::fs::write(&p, b"old").unwrap(),
        2 => std::fs::create_dir(&p).unwrap(),
        3 => assert!(std::process::Command::new("mkfifo").arg(&p).status().unwrap().success()),
        4 => std::os::unix::fs::symlink(&victim, &p).unwrap(),
        _ => std::os::unix::fs::symlink(dir.path().join("nowhere"), &p).unwrap(),
    }
    let before = std::fs::symlink_metadata(&p).ok().map(|m| m.file_type());
    let r = deploygen::files::write(&p, contents);
    if kind <= 1 {
        r.expect("a new name or a regular file is written");
        assert_eq!(std::fs::read(&p).unwrap(), contents);
    } else {
        let e = r.expect_err("not a regular file: refused").to_string();
        assert!(e.contains("not a regular file"), "{e}");
        assert_eq!(std::fs::symlink_metadata(&p).ok().map(|m| m.file_type()), before);
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert!(std::fs::read_dir(dir.path()).unwrap().count() <= 2, "a temporary file was left");
});
