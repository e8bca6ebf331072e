//! The ReAct loop: `run` and `resume` start a run, `drive` takes steps until one ends it.
//! Each step (`step.rs`) decodes the model's output under the protocol's grammar, reads it,
//! and carries out what it decided (`decision.rs`: a call through `dispatch.rs`, or the final
//! answer); the step is recorded as data and kept. The model's mistakes (unparseable output, a
//! bad tool call, a refused final answer) go back to it as observations; Burrow's own failures
//! (the engine, the database, a template) end the run with status `error`.

use std::path::PathBuf;
use std::sync::Arc;

use super::config::{AgentConfig, Clock, SystemClock};
use super::context::template_shows_tools;
use super::events::{AgentError, AgentEvent, RunOutcome};
use super::hooks::{Hook, HookContext, Hooks};
use super::meta;
use super::prompt::{PromptTemplate, PromptVars, Turn};
use super::protocol::Action;
use super::record::{RunStatus, StepRecord};
use super::state::{call_key, plan_text, CallMemo, RunState};
use super::store::{RunHandle, RunStore};
use super::todo::TodoList;
use super::toolbelt::initial_tools;
use crate::llm::engine::{CancelToken, LanguageModel};
use crate::tools::{Locator, ToolRegistry, ToolSpec};
use crate::workspace::WorkspaceError;

/// The agent: a model, tools, and how to use them.
pub struct Agent<'a> {
    pub(super) model: &'a dyn LanguageModel,
    pub(super) tools: &'a ToolRegistry,
    pub(super) config: AgentConfig,
    /// The leading matches this run checks: the config's, else the model's catalogue entry's.
    pub(super) check_matches: usize,
    /// The run's answers quote its tools: the config's, else the model's catalogue entry's.
    pub(super) quote_answers: bool,
    pub(super) prompt: PromptTemplate,
    pub(super) hooks: Hooks,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) store: Option<&'a dyn RunStore>,
    /// `tool-calls` goes through the model's chat template (see `PromptVars::native_tools`).
    pub(super) native_tools: bool,
    /// Where the KV state of the system prompt is kept between processes (see
    /// `with_warm_start`).
    pub(super) warm_dir: Option<PathBuf>,
}

/// What a run does next (see `Agent::next_phase`).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Phase {
    /// It ends with no answer: cancelled, or at its step limit.
    End(RunStatus),
    /// The model chooses the run's first call, and it is made.
    Route,
    /// Burrow searches the workspace with the task.
    Search,
    /// Burrow opens one of the search's leading matches with this call.
    Open(Action),
    /// The model says whether this match, just opened, answers the task.
    Check(Locator),
    /// The model follows one of these names, used by the file just opened, to where it is
    /// defined, or answers from the file.
    Follow(Vec<String>),
    /// The model takes a step of its own.
    Model,
}

/// What one step decided.
pub(super) enum Next {
    Continue,
    End {
        status: RunStatus,
        answer: Option<String>,
        error: Option<String>,
    },
}

impl Next {
    pub(super) fn cancelled() -> Next {
        Next::End {
            status: RunStatus::Cancelled,
            answer: None,
            error: None,
        }
    }

    pub(super) fn stopped_by_hook(reason: String) -> Next {
        Next::End {
            status: RunStatus::Cancelled,
            answer: None,
            error: Some(format!("stopped by a hook: {reason}")),
        }
    }
}

impl<'a> Agent<'a> {
    pub fn new(
        model: &'a dyn LanguageModel,
        tools: &'a ToolRegistry,
        config: AgentConfig,
    ) -> Result<Self, AgentError> {
        let native_tools = config.protocol.calls_natively() && template_shows_tools(model);
        let check_matches = config.check_matches_for(&model.descriptor());
        let quote_answers = config.quote_answers_for(&model.descriptor());
        Ok(Agent {
            model,
            tools,
            config,
            check_matches,
            quote_answers,
            prompt: PromptTemplate::builtin()?,
            hooks: Hooks::default(),
            clock: Arc::new(SystemClock),
            store: None,
            native_tools,
            warm_dir: None,
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

    /// Keeps the KV state of the system prompt (persona, tools, format) in `dir`, keyed by
    /// model and prompt: a new process's first step then evaluates only what follows it.
    pub fn with_warm_start(mut self, dir: PathBuf) -> Self {
        self.warm_dir = Some(dir);
        self
    }

    /// Keeps the run and each step in `store` as they complete.
    pub fn with_store(mut self, store: &'a dyn RunStore) -> Self {
        self.store = Some(store);
        self
    }

    /// A run's state before its first step, with the tools it starts with.
    fn new_state(&self, task: &str, handle: Option<RunHandle>) -> RunState {
        let (active, toolbelt) = initial_tools(
            self.model,
            &self.tools.specs(),
            self.config.toolbelt_share,
            task,
        );
        RunState::new(task, active, toolbelt, handle, self.config.max_steps)
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
        if let Some(store) = self.store {
            match store.start_run(task, Some(&model_name), self.config.protocol.as_str()) {
                Ok(h) => state.handle = Some(h),
                Err(e) => return self.fail(&mut state, e.into(), on_event),
            }
        }
        on_event(AgentEvent::RunStarted {
            run_id: state.run_id(),
            task: task.to_string(),
            protocol: self.config.protocol.as_str().to_string(),
            model: model_name,
        });
        self.drive(state, cancel, on_event)
    }

    /// Continues an interrupted run from its last completed step, in the protocol it was
    /// written in (the agent's own must be that one), with what it learned rebuilt: its plan,
    /// toolbelt, turns and the calls the loop guard counts. A run whose last kept step is its
    /// final answer ends with that answer; a run with as many steps as the limit gets one
    /// more, to answer from what it saw.
    pub fn resume(
        &self,
        run_id: i64,
        cancel: &CancelToken,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<RunOutcome, AgentError> {
        let store = self.store.ok_or_else(|| {
            WorkspaceError::Refused("continuing a run needs the workspace database".into())
        })?;
        let kept = store.run(run_id)?.protocol;
        if kept != self.config.protocol.as_str() {
            return Err(AgentError::OtherProtocol {
                run: run_id,
                kept,
                asked: self.config.protocol.as_str().to_string(),
            });
        }
        let model = self.model.descriptor().name;
        let (handle, record) = store.resume_run(run_id, Some(&model))?;
        let mut state = self.new_state(&record.task, Some(handle));
        for step in record.steps {
            state.plan = TodoList::from_items(step.todos.clone());
            self.replay_toolbelt(&mut state, &step);
            replay_calls(&mut state, &step);
            state.turns.push(self.replay_turn(&step)?);
            state.steps.push(step);
        }
        state.max_steps = state.max_steps.max(state.steps.len() + 1);
        on_event(AgentEvent::RunStarted {
            run_id: Some(run_id),
            task: record.task,
            protocol: self.config.protocol.as_str().to_string(),
            model,
        });
        let answered = state.steps.last().and_then(|s| {
            let answer = s.final_answer.clone()?;
            Some((s.ended.unwrap_or(RunStatus::Succeeded), answer))
        });
        if let Some((status, answer)) = answered {
            return Ok(self.end(&mut state, status, Some(answer), None, on_event));
        }
        Ok(self.drive(state, cancel, on_event))
    }

    /// What a replayed step did to the toolbelt, done again: the tools it added are in it, the
    /// ones it removed are not. Without it a resumed run started from the first toolbelt, so
    /// a tool added before the stop was gone, and adding it again was out of the grammar (the
    /// same call was made already).
    fn replay_toolbelt(&self, state: &mut RunState, step: &StepRecord) {
        let Some(action) = &step.action else { return };
        let Some(name) = action.args.get("name").and_then(|v| v.as_str()) else {
            return;
        };
        let Some(spec) = self.tools.spec(name) else {
            return;
        };
        match action.tool.as_str() {
            meta::TOOLBELT_ADD if !state.active.contains(&spec.name) => {
                state.active.push(spec.name.clone())
            }
            meta::TOOLBELT_REMOVE => state.active.retain(|n| *n != spec.name),
            _ => {}
        }
    }

    fn replay_turn(&self, step: &StepRecord) -> Result<Turn, AgentError> {
        let observation = self.prompt.observation(
            &self.vars(&[]),
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

    /// The run's loop: each turn, `next_phase` says what comes next, and that is done.
    fn drive(
        &self,
        mut state: RunState,
        cancel: &CancelToken,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> RunOutcome {
        loop {
            let next = match self.next_phase(&state, cancel) {
                Phase::End(status) => return self.end(&mut state, status, None, None, on_event),
                Phase::Route => self.route(&mut state, cancel, on_event),
                Phase::Search => self.search_first(&mut state, on_event),
                Phase::Open(action) => self.open_match(&mut state, action, on_event),
                Phase::Check(item) => self.check(&mut state, item, cancel, on_event),
                Phase::Follow(names) => self.follow(&mut state, names, cancel, on_event),
                Phase::Model => self.step(&mut state, cancel, on_event),
            };
            match next {
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

    /// What the run does next, from its state: the one place that decides it.
    ///
    /// A run's first step is the model's route (see `agent/route.rs`), or Burrow's search with
    /// the task where routes are off. After a search it opens the best match and asks the model whether it answers the task, and the next
    /// match while it says no (see `agent/first.rs`); then the model takes its own steps.
    pub(super) fn next_phase(&self, state: &RunState, cancel: &CancelToken) -> Phase {
        if cancel.is_cancelled() {
            Phase::End(RunStatus::Cancelled)
        } else if state.steps.len() >= state.max_steps {
            Phase::End(RunStatus::MaxSteps)
        } else if state.steps.is_empty() && self.routes_first(state) {
            Phase::Route
        } else if state.steps.is_empty() && self.searches_first(state) {
            Phase::Search
        } else if let Some(open) = self.next_to_open(state) {
            Phase::Open(open)
        } else if let Some(item) = self.check_due(state) {
            Phase::Check(item)
        } else if let Some(names) = self.follow_due(state) {
            Phase::Follow(names)
        } else {
            Phase::Model
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
        if let (Some(store), Some(h)) = (self.store, &state.handle) {
            if let Err(e) = store.finish_run(h, status, answer.as_deref(), error.as_deref()) {
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
            run_id: state.run_id(),
            status,
            final_answer: answer,
            error,
            steps: state.steps.clone(),
        }
    }

    pub(super) fn vars<'s>(&'s self, specs: &'s [ToolSpec]) -> PromptVars<'s> {
        PromptVars {
            persona: &self.config.persona,
            task_context: &self.config.task_context,
            tools: specs,
            protocol: self.config.protocol,
            plan_tools: !self.config.protocol.has_plan_field(),
            native_tools: self.native_tools,
            example: if self.config.few_shot {
                self.config.protocol.example()
            } else {
                String::new()
            },
        }
    }

    pub(super) fn hook_context<'s>(&self, state: &'s RunState) -> HookContext<'s> {
        HookContext {
            run_id: state.run_id(),
            step: state.steps.len(),
            task: &state.task,
        }
    }
}

/// What a kept step's call taught the loop guard, learned again: the calls made (counted,
/// with what they returned) and those that failed for good. A resumed run forgot them, and
/// made a failed call again where no grammar kept it out.
fn replay_calls(state: &mut RunState, step: &StepRecord) {
    let Some(action) = &step.action else { return };
    let key = call_key(&action.tool, &action.args);
    if step.call_failed {
        let error = step.error.clone().unwrap_or_default();
        state.failed.insert(key, error);
        return;
    }
    if step.error.is_some() {
        return;
    }
    if action.tool == meta::TOOLBELT_ADD {
        state.failed.clear();
    }
    let memo = state.calls.entry(key).or_insert(CallMemo {
        count: 0,
        result: String::new(),
        step: step.index,
    });
    memo.count += 1;
    // As the live guard keeps it: a step that pointed to the same result shown before leaves
    // the result and the step that shows it as they were.
    if !step.repeated {
        memo.result = step.observation.clone().unwrap_or_default();
        memo.step = step.index;
    }
}
