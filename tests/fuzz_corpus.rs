//! The fuzz corpora replayed on stable, so every input a fuzzing run kept (seeds
//! from the real fixtures, inputs that reached new code, and every crash found, once fixed)
//! runs in every test run. The long runs are `scripts/fuzz.sh` (nightly, cargo-fuzz).

use std::path::Path;

type Target = fn(&[u8]);

const TARGETS: &[(&str, Target)] = &[
    ("gguf_header", burrow::fuzz::gguf_header),
    ("import", burrow::fuzz::import),
    ("protocol", burrow::fuzz::protocol),
    ("template", burrow::fuzz::template),
    ("calculate", burrow::fuzz::calculate),
    ("search_query", burrow::fuzz::search_query),
];

#[test]
fn every_kept_fuzz_input_runs_clean() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    for (name, target) in TARGETS {
        let mut ran = 0;
        // `corpus/`: what fuzzing keeps; `regressions/`: the crashes it found, each fixed.
        for dir in ["corpus", "regressions"] {
            let Ok(entries) = std::fs::read_dir(root.join(dir).join(name)) else {
                continue;
            };
            for entry in entries {
                let path = entry.unwrap().path();
                let data = std::fs::read(&path).unwrap();
                let outcome = std::panic::catch_unwind(|| target(&data));
                assert!(outcome.is_ok(), "{name}: {} panicked", path.display());
                ran += 1;
            }
        }
        assert!(ran > 0, "no corpus for {name} under {}", root.display());
    }
}
