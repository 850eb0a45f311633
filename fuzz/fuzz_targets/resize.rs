//! Resize with input sizes, output sizes, mode and antialias read from the
//! input, generated for GAP9 at L2: an error (never a panic), or a project
//! whose tap tables the plan counted, within their ceiling.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/common/builder.rs"]
#[allow(dead_code)]
mod builder;

use builder::{attr_int, attr_str, ModelBuilder, F32};
use deploygen::pipeline::{self, Options};
use deploygen::plan::PlanOptions;

fn u32_at(d: &[u8], i: usize) -> u32 {
    let b = |k: usize| d.get(i + k).copied().unwrap_or(0);
    u32::from_le_bytes([b(0), b(1), b(2), b(3)])
}

fuzz_target!(|data: &[u8]| {
    let (h, w) = (1 + i64::from(data.first().copied().unwrap_or(0) % 8), 1 + i64::from(data.get(1).copied().unwrap_or(0) % 8));
    let (oh, ow) = (1 + i64::from(u32_at(data, 2) % 100_000_000), 1 + i64::from(u32_at(data, 6) % 100_000_000));
    let pick = data.get(10).copied().unwrap_or(0);
    let mode = ["nearest", "linear", "cubic"][usize::from(pick % 3)];
    let mut attrs = vec![attr_str("mode", mode)];
    if pick & 4 != 0 && mode != "nearest" {
        attrs.push(attr_int("antialias", 1));
    }
    let mut b = ModelBuilder::new();
    b.input("x", F32, &[1, 1, h, w])
        .init_i64("sizes", &[1, 1, oh, ow])
        .node("Resize", &["x", "", "", "sizes"], &["y"], attrs)
        .output("y", F32, &[1, 1, oh, ow]);
    let dir = tempfile::tempdir().unwrap();
    b.write(dir.path(), "network.onnx");
    let o = Options::new(PlanOptions::named("GAP9", "L2", [None, Some(200_000_000), Some(200_000_000)]).unwrap());
    if let Ok(g) = pipeline::generate(dir.path(), &o) {
        let tables: u64 =
            g.plan.buffers.iter().filter(|b| b.name == deploygen::plan::KERNEL_TABLES).map(|b| b.bytes).sum();
        assert!(tables > 0 && tables <= deploygen::plan::TABLES_CEILING, "{tables} B of tables");
    }
});
