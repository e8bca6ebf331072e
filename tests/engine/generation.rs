//! Generating: determinism, usage, grammars, cancellation, stop strings, errors, and a
//! discovered model's name.

use burrow::llm::grammar::Grammar;
use burrow::llm::{
    GenerateRequest, GenerationEvent, LanguageModel, LlmError, SamplingParams, StopReason,
};

use crate::{chat, common};

#[test]
fn greedy_generation_is_deterministic() {
    let (_g, model) = common::model();
    let req = || {
        GenerateRequest::new(chat("Name three colours."))
            .sampling(SamplingParams::greedy())
            .max_tokens(24)
    };
    model.clear_cache().unwrap();
    let a = model.generate(req()).unwrap().complete().unwrap();
    model.clear_cache().unwrap();
    let b = model.generate(req()).unwrap().complete().unwrap();
    assert!(!a.text.trim().is_empty());
    assert_eq!(a.text, b.text);
    // A fixed seed makes sampled generation repeatable too; another seed gives another stream.
    let sampled = |seed| {
        model.clear_cache().unwrap();
        let s = SamplingParams {
            temperature: 1.0,
            seed: Some(seed),
            ..Default::default()
        };
        model
            .generate(
                GenerateRequest::new(chat("Tell me a story."))
                    .sampling(s)
                    .max_tokens(24),
            )
            .unwrap()
            .complete()
            .unwrap()
            .text
    };
    assert_eq!(sampled(7), sampled(7));
    assert_ne!(sampled(7), sampled(8));
}

#[test]
fn usage_reports_tokens_and_timings() {
    let (_g, model) = common::model();
    model.clear_cache().unwrap();
    let c = model
        .generate(
            GenerateRequest::new(chat("Say hello."))
                .sampling(SamplingParams::greedy())
                .max_tokens(8),
        )
        .unwrap()
        .complete()
        .unwrap();
    let u = &c.usage;
    let expected_prompt = model.prompt_tokens(&chat("Say hello.")).unwrap().len();
    assert_eq!(u.prompt_tokens, expected_prompt);
    assert_eq!(u.cached_tokens, 0);
    assert!(u.generated_tokens >= 1 && u.generated_tokens <= 8);
    assert!(u.prefill_ms > 0.0);
    assert!(u.time_to_first_token_ms >= u.prefill_ms);
    if u.generated_tokens > 1 {
        assert!(u.decode_ms > 0.0 && u.decode_tokens_per_s() > 0.0);
    }
}

#[test]
fn grammar_constrained_output_parses() {
    let (_g, model) = common::model();
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "city": {"type": "string", "maxLength": 20},
            "population": {"type": "integer"},
            "capital": {"type": "boolean"}
        },
        "required": ["city", "population", "capital"]
    });
    let c = model
        .generate(
            GenerateRequest::new(chat("Describe Paris as JSON."))
                .sampling(SamplingParams::greedy())
                .grammar(Grammar::JsonSchema(schema))
                .max_tokens(200),
        )
        .unwrap()
        .complete()
        .unwrap();
    assert_eq!(
        c.stop_reason,
        StopReason::EndOfTurn,
        "the grammar completes: {}",
        c.text
    );
    let v: serde_json::Value = serde_json::from_str(&c.text).expect("output is JSON");
    assert!(v["city"].is_string(), "{v}");
    assert!(v["city"].as_str().unwrap().chars().count() <= 20);
    assert!(v["population"].is_i64(), "{v}");
    assert!(v["capital"].is_boolean(), "{v}");

    // A GBNF grammar, with sampling: every output is one of the alternatives.
    for seed in 0..4 {
        let s = SamplingParams {
            seed: Some(seed),
            temperature: 1.5,
            ..Default::default()
        };
        let c = model
            .generate(
                GenerateRequest::new(chat("Is the sky blue?"))
                    .sampling(s)
                    .grammar(Grammar::Gbnf(
                        "root ::= (\"yes\" | \"no\" | \"maybe\") \".\"".into(),
                    ))
                    .max_tokens(10),
            )
            .unwrap()
            .complete()
            .unwrap();
        assert!(
            ["yes.", "no.", "maybe."].contains(&c.text.as_str()),
            "{:?}",
            c.text
        );
    }
}

/// Text the grammar leaves no choice in (a schema's keys, a constant it quotes) is evaluated
/// in batches, and the output is what decoding it token by token would give: the constant
/// whole, the rest free, all of it valid.
#[test]
fn text_the_grammar_forces_is_evaluated_in_batches() {
    let (_g, model) = common::model();
    let quote = "Issue #907 in bitcoin-core/gui: rpc console, filtered commands replaced";
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "lead": {"const": quote},
            "verdict": {"enum": ["yes", "no"]},
            "note": {"type": "string", "maxLength": 30}
        },
        "required": ["lead", "verdict", "note"]
    });
    let c = model
        .generate(
            GenerateRequest::new(chat("Describe issue 907 as JSON."))
                .sampling(SamplingParams::greedy())
                .grammar(Grammar::JsonSchema(schema))
                .max_tokens(120),
        )
        .unwrap()
        .complete()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&c.text).expect("output is JSON");
    assert_eq!(v["lead"], quote, "{}", c.text);
    assert!(v["note"].is_string(), "{}", c.text);
    let forced = c.usage.forced_tokens;
    assert!(
        forced >= 10 && forced < c.usage.generated_tokens,
        "{forced} of {} tokens forced: {}",
        c.usage.generated_tokens,
        c.text
    );

    // Free text has nothing forced.
    let free = model
        .generate(
            GenerateRequest::new(chat("Describe Paris."))
                .sampling(SamplingParams::greedy())
                .max_tokens(20),
        )
        .unwrap()
        .complete()
        .unwrap();
    assert_eq!(free.usage.forced_tokens, 0);
}

#[test]
fn cancellation_stops_within_a_token() {
    let (_g, model) = common::model();
    let mut generation = model
        .generate(
            GenerateRequest::new(chat("Write a very long essay about rivers."))
                .sampling(SamplingParams::greedy())
                .max_tokens(100_000)
                .ignore_eos(true),
        )
        .unwrap();
    let mut tokens_seen = 0;
    let mut cancelled = false;
    let mut usage = None;
    let mut reason = None;
    while let Some(ev) = generation.blocking_next() {
        match ev {
            GenerationEvent::Token(_) => {
                tokens_seen += 1;
                if tokens_seen == 5 {
                    generation.cancel();
                    cancelled = true;
                }
            }
            GenerationEvent::Usage(u) => usage = Some(u),
            GenerationEvent::Done(r) => {
                reason = Some(r);
                break;
            }
            GenerationEvent::Error(e) => panic!("{e}"),
        }
    }
    assert!(cancelled);
    assert_eq!(reason, Some(StopReason::Cancelled));
    // Tokens already in flight when cancel() was called: at most the one being decoded.
    let generated = usage.unwrap().generated_tokens;
    assert!(
        generated <= tokens_seen + 1,
        "{generated} generated after cancelling at {tokens_seen}"
    );

    // Dropping a generation cancels it too, and the model serves the next request.
    let g = model
        .generate(
            GenerateRequest::new(chat("Count to a thousand."))
                .max_tokens(100_000)
                .ignore_eos(true),
        )
        .unwrap();
    drop(g);
    let c = model
        .generate(
            GenerateRequest::new(chat("Hi"))
                .sampling(SamplingParams::greedy())
                .max_tokens(4),
        )
        .unwrap()
        .complete()
        .unwrap();
    assert!(c.usage.generated_tokens >= 1);
}

#[test]
fn stop_strings_and_max_tokens() {
    let (_g, model) = common::model();
    let base = || {
        GenerateRequest::new(chat("List the numbers from 1 to 20, comma separated."))
            .sampling(SamplingParams::greedy())
    };
    let full = model
        .generate(base().max_tokens(60))
        .unwrap()
        .complete()
        .unwrap();
    assert!(full.text.contains('5'), "{}", full.text);
    let stopped = model
        .generate(base().max_tokens(60).stop(["5"]))
        .unwrap()
        .complete()
        .unwrap();
    assert_eq!(stopped.stop_reason, StopReason::StopString);
    assert!(!stopped.text.contains('5'));
    assert!(full.text.starts_with(&stopped.text));
    let limited = model
        .generate(base().max_tokens(3))
        .unwrap()
        .complete()
        .unwrap();
    assert_eq!(limited.stop_reason, StopReason::MaxTokens);
    assert_eq!(limited.usage.generated_tokens, 3);
}

#[test]
fn requests_with_errors_leave_the_model_usable() {
    let (_g, model) = common::model();
    let err = model
        .generate(GenerateRequest::new(chat("x")).grammar(Grammar::Gbnf("root ::= (".into())))
        .unwrap_err();
    assert!(matches!(err, LlmError::Grammar(_)), "{err}");
    let bad = SamplingParams {
        top_p: 0.0,
        ..Default::default()
    };
    let err = model
        .generate(GenerateRequest::new(chat("x")).sampling(bad))
        .unwrap_err();
    assert!(err.to_string().contains("top_p"), "{err}");
    assert!(matches!(
        model.generate(GenerateRequest::text("")).unwrap_err(),
        LlmError::EmptyPrompt
    ));
    let c = model
        .generate(
            GenerateRequest::new(chat("Hi"))
                .sampling(SamplingParams::greedy())
                .max_tokens(4),
        )
        .unwrap()
        .complete()
        .unwrap();
    assert!(c.usage.generated_tokens >= 1);
}

/// A model found in a Hugging Face cache keeps the name the Models list shows once it is loaded:
/// in its status and in the runs it records, which History shows (issue 5: the two screens named
/// one model two ways).
#[test]
fn a_discovered_model_keeps_its_listed_name_when_loaded() {
    use burrow::llm::library::{discover, ModelSource, SearchRoot};
    use burrow::llm::{LlamaEngine, LoadOptions};
    let _g = common::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let hub = dir.path().join("hub");
    let snapshot = hub.join("models--HuggingFaceTB--SmolLM2-135M-Instruct-GGUF/snapshots/0a1b2c");
    std::fs::create_dir_all(&snapshot).unwrap();
    let file = snapshot.join("smollm2-135m-instruct-q4_1.gguf");
    if std::fs::hard_link(common::smollm2(), &file).is_err() {
        std::fs::copy(common::smollm2(), &file).unwrap();
    }
    let found = discover(&[SearchRoot {
        path: hub,
        source: ModelSource::HuggingFace,
    }]);
    assert_eq!(found.models.len(), 1, "{found:?}");
    let listed = found.models[0].clone();
    assert!(
        listed
            .name
            .starts_with("HuggingFaceTB/SmolLM2-135M-Instruct-GGUF"),
        "{}",
        listed.name
    );
    let engine = LlamaEngine::new().unwrap();
    let options = LoadOptions {
        context_size: Some(512),
        ..Default::default()
    };
    let model = engine
        .load_info(listed.clone(), &options)
        .unwrap()
        .wait(|_| {})
        .unwrap();
    assert_eq!(model.info().name, listed.name);
    assert_eq!(model.descriptor().name, listed.name);
    assert_eq!(model.info().path, file);
}

/// Issue 20: the KV cache's type is a load option. A quantized cache (llama.cpp needs flash
/// attention for it, which the engine turns on) loads, generates, and is estimated at its size.
#[test]
fn a_quantized_kv_cache_loads_and_generates() {
    use burrow::llm::llama::KvCacheType;
    use burrow::llm::{LlamaEngine, LoadOptions};
    let _g = common::exclusive();
    let engine = LlamaEngine::new().unwrap();
    let mut kv_bytes = Vec::new();
    for kv in KvCacheType::ALL {
        let options = LoadOptions {
            context_size: Some(1024),
            kv_cache: Some(kv),
            ..Default::default()
        };
        let model = engine.load_blocking(&common::smollm2(), &options).unwrap();
        assert_eq!(model.options().kv_cache, kv);
        kv_bytes.push(model.memory_estimate().kv_cache);
        let c = model
            .generate(
                GenerateRequest::new(chat("Name three colours."))
                    .sampling(SamplingParams::greedy())
                    .max_tokens(16)
                    .ignore_eos(true),
            )
            .unwrap()
            .complete()
            .unwrap();
        assert_eq!(c.usage.generated_tokens, 16, "{kv:?}: {:?}", c.text);
        assert!(!c.text.trim().is_empty(), "{kv:?}");
        engine.unload();
    }
    // f16, then q8_0 (34 bytes per 32 values), then q4_0 (18 per 32).
    assert_eq!(kv_bytes[1] * 64, kv_bytes[0] * 34, "{kv_bytes:?}");
    assert_eq!(kv_bytes[2] * 64, kv_bytes[0] * 18, "{kv_bytes:?}");
    assert!(KvCacheType::parse("q5_1")
        .unwrap_err()
        .to_string()
        .contains("q5_1"));
}
