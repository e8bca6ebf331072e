//! `burrow chat`: one reply, or an interactive conversation, streamed with a usage line.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Args;

use super::models::{load_model, ModelArgs};
use burrow::config::BurrowHome;
use burrow::llm::{ChatMessage, GenerateRequest, Grammar, Prompt, SamplingParams};

#[derive(Args)]
pub struct ChatArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// A system message.
    #[arg(long, short)]
    system: Option<String>,
    /// At most this many tokens per reply.
    #[arg(long, value_name = "N")]
    max_tokens: Option<usize>,
    /// Constrain the reply with a grammar file: GBNF (llama.cpp's format), or Lark
    /// (llguidance's dialect) when the file name ends in `.lark`.
    #[arg(long, value_name = "FILE", conflicts_with = "json_schema")]
    grammar: Option<PathBuf>,
    /// Constrain the reply to JSON matching this JSON Schema file.
    #[arg(long, value_name = "FILE")]
    json_schema: Option<PathBuf>,
    /// Sampling temperature (0 = greedy).
    #[arg(long)]
    temperature: Option<f32>,
    #[arg(long)]
    top_k: Option<i32>,
    #[arg(long)]
    top_p: Option<f32>,
    #[arg(long)]
    min_p: Option<f32>,
    #[arg(long)]
    repeat_penalty: Option<f32>,
    #[arg(long)]
    seed: Option<u32>,
    /// Stop before this string (repeatable).
    #[arg(long = "stop", value_name = "TEXT")]
    stop: Vec<String>,
    /// Print one JSON object (text, usage, stop reason) instead of streaming.
    #[arg(long)]
    json: bool,
    /// The prompt; without it, an interactive chat reads from standard input.
    prompt: Option<String>,
}

pub fn chat(home: &BurrowHome, args: ChatArgs) -> Result<ExitCode> {
    // A conversation read from standard input streams its replies as text: --json, which was
    // accepted and ignored there, is for one prompt.
    if args.json && args.prompt.is_none() {
        bail!("--json is for one prompt given as an argument (burrow chat --json \"…\"), not a conversation read from standard input");
    }
    let grammar = match (&args.grammar, &args.json_schema) {
        (Some(g), _) => {
            let text = std::fs::read_to_string(g)
                .with_context(|| format!("cannot read the grammar {}", g.display()))?;
            Some(if g.extension().is_some_and(|e| e == "lark") {
                Grammar::Lark(text)
            } else {
                Grammar::Gbnf(text)
            })
        }
        (_, Some(s)) => {
            let text = std::fs::read_to_string(s)
                .with_context(|| format!("cannot read the JSON schema {}", s.display()))?;
            Some(Grammar::JsonSchema(
                serde_json::from_str(&text)
                    .with_context(|| format!("{}: invalid JSON", s.display()))?,
            ))
        }
        _ => None,
    };
    // Check the grammar before spending time on loading the model.
    if let Some(g) = &grammar {
        g.validate()
            .context(match (&args.grammar, &args.json_schema) {
                (Some(p), _) | (_, Some(p)) => p.display().to_string(),
                _ => String::new(),
            })?;
    }
    let mut sampling = SamplingParams::default();
    if let Some(t) = args.temperature {
        sampling.temperature = t;
    }
    if let Some(k) = args.top_k {
        sampling.top_k = k;
    }
    if let Some(p) = args.top_p {
        sampling.top_p = p;
    }
    if let Some(p) = args.min_p {
        sampling.min_p = p;
    }
    if let Some(r) = args.repeat_penalty {
        sampling.repeat_penalty = r;
    }
    sampling.seed = args.seed;
    sampling.validate()?;
    let loaded = load_model(home, &args.model)?;
    let model = loaded.model.clone();
    let mut messages = Vec::new();
    if let Some(s) = &args.system {
        messages.push(ChatMessage::system(s.clone()));
    }
    let make_request = |messages: &[ChatMessage]| {
        let mut req = GenerateRequest::new(Prompt::chat(messages.to_vec()))
            .sampling(sampling.clone())
            .stop(args.stop.clone());
        if let Some(g) = &grammar {
            req = req.grammar(g.clone());
        }
        if let Some(n) = args.max_tokens {
            req = req.max_tokens(n);
        }
        req
    };
    if let Some(prompt) = &args.prompt {
        messages.push(ChatMessage::user(prompt.clone()));
        let generation = model.generate(make_request(&messages))?;
        if args.json {
            let c = generation.complete()?;
            let out = serde_json::json!({
                "model": model.descriptor().name,
                "text": c.text,
                "stop_reason": c.stop_reason,
                "usage": c.usage,
                "prefill_tokens_per_s": c.usage.prefill_tokens_per_s(),
                "decode_tokens_per_s": c.usage.decode_tokens_per_s(),
            });
            println!("{}", serde_json::to_string_pretty(&out)?);
        } else {
            stream_reply(generation)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    // Interactive: each turn resends the conversation; the engine reuses the cached prefix.
    let interactive = std::io::stdin().is_terminal();
    // Ctrl-C stops the reply being written; at the prompt it quits.
    let replying: Arc<std::sync::Mutex<Option<burrow::llm::CancelToken>>> = Arc::default();
    if interactive {
        let replying = replying.clone();
        ctrlc::set_handler(move || match replying.lock().ok().and_then(|r| r.clone()) {
            Some(token) => token.cancel(),
            None => std::process::exit(130),
        })
        .context("cannot install the Ctrl-C handler")?;
        eprintln!(
            "Chatting with {} (context {} tokens). /reset starts over, Ctrl-C stops a reply, /exit or Ctrl-D quits.",
            model.descriptor().name,
            model.descriptor().context_length
        );
    }
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    loop {
        if interactive {
            eprint!("> ");
            std::io::stderr().flush()?;
        }
        let Some(line) = lines.next() else { break };
        let line = line?;
        let line = line.trim();
        match line {
            "" => continue,
            "/exit" | "/quit" => break,
            "/reset" => {
                messages.retain(|m| m.role == "system");
                eprintln!("(conversation cleared)");
                continue;
            }
            _ => {}
        }
        messages.push(ChatMessage::user(line.to_string()));
        let generation = match model.generate(make_request(&messages)) {
            Ok(g) => g,
            Err(e) => {
                // A turn that cannot run (the conversation outgrew the context) is reported; the
                // session goes on.
                eprintln!("error: {e}");
                messages.pop();
                continue;
            }
        };
        if let Ok(mut r) = replying.lock() {
            *r = Some(generation.cancel_token());
        }
        let reply = stream_reply(generation);
        if let Ok(mut r) = replying.lock() {
            *r = None;
        }
        match reply {
            Ok(text) => messages.push(ChatMessage::assistant(text)),
            Err(e) => {
                eprintln!("error: {}", super::report(&e));
                messages.pop();
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints tokens as they arrive, then a usage line on stderr. Returns the reply.
fn stream_reply(generation: burrow::llm::Generation) -> Result<String> {
    let mut out = std::io::stdout();
    let completion = generation.wait(|t| {
        let _ = out.write_all(super::term(t).as_bytes());
        let _ = out.flush();
    })?;
    println!();
    let u = &completion.usage;
    eprintln!(
        "[{} prompt tokens ({} cached) in {:.0} ms, {:.1} tok/s | {} generated, {:.1} tok/s | first token {:.0} ms | stop: {:?}]",
        u.prompt_tokens,
        u.cached_tokens,
        u.prefill_ms,
        u.prefill_tokens_per_s(),
        u.generated_tokens,
        u.decode_tokens_per_s(),
        u.time_to_first_token_ms,
        completion.stop_reason
    );
    Ok(completion.text)
}
