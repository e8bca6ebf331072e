//! The agent benchmark (`burrow bench --agent`): one run held to a fixed number of steps (the
//! final answer is kept back until the last), with what each step reused from the KV cache, its
//! time to first token, and where the wall time went: the model, the tools, and everything else
//! (rendering and tokenizing prompts, building and compiling grammars, parsing, storing).

use std::fmt;
use std::time::Instant;

use serde::Serialize;

use super::events::AgentEvent;
use super::record::RunStatus;
use super::run::Agent;
use crate::llm::engine::CancelToken;

/// One step's figures.
#[derive(Debug, Clone, Serialize)]
pub struct StepFigures {
    pub index: usize,
    pub prompt_tokens: usize,
    pub cached_tokens: usize,
    /// The share of the prompt reused from the KV cache.
    pub reuse: f64,
    /// Preparing the model call: rendering, tokenizing, compiling the grammar.
    pub setup_ms: f64,
    pub ttft_ms: f64,
    /// The model itself: prefill and decode, without the setup.
    pub model_ms: f64,
    pub generated_tokens: usize,
    pub tool_ms: f64,
    pub tool: Option<String>,
    pub error: Option<String>,
    /// The history was summarized before this step: its prompt was written anew.
    pub after_summary: bool,
    /// Burrow's own step (the first search, the opening of its best match): no model call.
    pub automatic: bool,
    /// From the step's start to its first token streamed, as the user waits for it: with
    /// the prompt's preparation and, at a run's first model step, the warm start.
    pub first_token_ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AgentBenchReport {
    pub model: String,
    pub protocol: String,
    pub task: String,
    pub status: RunStatus,
    /// Why the run ended with an error, if it did.
    pub error: Option<String>,
    pub steps: Vec<StepFigures>,
    /// The run from start to end, as its caller waits for it.
    pub wall_ms: f64,
    pub model_ms: f64,
    pub tool_ms: f64,
    pub setup_ms: f64,
    /// The rest of the wall time: the loop's own work (prompt messages, parsing, the plan,
    /// events, the database).
    pub loop_ms: f64,
    /// Summaries the context forced (their model calls count in `model_ms`).
    pub summaries: usize,
    pub events: usize,
}

impl AgentBenchReport {
    /// The steps the model took (Burrow's own first steps call no model).
    fn model_steps(&self) -> Vec<&StepFigures> {
        self.steps.iter().filter(|s| !s.automatic).collect()
    }

    /// The lowest share of the prompt reused from the KV cache, from the second model step on.
    pub fn min_reuse_after_first(&self) -> Option<f64> {
        self.model_steps()
            .into_iter()
            .skip(1)
            .map(|s| s.reuse)
            .min_by(f64::total_cmp)
    }

    /// Of what the previous step's prompt and output were, the lowest share a step found in
    /// the KV cache (from the second step on; steps after a summary, whose history was written
    /// anew, left out). What a step adds itself (its observation, the plan) is not in that
    /// sum: this says whether the cache kept what it could, whatever the observations' size.
    pub fn min_carried_over(&self) -> Option<f64> {
        self.model_steps()
            .windows(2)
            .filter(|w| !w[1].after_summary)
            .map(|w| {
                let before = w[0].prompt_tokens + w[0].generated_tokens;
                if before == 0 {
                    1.0
                } else {
                    (w[1].cached_tokens as f64 / before as f64).min(1.0)
                }
            })
            .min_by(f64::total_cmp)
    }

    /// Time to first token of the last step over that of the second.
    pub fn ttft_last_over_second(&self) -> Option<f64> {
        let steps = self.model_steps();
        let second = steps.get(1)?;
        let last = steps.last()?;
        (steps.len() > 2 && second.ttft_ms > 0.0).then(|| last.ttft_ms / second.ttft_ms)
    }

    /// Time to first token per prompt token evaluated (the ones not reused), last step over
    /// second: how much the history itself slows a step, apart from the size of what is new.
    pub fn ttft_per_new_token_last_over_second(&self) -> Option<f64> {
        let per = |s: &StepFigures| {
            let new = s.prompt_tokens.saturating_sub(s.cached_tokens);
            (new > 0).then(|| (s.ttft_ms - s.setup_ms).max(0.0) / new as f64)
        };
        let steps = self.model_steps();
        let second = per(steps.get(1)?)?;
        let last = per(steps.last()?)?;
        (steps.len() > 2 && second > 0.0).then(|| last / second)
    }

    /// A new run's first token over its second model step's, each from its step's start:
    /// whether a new run starts warm (the system prompt's state kept between runs).
    pub fn first_token_first_over_second(&self) -> Option<f64> {
        let mut model_steps = self.steps.iter().filter(|s| !s.automatic);
        let first = model_steps.next()?.first_token_ms?;
        let second = model_steps.next()?.first_token_ms?;
        (second > 0.0).then(|| first / second)
    }

    /// Everything but model time and tool time, as a share of the wall time.
    pub fn overhead_share(&self) -> f64 {
        if self.wall_ms > 0.0 {
            (self.setup_ms + self.loop_ms) / self.wall_ms
        } else {
            0.0
        }
    }
}

/// Runs `task` once with `agent` and measures it. The agent's configuration decides the
/// number of steps (`max_steps`, with `min_steps` equal to it for a run of exactly that many).
pub fn bench_agent(agent: &Agent<'_>, task: &str) -> AgentBenchReport {
    let cancel = CancelToken::new();
    let mut events = 0usize;
    let mut summaries = 0usize;
    let mut summary_ms = 0.0;
    let mut model = String::new();
    let mut protocol = String::new();
    let mut step = 0;
    let mut summarized = Vec::new();
    let mut step_started = Instant::now();
    let mut first_tokens: Vec<(usize, f64)> = Vec::new();
    let started = Instant::now();
    let outcome = agent.run(task, &cancel, &mut |e| {
        events += 1;
        match e {
            AgentEvent::StepStarted { index } => {
                step = index;
                step_started = Instant::now();
            }
            AgentEvent::Token { .. } if !first_tokens.iter().any(|(i, _)| *i == step) => {
                first_tokens.push((step, step_started.elapsed().as_secs_f64() * 1000.0));
            }
            AgentEvent::ContextSummarized { model_ms, .. } => {
                summaries += 1;
                summary_ms += model_ms;
                summarized.push(step);
            }
            AgentEvent::RunStarted {
                model: m,
                protocol: p,
                ..
            } => {
                model = m;
                protocol = p;
            }
            _ => {}
        }
    });
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    let steps: Vec<StepFigures> = outcome
        .steps
        .iter()
        .map(|s| StepFigures {
            index: s.index,
            prompt_tokens: s.prompt_tokens,
            cached_tokens: s.cached_tokens,
            reuse: if s.prompt_tokens > 0 {
                s.cached_tokens as f64 / s.prompt_tokens as f64
            } else {
                0.0
            },
            setup_ms: s.setup_ms,
            ttft_ms: s.ttft_ms,
            model_ms: (s.ttft_ms + s.decode_ms - s.setup_ms).max(0.0),
            generated_tokens: s.generated_tokens,
            tool_ms: s.tool_ms,
            tool: s.action.as_ref().map(|a| a.tool.clone()),
            error: s.error.clone(),
            after_summary: summarized.contains(&s.index),
            automatic: s.by_burrow(),
            first_token_ms: first_tokens
                .iter()
                .find(|(i, _)| *i == s.index)
                .map(|(_, ms)| *ms),
        })
        .collect();
    let model_ms: f64 = steps.iter().map(|s| s.model_ms).sum::<f64>() + summary_ms;
    let tool_ms: f64 = steps.iter().map(|s| s.tool_ms).sum();
    let setup_ms: f64 = steps.iter().map(|s| s.setup_ms).sum();
    AgentBenchReport {
        model,
        protocol,
        task: task.to_string(),
        status: outcome.status,
        error: outcome.error.clone(),
        wall_ms,
        model_ms,
        tool_ms,
        setup_ms,
        loop_ms: (wall_ms - model_ms - tool_ms - setup_ms).max(0.0),
        summaries,
        events,
        steps,
    }
}

impl fmt::Display for AgentBenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "agent run: {} steps, {} protocol, model {}, ended {}",
            self.steps.len(),
            self.protocol,
            self.model,
            self.status.as_str()
        )?;
        writeln!(f, "task: {}", self.task)?;
        if let Some(e) = &self.error {
            writeln!(f, "error: {e}")?;
        }
        writeln!(
            f,
            "{:>4} {:>7} {:>7} {:>6} {:>8} {:>8} {:>9} {:>5} {:>8}  tool",
            "step", "prompt", "cached", "reuse", "setup", "ttft", "model", "gen", "tool"
        )?;
        for s in &self.steps {
            let tool = match (&s.tool, &s.error) {
                (Some(t), None) => t.clone(),
                (Some(t), Some(_)) => format!("{t} (error)"),
                (None, Some(e)) => format!("({})", e.chars().take(40).collect::<String>()),
                (None, None) => "(final answer)".into(),
            };
            writeln!(
                f,
                "{:>4} {:>7} {:>7} {:>5.1}% {:>6.1}ms {:>6.0}ms {:>7.0}ms {:>5} {:>6.1}ms  {}",
                s.index + 1,
                s.prompt_tokens,
                s.cached_tokens,
                s.reuse * 100.0,
                s.setup_ms,
                s.ttft_ms,
                s.model_ms,
                s.generated_tokens,
                s.tool_ms,
                tool
            )?;
        }
        let pct = |ms: f64| {
            if self.wall_ms > 0.0 {
                ms / self.wall_ms * 100.0
            } else {
                0.0
            }
        };
        writeln!(
            f,
            "wall {:.2} s: model {:.2} s ({:.1}%), tools {:.3} s ({:.2}%), setup {:.3} s \
             ({:.2}%), loop {:.3} s ({:.2}%); {} events",
            self.wall_ms / 1000.0,
            self.model_ms / 1000.0,
            pct(self.model_ms),
            self.tool_ms / 1000.0,
            pct(self.tool_ms),
            self.setup_ms / 1000.0,
            pct(self.setup_ms),
            self.loop_ms / 1000.0,
            pct(self.loop_ms),
            self.events
        )?;
        if self.summaries > 0 {
            writeln!(
                f,
                "note: the history was summarized {} time(s) (counted as model time); the \
                 step after a summary evaluates its prompt anew (a larger --ctx avoids it)",
                self.summaries
            )?;
        }
        let mark = |ok: bool| if ok { "ok" } else { "MISSED" };
        if let Some(r) = self.min_reuse_after_first() {
            writeln!(
                f,
                "KV reuse from the second model step: at least {:.1}% (target >= 90%: {})",
                r * 100.0,
                mark(r >= 0.9)
            )?;
        }
        if let Some(r) = self.min_carried_over() {
            writeln!(
                f,
                "  of the previous step's prompt and output: at least {:.1}% reused",
                r * 100.0
            )?;
        }
        if let Some(r) = self.ttft_last_over_second() {
            writeln!(
                f,
                "time to first token, last model step ({}) / second: {:.2}x (target <= 1.5x: {})",
                self.model_steps().len(),
                r,
                mark(r <= 1.5)
            )?;
        }
        if let Some(r) = self.ttft_per_new_token_last_over_second() {
            writeln!(
                f,
                "  per prompt token evaluated (the rest is reused), last model step ({}) / second: {:.2}x",
                self.model_steps().len(),
                r
            )?;
        }
        if let Some(r) = self.first_token_first_over_second() {
            writeln!(
                f,
                "first token from the step's start, a new run's first model step / its second: \
                 {:.2}x (target <= 1.5x: {})",
                r,
                mark(r <= 1.5)
            )?;
        }
        let share = self.overhead_share();
        writeln!(
            f,
            "everything but model and tools: {:.2}% of wall (target < 2%: {})",
            share * 100.0,
            mark(share < 0.02)
        )
    }
}
