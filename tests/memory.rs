//! Unloading and switching free the model's memory. This file holds one test so that
//! nothing else runs in the process while resident memory is measured.

mod common;

use burrow::llm::memory::process_rss_bytes;
use burrow::llm::{
    ChatMessage, GenerateRequest, LanguageModel, LlamaEngine, LoadOptions, Prompt, SamplingParams,
};

fn use_model(model: &dyn LanguageModel) {
    model
        .generate(
            GenerateRequest::new(Prompt::chat(vec![ChatMessage::user(
                "Tell me about memory.",
            )]))
            .sampling(SamplingParams::greedy())
            .max_tokens(16),
        )
        .unwrap()
        .complete()
        .unwrap();
}

#[test]
fn unloading_and_switching_return_memory() {
    let dir = tempfile::tempdir().unwrap();
    // A second model file (a copy under another name), so switching loads a different file.
    let other = dir.path().join("other.gguf");
    burrow::llm::gguf::rewrite_metadata(
        &common::smollm2(),
        &other,
        &[burrow::llm::gguf::MetaEdit::Set(
            "general.name".into(),
            burrow::llm::gguf::MetaValue::String("Other".into()),
        )],
    )
    .unwrap();
    let engine = LlamaEngine::new().unwrap();
    let opts = LoadOptions {
        context_size: Some(4096),
        ..Default::default()
    };

    // The first models ever loaded also page in llama.cpp's code (file-backed, ~5 MB) and
    // start the engine's model threads, with their allocator arenas and OpenMP workers (reused
    // for later models): costs of the process, not of a model, that no unload can or should
    // undo. Measured: they settle after two switch cycles. So two cycles first, and "before" is
    // the engine's idle state; the one-time cost is bounded separately, and later cycles must
    // not creep.
    let cold = process_rss_bytes().unwrap();
    let cycle = || {
        for path in [common::smollm2(), other.clone()] {
            let m = engine.load_blocking(&path, &opts).unwrap();
            use_model(m.as_ref());
        }
        engine.unload();
    };
    cycle();
    cycle();
    let before = process_rss_bytes().unwrap();
    assert!(
        before < cold + (32 << 20),
        "one-time engine cost is small: cold {cold}, after the first cycle {before}"
    );

    let model = engine.load_blocking(&common::smollm2(), &opts).unwrap();
    use_model(model.as_ref());
    let loaded = process_rss_bytes().unwrap();
    // The model really was resident (weights alone are ~94 MB).
    assert!(
        loaded > before + (60 << 20),
        "before {before}, loaded {loaded}"
    );

    // Switching: the new model replaces the old one; only one is resident.
    let second = engine.load_blocking(&other, &opts).unwrap();
    use_model(second.as_ref());
    let switched = process_rss_bytes().unwrap();
    assert!(
        switched < loaded + (loaded - before) / 2,
        "after switching, one model is resident: before {before}, one model {loaded}, after switch {switched}"
    );
    assert!(
        model.generate(GenerateRequest::text("x")).is_err(),
        "the old handle is dead"
    );
    drop(model);

    assert!(engine.unload());
    drop(second);
    let after = process_rss_bytes().unwrap();
    assert!(
        (after as f64) <= before as f64 * 1.10,
        "resident memory after unload ({after}) is within 10% of before load ({before}); loaded was {loaded}"
    );
    for _ in 0..3 {
        cycle();
    }
    let later = process_rss_bytes().unwrap();
    assert!(
        (later as f64) <= before as f64 * 1.10,
        "no growth over repeated switches: before {before}, after three more cycles {later}"
    );
}
