//! Hooks: code called around every model call and tool call, on every step and on the final
//! answer. A hook can let a tool call through, deny it (its message becomes the observation),
//! rewrite its arguments, or stop the run.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use super::protocol::Action;
use super::record::StepRecord;

/// Where in a run a hook is called.
#[derive(Debug, Clone, Copy)]
pub struct HookContext<'a> {
    pub run_id: Option<i64>,
    /// The index of the step under way.
    pub step: usize,
    pub task: &'a str,
}

#[derive(Debug, Clone, PartialEq)]
pub enum HookVerdict {
    Continue,
    /// End the run (as cancelled), saying why.
    Stop(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum ToolVerdict {
    Allow,
    /// Do not run the call; the model reads this message as the observation.
    Deny(String),
    /// Run the call with these arguments instead.
    Rewrite(Map<String, Value>),
    Stop(String),
}

pub trait Hook: Send + Sync {
    fn before_model(&self, _ctx: &HookContext<'_>) -> HookVerdict {
        HookVerdict::Continue
    }
    fn after_model(&self, _ctx: &HookContext<'_>, _output: &str) -> HookVerdict {
        HookVerdict::Continue
    }
    fn before_tool(&self, _ctx: &HookContext<'_>, _action: &Action) -> ToolVerdict {
        ToolVerdict::Allow
    }
    fn after_tool(
        &self,
        _ctx: &HookContext<'_>,
        _action: &Action,
        _observation: &str,
    ) -> HookVerdict {
        HookVerdict::Continue
    }
    fn on_step(&self, _ctx: &HookContext<'_>, _step: &StepRecord) -> HookVerdict {
        HookVerdict::Continue
    }
    fn on_final(&self, _ctx: &HookContext<'_>, _answer: &str) -> HookVerdict {
        HookVerdict::Continue
    }
}

/// A run's hooks, asked in the order they were added. The loop asks them through here, so
/// every point of a run treats a verdict the same way.
#[derive(Clone, Default)]
pub struct Hooks(Vec<Arc<dyn Hook>>);

impl Hooks {
    pub fn push(&mut self, hook: Arc<dyn Hook>) {
        self.0.push(hook);
    }

    /// Asks each hook in turn; the first that stops the run ends the asking, with its reason.
    pub fn stop_reason(&self, ask: impl Fn(&dyn Hook) -> HookVerdict) -> Option<String> {
        self.0.iter().find_map(|h| match ask(h.as_ref()) {
            HookVerdict::Stop(reason) => Some(reason),
            HookVerdict::Continue => None,
        })
    }

    /// Asks each hook about a tool call: rewrites apply in order, each hook seeing the
    /// arguments the one before it left; the first denial or stop is the verdict. `Allow`
    /// (with `action` perhaps rewritten) when every hook let it through.
    pub fn before_tool(&self, ctx: &HookContext<'_>, action: &mut Action) -> ToolVerdict {
        for h in &self.0 {
            match h.before_tool(ctx, action) {
                ToolVerdict::Allow => {}
                ToolVerdict::Rewrite(args) => action.args = args,
                verdict @ (ToolVerdict::Deny(_) | ToolVerdict::Stop(_)) => return verdict,
            }
        }
        ToolVerdict::Allow
    }
}

/// Does nothing: the default.
pub struct NoopHook;

impl Hook for NoopHook {}

/// Logs every call through `tracing` (target `burrow::agent`).
pub struct TracingHook;

impl Hook for TracingHook {
    fn before_model(&self, ctx: &HookContext<'_>) -> HookVerdict {
        tracing::debug!(target: "burrow::agent", run = ?ctx.run_id, step = ctx.step, "model call");
        HookVerdict::Continue
    }
    fn after_model(&self, ctx: &HookContext<'_>, output: &str) -> HookVerdict {
        tracing::debug!(target: "burrow::agent", run = ?ctx.run_id, step = ctx.step, chars = output.len(), "model output");
        HookVerdict::Continue
    }
    fn before_tool(&self, ctx: &HookContext<'_>, action: &Action) -> ToolVerdict {
        let args = Value::Object(action.args.clone()).to_string();
        tracing::info!(target: "burrow::agent", run = ?ctx.run_id, step = ctx.step, tool = %action.tool, args = %args, "tool call");
        ToolVerdict::Allow
    }
    fn after_tool(&self, ctx: &HookContext<'_>, action: &Action, observation: &str) -> HookVerdict {
        tracing::debug!(target: "burrow::agent", run = ?ctx.run_id, step = ctx.step, tool = %action.tool, chars = observation.len(), "tool result");
        HookVerdict::Continue
    }
    fn on_step(&self, ctx: &HookContext<'_>, step: &StepRecord) -> HookVerdict {
        tracing::info!(target: "burrow::agent", run = ?ctx.run_id, step = step.index, prompt_tokens = step.prompt_tokens, cached_tokens = step.cached_tokens, error = ?step.error, "step");
        HookVerdict::Continue
    }
    fn on_final(&self, ctx: &HookContext<'_>, answer: &str) -> HookVerdict {
        tracing::info!(target: "burrow::agent", run = ?ctx.run_id, chars = answer.len(), "final answer");
        HookVerdict::Continue
    }
}

/// Writes each step as one JSON object per line (JSON Lines) as it completes, so a trace of a
/// run that is killed holds every step that finished.
pub struct TraceHook {
    out: Mutex<std::io::BufWriter<std::fs::File>>,
}

impl TraceHook {
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Ok(TraceHook {
            out: Mutex::new(std::io::BufWriter::new(std::fs::File::create(path)?)),
        })
    }
}

impl Hook for TraceHook {
    fn on_step(&self, _ctx: &HookContext<'_>, step: &StepRecord) -> HookVerdict {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let written = serde_json::to_writer(&mut *out, step)
            .map_err(std::io::Error::from)
            .and_then(|_| out.write_all(b"\n"))
            .and_then(|_| out.flush());
        match written {
            Ok(()) => HookVerdict::Continue,
            Err(e) => HookVerdict::Stop(format!("the trace cannot be written: {e}")),
        }
    }
}
