//! The ReAct loop: a short `run` and one `step` function. Each step renders the prompt, decodes
//! the model's output (under a grammar by default), reads it with the protocol's parser, and
//! either runs a tool or ends the run; the step is recorded as data and kept. The model's
//! mistakes (unparseable output, a bad tool call, a refused final answer) go back to it as
//! observations; Burrow's own failures (the engine, the database, a template) end the run with
//! status `error`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value};

use super::grammar::{step_grammar, StepShape};
use super::hooks::{Hook, HookContext, HookVerdict, ToolVerdict};
use super::meta;
use super::prompt::{self, messages, PromptError, PromptTemplate, PromptVars, Turn};
use super::protocol::{Action, Decision, FinalStatus, Protocol, Step, ThoughtStream, TodoChange};
use super::record::{ActionRecord, RunStatus, StepRecord};
use super::store::RunHandle;
use super::todo::{TodoItem, TodoList, TodoWrite};
use crate::llm::engine::{
    CancelToken, GenerateRequest, LanguageModel, LlmError, Prompt, SamplingParams, StopReason,
    Usage,
};
use crate::llm::grammar::GrammarError;
use crate::llm::template::ChatMessage;
use crate::tools::{ToolError, ToolOutput, ToolRegistry, ToolSpec};
use crate::workspace::{Workspace, WorkspaceError};

/// How a run behaves. `Default` is what `burrow ask` uses.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub protocol: Protocol,
    pub max_steps: usize,
    /// Steps taken before a final answer is accepted (0: from the first). Small models tend
    /// to answer before they have searched; this makes them look first.
    pub min_steps: usize,
    /// Decode every step under the protocol's grammar.
    pub grammar: bool,
    pub persona: String,
    /// What the model is told about the workspace up front.
    pub task_context: String,
    pub sampling: SamplingParams,
    /// Tokens one step may write. Under a grammar, every string and list of a step is bounded
    /// (a thought, an answer, a plan), and the default leaves room for the longest such step
    /// a small model stuck in a loop writes, so steps end by the grammar, not by this limit.
    pub max_step_tokens: usize,
    /// A final answer is refused while the plan has items neither completed nor cancelled.
    pub require_plan_done: bool,
    /// With more tools than this, a run starts with the meta-tools only.
    pub toolbelt_threshold: usize,
    /// The same call this many times is not run again.
    pub repeat_limit: usize,
    /// Characters of one observation the model reads at most. With a small context window
    /// the cap is lower: an observation takes at most an eighth of the window (at about four
    /// characters a token), so a few steps still fit before summarizing.
    pub max_observation_chars: usize,
    /// Tries of a tool call that fails transiently, the first included.
    pub tool_attempts: u32,
    /// The first wait between tries; each next one is twice as long.
    pub retry_base: Duration,
    /// Past this share of the context window, older steps are summarized.
    pub summarize_at: f64,
    /// Messages kept verbatim when summarizing.
    pub keep_recent_messages: usize,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            protocol: Protocol::JsonTyped,
            max_steps: 12,
            min_steps: 0,
            grammar: true,
            persona: super::prompt::DEFAULT_PERSONA.to_string(),
            task_context: String::new(),
            // Greedy, for reproducible runs, with a light repetition penalty: small models
            // otherwise fall into loops inside a string ("todo_list_todo_list_...").
            sampling: SamplingParams {
                repeat_penalty: 1.15,
                ..SamplingParams::greedy()
            },
            max_step_tokens: 1024,
            require_plan_done: true,
            toolbelt_threshold: 12,
            repeat_limit: 3,
            max_observation_chars: 3000,
            tool_attempts: 3,
            retry_base: Duration::from_millis(200),
            summarize_at: 0.7,
            keep_recent_messages: 10,
        }
    }
}

/// Time as the loop sees it: the real clock, or a fake one in tests of retries and backoff.
pub trait Clock: Send + Sync {
    fn sleep(&self, d: Duration);
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// What a run reports as it goes: one tagged enum, streamed to the CLI and the desktop app.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    RunStarted {
        run_id: Option<i64>,
        task: String,
        protocol: String,
        model: String,
    },
    StepStarted {
        index: usize,
    },
    Token {
        index: usize,
        text: String,
    },
    /// The thought as the model writes it, piece by piece (`Thought` follows with all of it).
    ThoughtDelta {
        index: usize,
        text: String,
    },
    Thought {
        index: usize,
        text: String,
    },
    Action {
        index: usize,
        tool: String,
        args: Map<String, Value>,
    },
    Observation {
        index: usize,
        text: String,
        error: bool,
    },
    TodoChanged {
        items: Vec<TodoItem>,
    },
    /// The step as recorded and kept: its tokens, cache reuse and timings, after its
    /// observation and before the next step starts.
    StepFinished {
        step: Box<StepRecord>,
    },
    ContextSummarized {
        summary: String,
        messages_folded: usize,
        /// The model's time writing the summary.
        model_ms: f64,
    },
    Final {
        answer: String,
        status: RunStatus,
    },
    Error {
        message: String,
    },
}

/// Burrow's own failures: they end the run.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Model(#[from] LlmError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error("the step grammar cannot be built: {0}")]
    Grammar(#[from] GrammarError),
    #[error(transparent)]
    Store(#[from] WorkspaceError),
    /// The prompt does not fit even with what could be summarized folded: the instructions, the
    /// tools' descriptions and the task alone outgrow the window. Only a larger context helps.
    #[error(
        "the agent's prompt needs {needed} tokens but the model's context holds {available}, \
         with older steps summarized where there were any: load the model with a larger context \
         size"
    )]
    ContextTooSmall { needed: usize, available: usize },
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunOutcome {
    pub run_id: Option<i64>,
    pub status: RunStatus,
    pub final_answer: Option<String>,
    pub error: Option<String>,
    pub steps: Vec<StepRecord>,
}

/// The agent: a model, tools, and how to use them.
pub struct Agent<'a> {
    model: &'a dyn LanguageModel,
    tools: &'a ToolRegistry,
    config: AgentConfig,
    prompt: PromptTemplate,
    hooks: Vec<Arc<dyn Hook>>,
    clock: Arc<dyn Clock>,
    store: Option<&'a Workspace>,
    /// `tool-calls` goes through the model's chat template (see `PromptVars::native_tools`).
    native_tools: bool,
}

/// Everything a run carries from step to step.
struct RunState {
    task: String,
    turns: Vec<Turn>,
    summary: Option<String>,
    plan: TodoList,
    steps: Vec<StepRecord>,
    /// Tools in the toolbelt (all of them when the toolbelt is off).
    active: Vec<String>,
    toolbelt: bool,
    /// Calls made, by tool and arguments.
    calls: HashMap<String, CallMemo>,
    /// Calls that failed, by tool and arguments, with their error.
    failed: HashMap<String, String>,
    handle: Option<RunHandle>,
    /// The system message, rendered at the first step and then kept: it starts every prompt,
    /// so it must not change for the KV cache to be reused. Tools the toolbelt adds later are
    /// described in the observation that adds them.
    system: Option<String>,
}

/// A call the run made, for the loop guard and for results it need not show twice.
struct CallMemo {
    count: usize,
    /// The last result, as the model was shown it.
    result: String,
    /// The step whose observation shows that result in full.
    step: usize,
}

impl RunState {
    /// Whether a step's observation is still in the prompt: summaries fold the older ones.
    fn shows_step(&self, step: usize) -> bool {
        step >= self.steps.len().saturating_sub(self.turns.len()) && step < self.steps.len()
    }
}

/// What a summary may take, and the request for one after the run's own prompt.
const SUMMARY_TOKENS: usize = 300;
const SUMMARY_REQUEST: &str = "Pause the task here. Write a summary of your progress so far, \
     to continue from: what was searched, what was found (with file:line, issue numbers, \
     commit hashes), what is still open. Plain text, at most 200 words.";

/// Whether the model's chat template renders the `tools` it is given: a template that ignores
/// them (or fails on them) would leave the model blind to its tools, so the prompt then lists
/// them itself.
fn template_shows_tools(model: &dyn LanguageModel) -> bool {
    let msgs = [ChatMessage::system("s"), ChatMessage::user("u")];
    let probe = serde_json::json!({
        "type": "function",
        "function": {
            "name": "burrow_probe_tool",
            "description": "probe",
            "parameters": {"type": "object", "properties": {}},
        },
    });
    match (
        model.render_chat(&msgs, None),
        model.render_chat(&msgs, Some(&[probe])),
    ) {
        (Ok(without), Ok(with)) => with != without && with.contains("burrow_probe_tool"),
        _ => false,
    }
}

/// What one step decided.
enum Next {
    Continue,
    End {
        status: RunStatus,
        answer: Option<String>,
        error: Option<String>,
    },
}

impl<'a> Agent<'a> {
    pub fn new(
        model: &'a dyn LanguageModel,
        tools: &'a ToolRegistry,
        config: AgentConfig,
    ) -> Result<Self, AgentError> {
        let native_tools = config.protocol == Protocol::ToolCalls && template_shows_tools(model);
        Ok(Agent {
            model,
            tools,
            config,
            prompt: PromptTemplate::builtin()?,
            hooks: Vec::new(),
            clock: Arc::new(SystemClock),
            store: None,
            native_tools,
        })
    }

    pub fn with_prompt(mut self, prompt: PromptTemplate) -> Self {
        self.prompt = prompt;
        self
    }

    pub fn with_hook(mut self, hook: Arc<dyn Hook>) -> Self {
        self.hooks.push(hook);
        self
    }

    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Keeps the run and each step in the workspace database as they complete.
    pub fn with_store(mut self, ws: &'a Workspace) -> Self {
        self.store = Some(ws);
        self
    }

    /// A run's state before its first step. With the toolbelt, it starts with no tools.
    fn new_state(&self, task: &str, handle: Option<RunHandle>) -> RunState {
        let names = self.tools.names();
        let toolbelt = names.len() > self.config.toolbelt_threshold;
        RunState {
            task: task.to_string(),
            turns: Vec::new(),
            summary: None,
            plan: TodoList::new(),
            steps: Vec::new(),
            active: if toolbelt { Vec::new() } else { names },
            toolbelt,
            calls: HashMap::new(),
            failed: HashMap::new(),
            handle,
            system: None,
        }
    }

    /// Runs a task to its end: a final answer, the step limit, cancellation, or an error.
    pub fn run(
        &self,
        task: &str,
        cancel: &CancelToken,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> RunOutcome {
        let mut state = self.new_state(task, None);
        let model_name = self.model.descriptor().name;
        if let Some(ws) = self.store {
            match ws.start_run(task, Some(&model_name), self.config.protocol.as_str()) {
                Ok(h) => state.handle = Some(h),
                Err(e) => return self.fail(&mut state, e.into(), on_event),
            }
        }
        on_event(AgentEvent::RunStarted {
            run_id: state.handle.as_ref().map(|h| h.id),
            task: task.to_string(),
            protocol: self.config.protocol.as_str().to_string(),
            model: model_name,
        });
        self.drive(state, cancel, on_event)
    }

    /// Continues an interrupted run from its last completed step.
    pub fn resume(
        &self,
        run_id: i64,
        cancel: &CancelToken,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<RunOutcome, AgentError> {
        let ws = self.store.ok_or_else(|| {
            WorkspaceError::Refused("continuing a run needs the workspace database".into())
        })?;
        let (handle, record) = ws.resume_run(run_id)?;
        let mut state = self.new_state(&record.task, Some(handle));
        for step in record.steps {
            state.plan = TodoList::from_items(step.todos.clone());
            state.turns.push(self.replay_turn(&step)?);
            state.steps.push(step);
        }
        on_event(AgentEvent::RunStarted {
            run_id: Some(run_id),
            task: record.task,
            protocol: self.config.protocol.as_str().to_string(),
            model: self.model.descriptor().name,
        });
        Ok(self.drive(state, cancel, on_event))
    }

    fn replay_turn(&self, step: &StepRecord) -> Result<Turn, AgentError> {
        let vars = self.vars(&[]);
        let observation = self.prompt.observation(
            &vars,
            step.observation.as_deref().unwrap_or(""),
            &plan_text(&TodoList::from_items(step.todos.clone())),
        )?;
        Ok(Turn {
            output: step.output.clone(),
            thought: step.thought.clone(),
            call: step
                .action
                .as_ref()
                .map(|a| (a.tool.clone(), a.args.clone())),
            observation,
        })
    }

    fn drive(
        &self,
        mut state: RunState,
        cancel: &CancelToken,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> RunOutcome {
        loop {
            if cancel.is_cancelled() {
                return self.end(&mut state, RunStatus::Cancelled, None, None, on_event);
            }
            if state.steps.len() >= self.config.max_steps {
                return self.end(&mut state, RunStatus::MaxSteps, None, None, on_event);
            }
            match self.step(&mut state, cancel, on_event) {
                Ok(Next::Continue) => {}
                Ok(Next::End {
                    status,
                    answer,
                    error,
                }) => return self.end(&mut state, status, answer, error, on_event),
                Err(e) => return self.fail(&mut state, e, on_event),
            }
        }
    }

    fn fail(
        &self,
        state: &mut RunState,
        e: AgentError,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> RunOutcome {
        let message = e.to_string();
        on_event(AgentEvent::Error {
            message: message.clone(),
        });
        self.end(state, RunStatus::Error, None, Some(message), on_event)
    }

    fn end(
        &self,
        state: &mut RunState,
        status: RunStatus,
        answer: Option<String>,
        mut error: Option<String>,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> RunOutcome {
        if let (Some(ws), Some(h)) = (self.store, &state.handle) {
            if let Err(e) = ws.finish_run(h, status, answer.as_deref(), error.as_deref()) {
                error.get_or_insert_with(|| format!("the run could not be saved: {e}"));
            }
        }
        if let Some(a) = &answer {
            on_event(AgentEvent::Final {
                answer: a.clone(),
                status,
            });
        }
        RunOutcome {
            run_id: state.handle.as_ref().map(|h| h.id),
            status,
            final_answer: answer,
            error,
            steps: state.steps.clone(),
        }
    }

    /// The characters an observation may take (see `AgentConfig::max_observation_chars`).
    fn observation_chars(&self) -> usize {
        let window = self.model.descriptor().context_length;
        if window == 0 {
            return self.config.max_observation_chars;
        }
        self.config.max_observation_chars.min(window / 2)
    }

    /// The tools the model sees: the active ones, and the meta-tools the protocol needs.
    fn visible_specs(&self, active: &[String]) -> Vec<ToolSpec> {
        let mut specs: Vec<ToolSpec> = active.iter().filter_map(|n| self.tools.spec(n)).collect();
        let all = self.tools.names();
        if all.len() > self.config.toolbelt_threshold {
            specs.extend(meta::toolbelt_specs(&all, active));
        }
        if self.config.protocol != Protocol::JsonTyped {
            specs.push(meta::todo_write_spec());
        }
        if self.config.protocol == Protocol::ToolCalls {
            specs.push(meta::final_answer_spec());
        }
        specs
    }

    fn vars<'s>(&'s self, specs: &'s [ToolSpec]) -> PromptVars<'s> {
        PromptVars {
            persona: &self.config.persona,
            task_context: &self.config.task_context,
            tools: specs,
            protocol: self.config.protocol,
            plan_tools: self.config.protocol != Protocol::JsonTyped,
            native_tools: self.native_tools,
        }
    }

    fn hook_context<'s>(&self, state: &'s RunState) -> HookContext<'s> {
        HookContext {
            run_id: state.handle.as_ref().map(|h| h.id),
            step: state.steps.len(),
            task: &state.task,
        }
    }

    /// The messages of the next prompt.
    fn build_messages(
        &self,
        state: &mut RunState,
        specs: &[ToolSpec],
    ) -> Result<Prompt, AgentError> {
        let system = match &state.system {
            Some(s) => s.clone(),
            None => {
                let s = self.prompt.system(&self.vars(specs))?;
                state.system = Some(s.clone());
                s
            }
        };
        let mut msgs = messages(&system, &state.task, &[], self.native_tools);
        if let Some(summary) = &state.summary {
            msgs.push(ChatMessage::user(format!(
                "Progress so far (a summary of the earlier steps):\n{summary}"
            )));
        }
        let all = messages(&system, &state.task, &state.turns, self.native_tools);
        msgs.extend(all.into_iter().skip(2));
        // Everything but the system message is data: the task as the user typed it, and what
        // the tools returned (workspace text). Tokenized without special tokens, none of it can
        // forge a turn boundary. The model's own outputs are replayed as written.
        let untrusted: Vec<usize> = msgs
            .iter()
            .enumerate()
            .filter(|(i, m)| *i > 0 && m.role != "assistant")
            .map(|(i, _)| i)
            .collect();
        let tools = self
            .native_tools
            .then(|| specs.iter().map(ToolSpec::to_chat_tool).collect());
        Ok(Prompt::Chat {
            messages: msgs,
            tools,
            untrusted,
        })
    }

    fn prompt_tokens(&self, prompt: &Prompt) -> Result<usize, AgentError> {
        match prompt {
            Prompt::Chat {
                messages, tools, ..
            } => {
                let text = self.model.render_chat(messages, tools.as_deref())?;
                Ok(self.model.count_tokens(&text)?)
            }
            Prompt::Text(t) => Ok(self.model.count_tokens(t)?),
            Prompt::Segments(s) => Ok(s
                .iter()
                .map(|s| self.model.count_tokens(&s.text))
                .sum::<Result<usize, _>>()?),
        }
    }

    /// Folds the older turns into a summary (with the previous summary, ReSum-style), keeping
    /// the last `keep_recent_messages` messages verbatim; when fewer turns than that already
    /// fill the window (long observations in a small one), all but the last are folded.
    /// Returns whether anything was folded.
    fn summarize(
        &self,
        state: &mut RunState,
        specs: &[ToolSpec],
        cancel: &CancelToken,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<bool, AgentError> {
        // Each turn is two messages.
        let mut keep_turns = self.config.keep_recent_messages.div_ceil(2);
        if state.turns.len() <= keep_turns {
            keep_turns = 1;
        }
        // Fewer, when the kept turns alone would soon bring the prompt back to the threshold
        // (and every step would be summarized): they take at most 40% of what it allows.
        let window = self.model.descriptor().context_length;
        if window > 0 {
            let budget = (self.config.summarize_at * window as f64 * 0.4) as usize;
            let (mut used, mut kept) = (0, 0);
            for t in state.turns.iter().rev().take(keep_turns) {
                used += self.model.count_tokens(&t.output)?
                    + self.model.count_tokens(&t.observation)?;
                if kept >= 1 && used > budget {
                    break;
                }
                kept += 1;
            }
            keep_turns = kept.max(1);
        }
        if state.turns.len() <= keep_turns {
            return Ok(false);
        }
        let fold = state.turns.len() - keep_turns;
        // The summary is asked for after the step's own prompt, which the KV cache holds, so
        // only the request is evaluated; where that does not fit (the engine found the
        // context full), the older steps are summarized in a prompt of their own.
        let mut in_context = self.build_messages(state, specs)?;
        if let Prompt::Chat { messages, .. } = &mut in_context {
            messages.push(ChatMessage::user(SUMMARY_REQUEST));
        }
        let room = window.saturating_sub(self.prompt_tokens(&in_context)?);
        let prompt = if room > SUMMARY_TOKENS + 16 {
            in_context
        } else {
            self.standalone_summary_prompt(state, fold)
        };
        let started = Instant::now();
        let completion = self.generate(
            GenerateRequest::new(prompt)
                .sampling(self.config.sampling.clone())
                .max_tokens(SUMMARY_TOKENS),
            cancel,
            &mut |_| {},
        )?;
        let model_ms = started.elapsed().as_secs_f64() * 1000.0;
        let summary = completion.0.trim().to_string();
        state.summary = Some(summary.clone());
        state.turns.drain(..fold);
        on_event(AgentEvent::ContextSummarized {
            summary,
            messages_folded: fold * 2,
            model_ms,
        });
        Ok(true)
    }

    /// A summary request of its own: the task, the previous summary and the steps to fold.
    fn standalone_summary_prompt(&self, state: &RunState, fold: usize) -> Prompt {
        let mut history = String::new();
        for t in &state.turns[..fold] {
            history.push_str(&format!(
                "Step: {}\n{}\n\n",
                t.output.trim(),
                t.observation.trim()
            ));
        }
        let previous = state
            .summary
            .as_deref()
            .map(|s| format!("The summary so far:\n{s}\n\n"))
            .unwrap_or_default();
        let request = format!(
            "Task: {}\n\n{previous}Newer steps to add to it:\n{history}\
             Write the updated summary of the progress on the task: what was searched, what was \
             found (with file:line, issue numbers, commit hashes), what is still open. Plain \
             text, at most 200 words.",
            state.task
        );
        Prompt::Chat {
            messages: vec![
                ChatMessage::system(
                    "You summarize an assistant's progress on a task, keeping every fact and \
                     reference it found.",
                ),
                ChatMessage::user(request),
            ],
            tools: None,
            untrusted: vec![1],
        }
    }

    /// One generation: text, usage and why it stopped; tokens streamed to `on_token`. The
    /// run's cancel token stops the generation at its next token.
    fn generate(
        &self,
        request: GenerateRequest,
        cancel: &CancelToken,
        on_token: &mut dyn FnMut(&str),
    ) -> Result<(String, Usage, StopReason), AgentError> {
        let generation = self.model.generate(request)?;
        let stop_generation = generation.cancel_token();
        let c = generation.wait(|t| {
            on_token(t);
            if cancel.is_cancelled() {
                stop_generation.cancel();
            }
        })?;
        Ok((c.text, c.usage, c.stop_reason))
    }

    fn step(
        &self,
        state: &mut RunState,
        cancel: &CancelToken,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<Next, AgentError> {
        let index = state.steps.len();
        on_event(AgentEvent::StepStarted { index });
        let specs = self.visible_specs(&state.active);
        let window = self.model.descriptor().context_length;

        let mut prompt = self.build_messages(state, &specs)?;
        if window > 0
            && self.prompt_tokens(&prompt)? as f64 > self.config.summarize_at * window as f64
            && self.summarize(state, &specs, cancel, on_event)?
        {
            prompt = self.build_messages(state, &specs)?;
        }
        for h in &self.hooks {
            if let HookVerdict::Stop(reason) = h.before_model(&self.hook_context(state)) {
                return Ok(stopped_by_hook(reason));
            }
        }
        let mut request = GenerateRequest::new(prompt)
            .sampling(self.config.sampling.clone())
            .max_tokens(self.config.max_step_tokens)
            .stop(self.config.protocol.stop_strings().iter().copied());
        let allow_final = index + 1 >= self.config.min_steps;
        if self.config.grammar {
            // `tool-calls` answers through the final_answer tool: it is left out instead.
            let grammar_specs: Vec<ToolSpec> = specs
                .iter()
                .filter(|s| allow_final || s.name != meta::FINAL_ANSWER)
                .cloned()
                .collect();
            request = request.grammar(step_grammar(
                self.config.protocol,
                &grammar_specs,
                StepShape {
                    allow_final,
                    todo_patch: self.config.protocol == Protocol::JsonTyped,
                },
            )?);
        }
        let started = Instant::now();
        let mut retried = false;
        let (output, usage, stop) = loop {
            let mut thoughts = ThoughtStream::new(self.config.protocol);
            let mut on_token = |t: &str| {
                on_event(AgentEvent::Token {
                    index,
                    text: t.to_string(),
                });
                let delta = thoughts.push(t);
                if !delta.is_empty() {
                    on_event(AgentEvent::ThoughtDelta { index, text: delta });
                }
            };
            let result = self.generate(request.clone(), cancel, &mut on_token);
            // Reactively: the prompt did not fit, or the step ran into the end of the window.
            // Fold what can be folded and write the step once more.
            let full = matches!(
                result,
                Err(AgentError::Model(LlmError::ContextFull { .. }))
                    | Ok((_, _, StopReason::ContextFull))
            );
            if full && !retried && self.summarize(state, &specs, cancel, on_event)? {
                retried = true;
                request.prompt = self.build_messages(state, &specs)?;
                // The step starts over: what streamed of it so far is void.
                on_event(AgentEvent::StepStarted { index });
                continue;
            }
            break result.map_err(|e| match e {
                AgentError::Model(LlmError::ContextFull { needed, available }) => {
                    AgentError::ContextTooSmall { needed, available }
                }
                e => e,
            })?;
        };
        let model_ms = started.elapsed().as_secs_f64() * 1000.0;
        let mut record = StepRecord {
            index,
            prompt_tokens: usage.prompt_tokens,
            cached_tokens: usage.cached_tokens,
            output: output.clone(),
            generated_tokens: usage.generated_tokens,
            setup_ms: usage.setup_ms,
            ttft_ms: usage.time_to_first_token_ms,
            decode_ms: (model_ms - usage.time_to_first_token_ms).max(0.0),
            ..Default::default()
        };
        if stop == StopReason::Cancelled || cancel.is_cancelled() {
            return Ok(Next::End {
                status: RunStatus::Cancelled,
                answer: None,
                error: None,
            });
        }
        for h in &self.hooks {
            if let HookVerdict::Stop(reason) = h.after_model(&self.hook_context(state), &output) {
                return Ok(stopped_by_hook(reason));
            }
        }

        // A step cut off by the token limit is not read, even where the tolerant parser could
        // close its JSON: its last string (a final answer, say) would be cut short.
        let parsed = if stop == StopReason::MaxTokens {
            Err(format!(
                "the step was cut off after {} tokens: write a shorter one. Write exactly one \
                 step in this format: {}",
                self.config.max_step_tokens,
                self.config.protocol.expected_format()
            ))
        } else if stop == StopReason::ContextFull {
            Err(format!(
                "the step was cut off: the context window is full. Write a short step, or \
                 give the final answer. Write exactly one step in this format: {}",
                self.config.protocol.expected_format()
            ))
        } else {
            self.config
                .protocol
                .parse(&output)
                .map_err(|e| e.to_string())
        };
        let step = match parsed {
            Ok(step) => step,
            Err(message) => {
                record.error = Some(message.clone());
                return self.finish_step(state, record, None, Some((message, true)), on_event);
            }
        };
        let Step {
            thought,
            decision,
            todo,
        } = step;
        record.thought = thought.clone();
        if !thought.is_empty() {
            on_event(AgentEvent::Thought {
                index,
                text: thought,
            });
        }
        let mut notes: Vec<String> = Vec::new();
        if let Some(change) = todo {
            if let Err(e) = self.change_plan(state, &change, on_event) {
                notes.push(format!("The plan was not changed: {e}."));
            }
        }

        match decision {
            Decision::Finish { answer, status } => {
                if !allow_final {
                    notes.push(format!(
                        "The final answer was refused: search the workspace first. This was \
                         step {} of at least {} before answering.",
                        index + 1,
                        self.config.min_steps
                    ));
                    record.error = Some("final answer refused: too early".into());
                    let text = notes.join("\n");
                    return self.finish_step(state, record, None, Some((text, true)), on_event);
                }
                let open = state.plan.unfinished();
                if self.config.require_plan_done
                    && status == FinalStatus::Completed
                    && !open.is_empty()
                {
                    let list: Vec<String> = open
                        .iter()
                        .map(|i| format!("{} ({}: {})", i.id, i.status.as_str(), i.title))
                        .collect();
                    let message = format!(
                        "The final answer was refused: the plan still has open items: {}. \
                         Finish them, or mark them completed or cancelled, then answer.",
                        list.join("; ")
                    );
                    notes.push(message);
                    record.final_answer = None;
                    record.error = Some("final answer refused: the plan has open items".into());
                    let text = notes.join("\n");
                    return self.finish_step(state, record, None, Some((text, true)), on_event);
                }
                for h in &self.hooks {
                    if let HookVerdict::Stop(reason) =
                        h.on_final(&self.hook_context(state), &answer)
                    {
                        return Ok(stopped_by_hook(reason));
                    }
                }
                record.final_answer = Some(answer.clone());
                self.finish_step(state, record, None, None, on_event)?;
                Ok(Next::End {
                    status: match status {
                        FinalStatus::Completed => RunStatus::Succeeded,
                        FinalStatus::Failed => RunStatus::Failed,
                        FinalStatus::Blocked => RunStatus::Blocked,
                    },
                    answer: Some(answer),
                    error: None,
                })
            }
            Decision::Act(mut action) => {
                for h in &self.hooks {
                    match h.before_tool(&self.hook_context(state), &action) {
                        ToolVerdict::Allow => {}
                        ToolVerdict::Rewrite(args) => action.args = args,
                        ToolVerdict::Deny(message) => {
                            record.action = Some(ActionRecord {
                                tool: action.tool.clone(),
                                args: action.args.clone(),
                            });
                            record.error = Some(format!("denied: {message}"));
                            notes.push(message);
                            let text = notes.join("\n");
                            return self.finish_step(
                                state,
                                record,
                                Some(&action),
                                Some((text, true)),
                                on_event,
                            );
                        }
                        ToolVerdict::Stop(reason) => return Ok(stopped_by_hook(reason)),
                    }
                }
                on_event(AgentEvent::Action {
                    index,
                    tool: action.tool.clone(),
                    args: action.args.clone(),
                });
                record.action = Some(ActionRecord {
                    tool: action.tool.clone(),
                    args: action.args.clone(),
                });
                let started = Instant::now();
                let (text, failed) = self.act(state, &action, on_event);
                record.tool_ms = started.elapsed().as_secs_f64() * 1000.0;
                if let Some(e) = &failed {
                    record.error = Some(e.clone());
                }
                let mut text = text;
                for h in &self.hooks {
                    if let HookVerdict::Stop(reason) =
                        h.after_tool(&self.hook_context(state), &action, &text)
                    {
                        return Ok(stopped_by_hook(reason));
                    }
                }
                if !notes.is_empty() {
                    text = format!("{text}\n{}", notes.join("\n"));
                }
                let error = failed.is_some();
                self.finish_step(state, record, Some(&action), Some((text, error)), on_event)
            }
        }
    }

    /// Records the step with its observation (and whether that is an error), keeps it, and
    /// adds its turn to the prompt.
    fn finish_step(
        &self,
        state: &mut RunState,
        mut record: StepRecord,
        action: Option<&Action>,
        observed: Option<(String, bool)>,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<Next, AgentError> {
        if let Some((text, error)) = observed {
            record.observation = Some(text.clone());
            on_event(AgentEvent::Observation {
                index: record.index,
                text,
                error,
            });
        }
        record.todos = state.plan.items().to_vec();
        if let (Some(ws), Some(h)) = (self.store, &state.handle) {
            ws.save_step(h, &record)?;
        }
        on_event(AgentEvent::StepFinished {
            step: Box::new(record.clone()),
        });
        let specs = self.visible_specs(&state.active);
        let observation = self.prompt.observation(
            &self.vars(&specs),
            record.observation.as_deref().unwrap_or(""),
            &plan_text(&state.plan),
        )?;
        state.turns.push(Turn {
            output: record.output.clone(),
            thought: record.thought.clone(),
            call: action.map(|a| (a.tool.clone(), a.args.clone())),
            observation,
        });
        for h in &self.hooks {
            if let HookVerdict::Stop(reason) = h.on_step(&self.hook_context(state), &record) {
                state.steps.push(record);
                return Ok(stopped_by_hook(reason));
            }
        }
        state.steps.push(record);
        Ok(Next::Continue)
    }

    fn change_plan(
        &self,
        state: &mut RunState,
        change: &TodoChange,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<(), super::todo::TodoError> {
        match change {
            TodoChange::Patch(p) => state.plan.apply_patch(p)?,
            TodoChange::Write(w) => state.plan.apply_write(w)?,
        }
        on_event(AgentEvent::TodoChanged {
            items: state.plan.items().to_vec(),
        });
        Ok(())
    }

    /// Runs a call: a meta-tool, or a registered tool with retries. Returns the observation and,
    /// when the call failed, the error.
    fn act(
        &self,
        state: &mut RunState,
        action: &Action,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> (String, Option<String>) {
        let key = format!("{}\u{0}{}", action.tool, Value::Object(action.args.clone()));
        // The loop guard: no call is repeated after it failed, nor more than `repeat_limit`
        // times; the model is told what it already learned instead.
        if let Some(error) = state.failed.get(&key) {
            let text = format!(
                "You already called {} with these arguments and it failed: {error}. Do not \
                 repeat it: change the arguments or try another tool.",
                action.tool
            );
            return (text, Some("repeated a failed call".into()));
        }
        if let Some(memo) = state.calls.get(&key) {
            if memo.count >= self.config.repeat_limit {
                let n = memo.count;
                // The result is quoted only when a summary took it out of the prompt: every
                // token quoted again is evaluated again.
                let learned = if state.shows_step(memo.step) {
                    "What it returned is above.".to_string()
                } else {
                    let quoted: String = memo.result.chars().take(600).collect();
                    format!("What it returned: {quoted}")
                };
                let text = format!(
                    "You are repeating yourself: {} was called with these arguments {n} times \
                     already. {learned}\nUse that, or do something else.",
                    action.tool
                );
                return (text, Some("repeated call".into()));
            }
        }
        let result = self.call_tool(state, action, on_event);
        match result {
            Ok(text) => {
                let text = cap(&text, self.observation_chars());
                let step = state.steps.len();
                let shown = state
                    .calls
                    .get(&key)
                    .is_some_and(|m| m.result == text && state.shows_step(m.step));
                let memo = state.calls.entry(key).or_insert(CallMemo {
                    count: 0,
                    result: String::new(),
                    step,
                });
                memo.count += 1;
                // The same result, still in the prompt: said once is enough.
                if shown {
                    let same = format!(
                        "The same result as the last time {} was called with these \
                         arguments (above).",
                        action.tool
                    );
                    return (same, None);
                }
                memo.result = text.clone();
                memo.step = step;
                (text, None)
            }
            Err(e) => {
                let message = e.to_string();
                if !e.is_retryable() {
                    state.failed.insert(key, message.clone());
                }
                (format!("Error: {message}"), Some(message))
            }
        }
    }

    fn call_tool(
        &self,
        state: &mut RunState,
        action: &Action,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<String, ToolError> {
        let args = Value::Object(action.args.clone());
        let invalid = |e: serde_json::Error| ToolError::InvalidArguments(e.to_string());
        match action.tool.as_str() {
            meta::TODO_WRITE if self.config.protocol != Protocol::JsonTyped => {
                let write: TodoWrite = serde_json::from_value(args).map_err(invalid)?;
                self.change_plan(state, &TodoChange::Write(write), on_event)
                    .map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
                Ok(format!("The plan is now:\n{}", state.plan.render()))
            }
            meta::TOOLBELT_LIST if state.toolbelt => Ok(self
                .tools
                .specs()
                .iter()
                .map(|s| {
                    let first = s.description.split(". ").next().unwrap_or("");
                    let mark = if state.active.contains(&s.name) {
                        " (in the toolbelt)"
                    } else {
                        ""
                    };
                    format!("- {}{mark}: {first}", s.name)
                })
                .collect::<Vec<_>>()
                .join("\n")),
            meta::TOOLBELT_INSPECT | meta::TOOLBELT_ADD | meta::TOOLBELT_REMOVE
                if state.toolbelt =>
            {
                let name = action
                    .args
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| ToolError::InvalidArguments("\"name\" is required".into()))?;
                let spec = self.tools.spec(name).ok_or_else(|| {
                    ToolError::NotFound(format!(
                        "no tool named {name:?}; toolbelt_list_tools lists them"
                    ))
                })?;
                match action.tool.as_str() {
                    meta::TOOLBELT_INSPECT => Ok(prompt::tool_details(&spec)),
                    meta::TOOLBELT_ADD => {
                        if !state.active.contains(&spec.name) {
                            state.active.push(spec.name.clone());
                        }
                        // A call that failed because the tool was not there may work now.
                        state.failed.clear();
                        Ok(format!(
                            "{} is in the toolbelt; call it from the next step: {}",
                            spec.name,
                            prompt::tool_signature(&spec)
                        ))
                    }
                    _ => {
                        state.active.retain(|n| *n != spec.name);
                        Ok(format!("{} was removed from the toolbelt.", spec.name))
                    }
                }
            }
            name if state.active.iter().any(|n| n == name) => {
                let mut attempt = 0;
                loop {
                    attempt += 1;
                    match self.tools.call(name, args.clone()) {
                        Ok(ToolOutput { text, .. }) => return Ok(text),
                        Err(e) if e.is_retryable() && attempt < self.config.tool_attempts => {
                            self.clock
                                .sleep(self.config.retry_base * 2u32.pow(attempt - 1));
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
            name => {
                let visible: Vec<String> = self
                    .visible_specs(&state.active)
                    .into_iter()
                    .map(|s| s.name)
                    .collect();
                let hint = if state.toolbelt && self.tools.spec(name).is_some() {
                    format!(" (add it first with {})", meta::TOOLBELT_ADD)
                } else {
                    String::new()
                };
                Err(ToolError::NotFound(format!(
                    "no tool named {name:?} is available{hint}; the tools are: {}",
                    visible.join(", ")
                )))
            }
        }
    }
}

/// The plan as an observation shows it: nothing until there is one.
fn plan_text(plan: &TodoList) -> String {
    if plan.is_empty() {
        String::new()
    } else {
        plan.render()
    }
}

fn stopped_by_hook(reason: String) -> Next {
    Next::End {
        status: RunStatus::Cancelled,
        answer: None,
        error: Some(format!("stopped by a hook: {reason}")),
    }
}

/// At most `max` characters, with a note saying how much was cut.
fn cap(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}\n[cut: {max} of {total} characters shown]")
}
