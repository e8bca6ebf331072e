//! The KV cache: reuse across prompts that extend each other, padding a short step deep in
//! the cache, and a reply replayed in the next prompt.

use burrow::llm::grammar::Grammar;
use burrow::llm::{ChatMessage, GenerateRequest, LanguageModel, Prompt, SamplingParams, WarmStart};

use crate::common;

/// The ReAct loop resends its whole history each step; only the new suffix may be evaluated,
/// and the answer must be what evaluating everything would give. (The history here is prompt
/// text, evaluated in batches either way: llama.cpp's arithmetic for a token decoded alone
/// differs in the last bits from the same token inside a batch, which can flip a greedy choice;
/// see llama.cpp's server docs on `cache_prompt`.)
#[test]
fn kv_reuse_gives_the_same_output_as_full_reevaluation() {
    let (_g, model) = common::model();
    let greedy = SamplingParams::greedy();
    let history = vec![
        ChatMessage::system("You are a helpful assistant."),
        ChatMessage::user("What is a compiler?"),
    ];
    let with = |extra: &[ChatMessage]| {
        let mut m = history.clone();
        m.extend_from_slice(extra);
        m
    };
    let step2 = with(&[
        ChatMessage::assistant("A compiler translates source code into machine code."),
        ChatMessage::user("And what is an interpreter?"),
    ]);
    let step2_other = with(&[
        ChatMessage::assistant("A compiler is a program."),
        ChatMessage::user("Name one compiler."),
    ]);
    let run = |messages: &[ChatMessage]| {
        model
            .generate(
                GenerateRequest::new(Prompt::chat(messages.to_vec()))
                    .sampling(greedy.clone())
                    .max_tokens(40),
            )
            .unwrap()
            .complete()
            .unwrap()
    };
    let history_len = model
        .prompt_tokens(&Prompt::chat(history.clone()))
        .unwrap()
        .len();

    // Step 1 leaves the history in the cache; step 2 evaluates only what follows it.
    model.clear_cache().unwrap();
    model
        .generate(
            GenerateRequest::new(Prompt::chat(history.clone()))
                .sampling(greedy.clone())
                .max_tokens(1),
        )
        .unwrap()
        .complete()
        .unwrap();
    let reused = run(&step2);
    assert_eq!(
        reused.usage.cached_tokens, history_len,
        "{:?}",
        reused.usage
    );
    model.clear_cache().unwrap();
    let full = run(&step2);
    assert_eq!(full.usage.cached_tokens, 0);
    assert_eq!(reused.usage.prompt_tokens, full.usage.prompt_tokens);
    assert!(!full.text.is_empty());
    assert_eq!(reused.text, full.text);

    // The cache now holds step 2 and its answer. A request that shares only the history must
    // drop the rest of the cache, not attend to it.
    let step2_len = model
        .prompt_tokens(&Prompt::chat(step2.clone()))
        .unwrap()
        .len();
    let diverged = run(&step2_other);
    let shared = diverged.usage.cached_tokens;
    assert!(
        shared >= history_len && shared < step2_len,
        "{:?}",
        diverged.usage
    );
    model.clear_cache().unwrap();
    model
        .generate(
            GenerateRequest::new(Prompt::chat(history.clone()))
                .sampling(greedy.clone())
                .max_tokens(1),
        )
        .unwrap()
        .complete()
        .unwrap();
    let expected = run(&step2_other);
    assert_eq!(diverged.text, expected.text);

    // Resending the exact same prompt reuses all but its last token.
    let again = run(&step2_other);
    assert_eq!(again.usage.cached_tokens, again.usage.prompt_tokens - 1);
}

/// Issue 4: a short follow-up deep in the cache (an agent step: ~50 new tokens behind 1.5k) is
/// padded to a full 64-row batch by re-evaluating a few cached tokens, because llama.cpp's CPU
/// attention is much faster from 64 rows on (`burrow bench --tests depth`). The padding must not
/// change what the model says.
#[test]
fn a_short_step_deep_in_the_cache_is_padded_without_changing_the_output() {
    let (_g, model) = common::model();
    let greedy = SamplingParams::greedy();
    let sentence = "The indexer walks the repository, skips ignored paths, splits each file into \
        chunks and stores them with their line numbers in a full-text index. ";
    let history = vec![
        ChatMessage::system("You are a helpful assistant."),
        ChatMessage::user(format!("Notes about the project: {}", sentence.repeat(50))),
        ChatMessage::assistant("I have read the notes."),
    ];
    let mut followup = history.clone();
    followup.push(ChatMessage::user(
        "Answer in two short sentences, please: which paths does the indexer skip, what does it \
         split each file into, and where does it store the chunks together with their line \
         numbers?",
    ));
    let run = |pad: bool| {
        model.set_prefill_padding(pad);
        model.clear_cache().unwrap();
        let prime = model
            .generate(
                GenerateRequest::new(Prompt::chat(history.clone()))
                    .sampling(greedy.clone())
                    .max_tokens(1),
            )
            .unwrap()
            .complete();
        let step = model
            .generate(
                GenerateRequest::new(Prompt::chat(followup.clone()))
                    .sampling(greedy.clone())
                    .max_tokens(24),
            )
            .unwrap()
            .complete();
        model.set_prefill_padding(true);
        prime.unwrap();
        step.unwrap()
    };
    let plain = run(false);
    let new = plain.usage.prompt_tokens - plain.usage.cached_tokens;
    assert!(
        plain.usage.cached_tokens > 1000 && (40..64).contains(&new),
        "the fixture must be a short step deep in the cache: {:?}",
        plain.usage
    );
    let padded = run(true);
    assert_eq!(padded.usage.prompt_tokens, plain.usage.prompt_tokens);
    assert_eq!(
        padded.usage.prompt_tokens - padded.usage.cached_tokens,
        64,
        "{:?}",
        padded.usage
    );
    assert!(!plain.text.trim().is_empty());
    assert_eq!(padded.text, plain.text);
}

/// Issue 4: an agent replays each reply in the next prompt. The reply's tokens are already in
/// the cache as the model sampled them, and tokenizing its text anew can split it otherwise
/// (under a grammar it often does: `{"` sampled where the tokenizer gives `{` and `"`): the
/// engine keeps the sampled tokens, so the next prompt evaluates only what follows.
#[test]
fn a_reply_replayed_in_the_next_prompt_stays_in_the_cache() {
    let (_g, model) = common::model();
    let greedy = SamplingParams::greedy();
    let history = vec![
        ChatMessage::system("You are a helpful assistant."),
        ChatMessage::user("Write a JSON object describing a cat, with name, age and color."),
    ];
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 20},
            "age": {"type": "integer"},
            "color": {"type": "string", "maxLength": 20},
        },
        "required": ["name", "age", "color"],
    });
    model.clear_cache().unwrap();
    let first = model
        .generate(
            GenerateRequest::new(Prompt::chat(history.clone()))
                .sampling(greedy.clone())
                .grammar(Grammar::JsonSchema(schema))
                .max_tokens(64),
        )
        .unwrap()
        .complete()
        .unwrap();
    assert!(first.usage.generated_tokens > 10, "{first:?}");
    let mut next = history.clone();
    next.push(ChatMessage::assistant(first.text.clone()));
    next.push(ChatMessage::user("Now one for a dog."));
    let second = model
        .generate(
            GenerateRequest::new(Prompt::chat(next.clone()))
                .sampling(greedy.clone())
                .max_tokens(4),
        )
        .unwrap()
        .complete()
        .unwrap();
    // Every reply token that was decoded is reused: all but the last, which ended the reply
    // (completing the grammar) and was never evaluated.
    assert!(
        second.usage.cached_tokens >= first.usage.prompt_tokens + first.usage.generated_tokens - 1,
        "{:?} then {:?}",
        first.usage,
        second.usage
    );
    // After the cache is cleared, the same prompt is tokenized from its text and evaluated
    // whole.
    model.clear_cache().unwrap();
    let fresh = model
        .generate(
            GenerateRequest::new(Prompt::chat(next))
                .sampling(greedy)
                .max_tokens(4),
        )
        .unwrap()
        .complete()
        .unwrap();
    assert_eq!(fresh.usage.cached_tokens, 0);
}

/// Issue 22: a new process's first step evaluates only what follows the system prompt. The
/// first load evaluates the prefix and leaves its state on disk; a second load of the model (a
/// new process, as `burrow ask` is) reads it, and its first request finds the prefix cached and
/// answers as a cold request does. A state file that does not load is replaced, not trusted.
#[test]
fn a_new_load_starts_warm_from_the_state_left_on_disk() {
    let _g = common::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let states = dir.path().join("kv");
    let engine = burrow::llm::LlamaEngine::new().unwrap();
    let load = || {
        engine
            .load_blocking(
                &common::smollm2(),
                &burrow::llm::LoadOptions {
                    context_size: Some(1024),
                    ..Default::default()
                },
            )
            .unwrap()
    };
    let system = ChatMessage::system(
        "You are Burrow, an agent over the user's repositories. Answer in one short sentence.",
    );
    let prefix = Prompt::chat(vec![system.clone()]);
    let task = Prompt::chat(vec![system, ChatMessage::user("What is a compiler?")]);
    let ask = |model: &burrow::llm::LoadedModel| {
        model
            .generate(
                GenerateRequest::new(task.clone())
                    .sampling(SamplingParams::greedy())
                    .max_tokens(12),
            )
            .unwrap()
            .complete()
            .unwrap()
    };

    let first = load();
    let cold = ask(&first);
    assert_eq!(cold.usage.cached_tokens, 0);
    first.clear_cache().unwrap();
    let saved = first.warm_start(prefix.clone(), &states).unwrap();
    let WarmStart::Saved { tokens, .. } = saved else {
        panic!("{saved:?}")
    };
    // Warm again in the same process: the cache already holds it.
    assert_eq!(
        first.warm_start(prefix.clone(), &states).unwrap(),
        WarmStart::InMemory { tokens }
    );
    let warm_here = ask(&first);
    first.shutdown();
    let files: Vec<_> = std::fs::read_dir(&states).unwrap().collect();
    assert_eq!(files.len(), 1, "one state file, no temporary one left");

    let second = load();
    assert_eq!(second.cached_tokens().unwrap(), 0);
    let loaded = second.warm_start(prefix.clone(), &states).unwrap();
    assert!(
        matches!(loaded, WarmStart::Loaded { tokens: t, .. } if t == tokens),
        "{loaded:?}"
    );
    let warm = ask(&second);
    // The prefix's tokens, up to where the task's turn starts (the prefix alone ends with the
    // assistant's header, the task's prompt with the user's).
    assert!(
        warm.usage.cached_tokens + 4 >= tokens && warm.usage.cached_tokens < tokens,
        "{} cached of a {tokens}-token prefix",
        warm.usage.cached_tokens
    );
    // As the process that evaluated the prefix answers (the same batches; a cold request
    // evaluates in other batches, whose arithmetic may differ in the last bits).
    assert_eq!(
        warm.text, warm_here.text,
        "the state read back is the state written"
    );
    assert_eq!(warm.usage.cached_tokens, warm_here.usage.cached_tokens);
    assert!(!cold.text.is_empty());
    second.shutdown();

    // A file that is not a state: evaluated again and written anew.
    let file = std::fs::read_dir(&states)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(&file, b"not a llama.cpp state").unwrap();
    let third = load();
    let again = third.warm_start(prefix, &states).unwrap();
    assert!(matches!(again, WarmStart::Saved { .. }), "{again:?}");
    assert!(std::fs::metadata(&file).unwrap().len() > 1000);
    third.shutdown();
}

/// A prompt that extends the last one mid-word (an editor asking between keystrokes) is
/// tokenized as it would be alone, and answers as it does alone: the cached tokens of the old
/// prompt were kept and only its extension tokenized, so " Fr" + "ance" stood where " France"
/// does, and the same greedy request answered otherwise (found in review). The tokens it shares
/// with the cache are still not evaluated again.
#[test]
fn a_prompt_extending_the_last_one_mid_word_is_tokenized_as_alone() {
    let (_g, model) = common::model();
    let run = |p: &str, n: usize| {
        model
            .generate(
                GenerateRequest::text(p)
                    .sampling(SamplingParams::greedy())
                    .max_tokens(n),
            )
            .unwrap()
            .complete()
            .unwrap()
    };
    let full = "The capital of France is";
    model.clear_cache().unwrap();
    let alone = run(full, 12);
    let alone_tokens = model
        .prompt_tokens(&Prompt::Text(full.into()))
        .unwrap()
        .len();
    assert_eq!(alone.usage.prompt_tokens, alone_tokens);
    model.clear_cache().unwrap();
    run("The capital of Fr", 1);
    let after = run(full, 12);
    assert_eq!(
        (after.usage.prompt_tokens, after.text.as_str()),
        (alone_tokens, alone.text.as_str())
    );
    assert!(after.usage.cached_tokens >= 3, "{:?}", after.usage);
}
