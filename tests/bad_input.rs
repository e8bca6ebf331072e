//! Bad input: each bad input gives a clear error naming the file or value and what
//! is wrong, the process keeps running, and a loaded model stays usable.

mod common;

use std::path::Path;

use burrow::llm::gguf::{rewrite_metadata, GgufWriter, MetaEdit, MetaValue};
use burrow::llm::grammar::Grammar;
use burrow::llm::{
    ChatMessage, GenerateRequest, LanguageModel, LlamaEngine, LlmError, LoadOptions, LoadState,
    Prompt, SamplingParams,
};

/// The resident model still answers.
fn assert_usable(model: &dyn LanguageModel) {
    let c = model
        .generate(
            GenerateRequest::new(Prompt::chat(vec![ChatMessage::user("Hi")]))
                .sampling(SamplingParams::greedy())
                .max_tokens(3),
        )
        .expect("the loaded model accepts requests")
        .complete()
        .expect("the loaded model generates");
    assert!(c.usage.generated_tokens >= 1);
}

fn load_err(engine: &LlamaEngine, path: &Path, opts: &LoadOptions) -> LlmError {
    match engine.load(path, opts) {
        Err(e) => e,
        Ok(handle) => handle.wait(|_| {}).expect_err("load must fail"),
    }
}

/// One engine with SmolLM2 resident, and every bad load attempted next to it.
#[test]
fn bad_models_are_refused_and_the_resident_model_survives() {
    let _g = common::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let engine = LlamaEngine::new().unwrap();
    let good = engine
        .load_blocking(
            &common::smollm2(),
            &LoadOptions {
                context_size: Some(512),
                ..Default::default()
            },
        )
        .unwrap();
    let opts = LoadOptions::default();

    // A missing file.
    let missing = d.join("missing.gguf");
    let e = load_err(&engine, &missing, &opts).to_string();
    assert!(
        e.contains("missing.gguf") && e.contains("cannot read"),
        "{e}"
    );

    // A directory.
    let e = load_err(&engine, d, &opts).to_string();
    assert!(e.contains("is a directory"), "{e}");

    // A truncated download of the real model.
    let bytes = std::fs::read(common::smollm2()).unwrap();
    let truncated = d.join("truncated.gguf");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let e = load_err(&engine, &truncated, &opts);
    assert!(matches!(e, LlmError::Gguf(_)), "{e}");
    let e = e.to_string();
    assert!(
        e.contains("truncated.gguf") && e.contains("truncated"),
        "{e}"
    );

    // Random bytes.
    let noise = d.join("noise.gguf");
    std::fs::write(
        &noise,
        (0..100_000u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let e = load_err(&engine, &noise, &opts).to_string();
    assert!(
        e.contains("noise.gguf") && e.contains("not a GGUF file"),
        "{e}"
    );

    // A real model relabelled with an architecture llama.cpp does not know.
    let alien = d.join("alien.gguf");
    rewrite_metadata(
        &common::smollm2(),
        &alien,
        &[MetaEdit::Set(
            "general.architecture".into(),
            MetaValue::String("frobnicator".into()),
        )],
    )
    .unwrap();
    let e = load_err(&engine, &alien, &opts);
    assert!(matches!(e, LlmError::UnsupportedArchitecture { .. }), "{e}");
    assert!(e.to_string().contains("frobnicator") && e.to_string().contains("alien.gguf"));

    // A model that passes our checks but that llama.cpp refuses: its reason is in the error.
    let gutted = d.join("gutted.gguf");
    rewrite_metadata(
        &common::smollm2(),
        &gutted,
        &[MetaEdit::Remove("llama.block_count".into())],
    )
    .unwrap();
    let e = load_err(&engine, &gutted, &opts);
    assert!(matches!(e, LlmError::LoadFailed { .. }), "{e}");
    let e = e.to_string();
    assert!(
        e.contains("gutted.gguf") && e.contains("block_count"),
        "{e}"
    );
    assert!(matches!(engine.state(), LoadState::Failed { .. }));

    // A model larger than the memory there is (estimated before loading): a sparse file whose
    // header declares twice this machine's available memory of weights.
    let avail = burrow::llm::memory::available_memory_bytes().unwrap();
    let huge = d.join("huge.gguf");
    let rows = (avail * 2 / (4096 * 2)).div_ceil(1024) * 1024;
    GgufWriter::new()
        .meta_str("general.architecture", "llama")
        .meta_u32("llama.context_length", 4096)
        .meta_u32("llama.block_count", 32)
        .meta_u32("llama.embedding_length", 4096)
        .meta_u32("llama.attention.head_count", 32)
        .tensor("token_embd.weight", &[4096, rows], 1)
        .write_to(&huge, true)
        .unwrap();
    let e = load_err(&engine, &huge, &opts);
    assert!(matches!(e, LlmError::InsufficientMemory { .. }), "{e}");
    assert!(
        e.to_string().contains("huge.gguf") && e.to_string().contains("available"),
        "{e}"
    );
    // The same check with a simulated small machine, on the real model.
    let e = engine
        .load_with_memory(&common::smollm2(), &opts, Some(10 << 20))
        .unwrap_err();
    assert!(matches!(e, LlmError::InsufficientMemory { .. }), "{e}");

    // Absurd context sizes.
    for ctx in [0, 10, 1 << 30] {
        let e = load_err(
            &engine,
            &common::smollm2(),
            &LoadOptions {
                context_size: Some(ctx),
                ..Default::default()
            },
        );
        assert!(
            matches!(e, LlmError::InvalidContextSize { .. }),
            "{ctx}: {e}"
        );
        assert!(e.to_string().contains(&ctx.to_string()), "{e}");
    }
    let e = load_err(
        &engine,
        &common::smollm2(),
        &LoadOptions {
            threads: Some(0),
            ..Default::default()
        },
    );
    assert!(e.to_string().contains("threads"), "{e}");

    // None of it touched the resident model.
    assert!(std::sync::Arc::ptr_eq(&engine.current().unwrap(), &good));
    assert_usable(good.as_ref());
}

#[test]
fn prompts_grammars_and_templates_that_cannot_work() {
    let _g = common::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let engine = LlamaEngine::new().unwrap();
    let model = engine
        .load_blocking(
            &common::smollm2(),
            &LoadOptions {
                context_size: Some(256),
                ..Default::default()
            },
        )
        .unwrap();

    // A prompt longer than the context: refused before llama.cpp sees it (it would abort).
    let long = "word ".repeat(2000);
    let e = model.generate(GenerateRequest::text(long)).unwrap_err();
    match e {
        LlmError::ContextFull { needed, available } => {
            assert_eq!(available, 256);
            assert!(needed > 256);
        }
        other => panic!("{other}"),
    }
    assert_usable(model.as_ref());

    // A prompt that fits, generating until the context is full, stops cleanly.
    let c = model
        .generate(
            GenerateRequest::text("word ".repeat(200))
                .sampling(SamplingParams::greedy())
                .ignore_eos(true),
        )
        .unwrap()
        .complete()
        .unwrap();
    assert_eq!(c.stop_reason, burrow::llm::StopReason::ContextFull);
    // Every position of the context is used; the last token comes from the last position's
    // logits and needs no slot of its own.
    assert_eq!(c.usage.prompt_tokens + c.usage.generated_tokens, 256 + 1);
    assert_usable(model.as_ref());

    // Invalid grammars: GBNF with a syntax error, an undefined rule, left recursion; a JSON
    // schema with an unknown type; a Lark grammar with an undefined rule.
    for (grammar, expect) in [
        (Grammar::Gbnf("root ::= \"a".into()), "line 1"),
        (Grammar::Gbnf("root ::= item+\n".into()), "item"),
        (
            Grammar::Gbnf("root ::= root \"a\" | \"b\"".into()),
            "left-recursive",
        ),
        (
            Grammar::JsonSchema(
                serde_json::json!({"type": "object", "properties": {"n": {"type": "integr"}}}),
            ),
            "integr",
        ),
        (Grammar::Lark("start: item+".into()), "item"),
    ] {
        let e = model
            .generate(GenerateRequest::text("hi").grammar(grammar))
            .unwrap_err();
        assert!(matches!(e, LlmError::Grammar(_)), "{e}");
        assert!(e.to_string().contains(expect), "{e}");
    }
    assert_usable(model.as_ref());

    // A model whose chat template is broken: it loads (raw prompts work), chat requests say
    // what is wrong with the template and name the file.
    let broken = dir.path().join("broken-template.gguf");
    rewrite_metadata(
        &common::smollm2(),
        &broken,
        &[MetaEdit::Set(
            "tokenizer.chat_template".into(),
            MetaValue::String("{% for m in messages %}{{ m.content".into()),
        )],
    )
    .unwrap();
    let b = engine
        .load_blocking(
            &broken,
            &LoadOptions {
                context_size: Some(256),
                ..Default::default()
            },
        )
        .unwrap();
    assert!(b.template_error().is_some());
    let e = b
        .generate(GenerateRequest::new(Prompt::chat(vec![ChatMessage::user(
            "hi",
        )])))
        .unwrap_err();
    assert!(matches!(e, LlmError::ModelTemplate { .. }), "{e}");
    assert!(e.to_string().contains("broken-template.gguf"), "{e}");
    let raw = b
        .generate(
            GenerateRequest::text("Once upon a time")
                .sampling(SamplingParams::greedy())
                .max_tokens(3),
        )
        .unwrap()
        .complete()
        .unwrap();
    assert!(raw.usage.generated_tokens >= 1);
    // A template that raises is an error too, not a crash.
    let raising = dir.path().join("raising-template.gguf");
    rewrite_metadata(
        &common::smollm2(),
        &raising,
        &[MetaEdit::Set(
            "tokenizer.chat_template".into(),
            MetaValue::String("{{ raise_exception('no chat here') }}".into()),
        )],
    )
    .unwrap();
    let r = engine
        .load_blocking(
            &raising,
            &LoadOptions {
                context_size: Some(256),
                ..Default::default()
            },
        )
        .unwrap();
    let e = r
        .generate(GenerateRequest::new(Prompt::chat(vec![ChatMessage::user(
            "hi",
        )])))
        .unwrap_err();
    assert!(e.to_string().contains("no chat here"), "{e}");
    let raw = r
        .generate(
            GenerateRequest::text("Hello")
                .sampling(SamplingParams::greedy())
                .max_tokens(2),
        )
        .unwrap()
        .complete()
        .unwrap();
    assert!(raw.usage.generated_tokens >= 1);
}

#[test]
fn loading_can_be_cancelled_and_reports_progress() {
    let _g = common::exclusive();
    let engine = LlamaEngine::new().unwrap();
    let handle = engine
        .load(&common::smollm2(), &LoadOptions::default())
        .unwrap();
    handle.cancel();
    let e = handle.wait(|_| {}).unwrap_err();
    assert!(matches!(e, LlmError::LoadCancelled { .. }), "{e}");
    assert!(engine.current().is_none());

    let mut progress = Vec::new();
    let model = engine
        .load(
            &common::smollm2(),
            &LoadOptions {
                context_size: Some(512),
                ..Default::default()
            },
        )
        .unwrap()
        .wait(|p| progress.push(p))
        .unwrap();
    assert!(!progress.is_empty());
    assert!(progress.windows(2).all(|w| w[0] <= w[1]), "{progress:?}");
    assert_eq!(progress.last().copied(), Some(1.0));
    assert!(matches!(engine.state(), LoadState::Loaded { .. }));
    assert_usable(model.as_ref());
    assert!(engine.unload());
    assert_eq!(engine.state(), LoadState::Unloaded);
    let e = model.generate(GenerateRequest::text("hi")).unwrap_err();
    assert!(matches!(e, LlmError::ModelUnloaded), "{e}");
}

/// Issue 17, defect 4: a GGUF whose chat template loops ten billion times hung `chat` (over
/// 40 s, for ever in fact). The run now stops at the template's step limit, with an error that
/// names the model.
#[test]
fn a_model_whose_chat_template_never_ends_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let evil = dir.path().join("endless-template.gguf");
    rewrite_metadata(
        &common::smollm2(),
        &evil,
        &[MetaEdit::Set(
            "tokenizer.chat_template".into(),
            MetaValue::String(
                "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
                    .into(),
            ),
        )],
    )
    .unwrap();
    let out = common::output_within(
        std::process::Command::new(env!("CARGO_BIN_EXE_burrow"))
            .args([
                "chat",
                "--model",
                evil.to_str().unwrap(),
                "--max-tokens",
                "4",
                "hi",
            ])
            .env("BURROW_HOME", dir.path().join("home")),
        std::time::Duration::from_secs(60),
        "chat on an endless template",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("endless-template") && stderr.contains("limits"),
        "{stderr}"
    );
}

/// Issue 17, defect 4: a chat template that builds gigabytes in a few hundred steps (a string
/// doubled by a macro, by `format`, a list printed as JSON with one string repeated by
/// reference) aborted Burrow ("memory allocation of 536870912 bytes failed") under a 1 GiB
/// address-space limit, past the first fix, which only read the source for `s ~ s`. Each now
/// stops at the rendering's memory budget with a clear error, within that limit; so do wide
/// indents and separators, which built their strings before the budget was charged.
#[test]
fn templates_that_build_gigabytes_stop_within_a_gibibyte() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let context = dir.path().join("context.json");
    std::fs::write(&context, r#"{"messages": []}"#).unwrap();
    let hogs = [
        "{% macro d(x) %}{{ x }}{{ x }}{% endmacro %}{% set ns = namespace(s='x') %}\
         {% for i in range(40) %}{% set ns.s = d(ns.s) %}{% endfor %}",
        "{% set ns = namespace(s='x') %}{% for i in range(40) %}\
         {% set ns.s = '%s%s'|format(ns.s, ns.s) %}{% endfor %}",
        "{% set s = 'x' * 10000000 %}{{ ([s] * 1000)|tojson }}",
        // Widths and separators that multiply: each aborted the process on its allocation
        // before the budget saw it (found in review).
        "{{ 'a\nb'|indent(1000000000000) }}",
        "{{ {'a': 1}|tojson(indent=1000000000000) }}",
        "{{ ([[[1]]] * 100000)|tojson(indent=10000) }}",
        "{% set s = 'x' * 10000000 %}{{ ([1] * 1000)|tojson(separators=(s, ':')) }}",
    ];
    for (i, hog) in hogs.iter().enumerate() {
        let template = dir.path().join(format!("hog{i}.jinja"));
        std::fs::write(&template, hog).unwrap();
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_burrow"));
        cmd.args(["template", "render", "--template"])
            .arg(&template)
            .arg("--context")
            .arg(&context)
            .env("BURROW_HOME", dir.path().join("home"));
        // SAFETY: setrlimit is async-signal-safe and touches nothing of the parent.
        unsafe {
            cmd.pre_exec(|| {
                let limit = libc::rlimit {
                    rlim_cur: 1 << 30,
                    rlim_max: 1 << 30,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = common::output_within(
            &mut cmd,
            std::time::Duration::from_secs(60),
            "rendering a template that builds gigabytes",
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{hog}: {stderr}");
        assert!(
            stderr.contains(&format!("hog{i}.jinja")) && stderr.contains("MiB of strings"),
            "{hog}: {stderr}"
        );
    }
}
