//! `report --profile` input on arbitrary text: per-node cycles whose
//! totals never wrap, or an error; the table and the SVG never panic.
#![no_main]

use deploygen::verify::profile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(layers) = profile::parse(&text) {
        assert!(layers.iter().try_fold(0u64, |t, l| t.checked_add(l.cycles)).is_some(), "totals wrap");
        let _ = profile::markdown(&layers);
        let _ = profile::svg(&layers, "fuzz");
    }
});
