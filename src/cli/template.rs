//! `burrow template render`: a chat template rendered as Hugging Face renders it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;

use burrow::llm::template::{fixed_clock, system_clock, ChatTemplate, TemplateError};

#[derive(Subcommand)]
pub enum TemplateCommand {
    /// Render a chat template with a context (messages, tools, add_generation_prompt, bos/eos).
    Render {
        #[arg(long, value_name = "FILE")]
        template: PathBuf,
        #[arg(long, value_name = "FILE")]
        context: PathBuf,
        /// The time `strftime_now` sees (RFC 3339); default: now.
        #[arg(long, value_name = "RFC3339")]
        now: Option<String>,
        /// Print `{"ok": true, "text": ...}` or `{"ok": false, "error": ...}`.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(command: TemplateCommand) -> Result<ExitCode> {
    match command {
        TemplateCommand::Render {
            template,
            context,
            now,
            json,
        } => template_render(&template, &context, now.as_deref(), json),
    }
}

fn template_render(
    template: &Path,
    context: &Path,
    now: Option<&str>,
    json: bool,
) -> Result<ExitCode> {
    let source = std::fs::read_to_string(template)
        .with_context(|| format!("cannot read the template {}", template.display()))?;
    let ctx_text = std::fs::read_to_string(context)
        .with_context(|| format!("cannot read the context {}", context.display()))?;
    let ctx: serde_json::Value = serde_json::from_str(&ctx_text)
        .with_context(|| format!("{}: invalid JSON", context.display()))?;
    let clock = match now {
        None => system_clock(),
        Some(s) => {
            let t = chrono::DateTime::parse_from_rfc3339(s)
                .with_context(|| format!("--now {s:?} is not an RFC 3339 time"))?;
            fixed_clock(t.naive_local())
        }
    };
    let rendered = ChatTemplate::with_clock(&source, clock).and_then(|t| t.render_json(&ctx));
    if json {
        let out = match &rendered {
            Ok(text) => serde_json::json!({"ok": true, "text": text}),
            Err(e) => serde_json::json!({"ok": false, "error": e.to_string()}),
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(if rendered.is_ok() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    match rendered {
        Ok(text) => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            let what = match &e {
                TemplateError::Raised { .. } => "the template raised an error",
                _ => "the template failed",
            };
            eprintln!("error: {}: {what}: {e}", template.display());
            Ok(ExitCode::FAILURE)
        }
    }
}
