//! The agent's runs: started, continued, stopped and looked back on, and the items their
//! traces link to opened.

use std::sync::Arc;

use super::{lock, App, AppError, AppEvent, RunTask};
use crate::agent::hooks::TracingHook;
use crate::agent::prompt::workspace_summary;
use crate::agent::protocol::Protocol;
use crate::agent::record::{RunRecord, RunStatus};
use crate::agent::{Agent, AgentConfig, AgentEvent, RunOutcome, RunStore};
use crate::llm::engine::CancelToken;
use crate::llm::LanguageModel;
use crate::tools::locator::LineWindow;
use crate::tools::Locator;
use crate::workspace::WorkspaceError;

/// Lines shown before a linked line, so it is seen in context.
const OPEN_CONTEXT_LINES: usize = 20;

impl App {
    /// Runs the agent on a task (or continues an interrupted run) with the model in use and
    /// the current settings, streaming its events, until it ends or [`App::stop_run`].
    pub fn run(
        &self,
        task: RunTask,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<RunOutcome, AppError> {
        if let RunTask::New(t) = &task {
            if t.trim().is_empty() {
                return Err(AppError::EmptyTask);
            }
        }
        let model = lock(&self.model)
            .as_ref()
            .map(|m| m.model.clone())
            .ok_or(AppError::NoModel)?;
        let cancel = {
            let mut run = lock(&self.run);
            if run.is_some() {
                return Err(AppError::RunInProgress);
            }
            if self.loading.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(AppError::LoadInProgress);
            }
            let token = CancelToken::new();
            *run = Some(token.clone());
            token
        };
        let result = self.run_with(&*model, task, &cancel, on_event);
        *lock(&self.run) = None;
        let outcome = result?;
        on_event(AppEvent::RunEnded {
            run_id: outcome.run_id,
            status: outcome.status,
            final_answer: outcome.final_answer.clone(),
            error: outcome.error.clone(),
        });
        Ok(outcome)
    }

    fn run_with(
        &self,
        model: &dyn LanguageModel,
        task: RunTask,
        cancel: &CancelToken,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<RunOutcome, AppError> {
        let settings = lock(&self.settings).clone();
        let mut config = settings.agent_config(self.task_context()?);
        if let RunTask::Resume(id) = task {
            config.protocol = self.resumable(id)?;
        }
        let agent = self.agent(model, config)?;
        let mut forward = |event: AgentEvent| on_event(AppEvent::Agent { event });
        Ok(match task {
            RunTask::New(t) => agent.run(t.trim(), cancel, &mut forward),
            RunTask::Resume(id) => agent.resume(id, cancel, &mut forward)?,
        })
    }

    /// Whether run `id` can be continued, and the protocol it goes on in: its own (History's
    /// Continue went on in the settings' one, and misread its steps). Asked before a model
    /// loads: `ask --resume` of an ended run waited through the load to be told no.
    pub fn resumable(&self, id: i64) -> Result<Protocol, AppError> {
        // A run whose process died since is interrupted now, not still going.
        self.workspace.interrupt_orphaned_runs()?;
        let run = self.workspace.run(id)?;
        match run.status {
            RunStatus::Interrupted => {}
            RunStatus::Running => {
                return Err(WorkspaceError::Refused(format!(
                    "run {id} is still going in another process"
                ))
                .into())
            }
            ended => {
                return Err(WorkspaceError::Refused(format!(
                    "run {id} ended ({}); only an interrupted run can be continued",
                    ended.as_str()
                ))
                .into())
            }
        }
        Protocol::parse_name(&run.protocol).ok_or_else(|| {
            WorkspaceError::Refused(format!(
                "run {id} is in the {} protocol, which this version does not know",
                run.protocol
            ))
            .into()
        })
    }

    /// What the agent is told about the workspace up front.
    pub fn task_context(&self) -> Result<String, AppError> {
        Ok(workspace_summary(&self.workspace)?)
    }

    /// An agent over the workspace's tools, keeping its runs in the workspace: the one place
    /// an agent is assembled, for the app's runs and the CLI's alike.
    pub fn agent<'a>(
        &'a self,
        model: &'a dyn LanguageModel,
        mut config: AgentConfig,
    ) -> Result<Agent<'a>, AppError> {
        self.check_answerable()?;
        if config.repos.is_empty() {
            config.repos = self.repo_names()?;
        }
        if config.route_first && config.field_values == Default::default() {
            config.field_values = self.workspace.field_values()?;
        }
        Ok(Agent::new(model, &self.tools, config)?
            .with_store(&*self.workspace)
            .with_warm_start(self.home.warm_start_dir())
            .with_hook(Arc::new(TracingHook)))
    }

    /// Whether a run has anything to answer from: a run over an empty workspace searched
    /// nothing step after step to its limit (12 steps and a minute with the default model),
    /// to say the workspace does not hold it. Tools from MCP servers may answer without one.
    pub fn check_answerable(&self) -> Result<(), AppError> {
        if self.workspace.repos()?.is_empty() && !self.tools.has_dynamic() {
            return Err(AppError::EmptyWorkspace);
        }
        Ok(())
    }

    /// The names a tool's `repo` argument takes: each repository's name, and its `owner/name`
    /// when it has one.
    pub fn repo_names(&self) -> Result<Vec<String>, AppError> {
        let mut names = Vec::new();
        for r in self.workspace.repos()? {
            if let Some(remote) = r.remote.filter(|remote| *remote != r.name) {
                names.push(remote);
            }
            names.push(r.name);
        }
        Ok(names)
    }

    /// Stops the run in progress; it ends as cancelled with every step so far kept.
    pub fn stop_run(&self) -> bool {
        match lock(&self.run).as_ref() {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    pub fn is_running(&self) -> bool {
        lock(&self.run).is_some()
    }

    /// Past runs, newest first. A run whose process died while the app was open (a `burrow
    /// ask` killed in a terminal) reads as interrupted, with Continue offered: it read as
    /// running until the app was started again.
    pub fn runs(&self, limit: usize) -> Result<Vec<RunRecord>, AppError> {
        self.workspace.interrupt_orphaned_runs()?;
        Ok(self.workspace.runs(limit)?)
    }

    /// One run with its whole trace.
    pub fn get_run(&self, id: i64) -> Result<RunRecord, AppError> {
        Ok(self.workspace.run(id)?)
    }

    /// The text of an item a trace links to, read through the same read-only tools the agent
    /// uses (so it is confined to the indexed sources): a file around a line, an issue or pull
    /// request with its comments, a commit with its diff.
    pub fn open_item(&self, item: &Locator) -> Result<String, AppError> {
        let what = match item {
            Locator::File {
                path,
                line: Some(l),
                ..
            } => format!("{path}:{l}"),
            Locator::File { path, .. } => path.clone(),
            Locator::Issue { number, .. } => format!("issue #{number}"),
            Locator::PullRequest { number, .. } => format!("pull request #{number}"),
            Locator::Commit { hash, .. } => format!("commit {hash}"),
        };
        let window = LineWindow {
            before: OPEN_CONTEXT_LINES,
            lines: None,
        };
        let (tool, args) = item.open_call(window);
        let args = serde_json::Value::Object(args);
        let mut result = self.tools.call(tool, args.clone());
        // "#123" in a trace may be either; GitHub numbers them in one sequence.
        if let (Locator::Issue { .. }, Err(crate::tools::ToolError::NotFound(_))) = (item, &result)
        {
            result = self.tools.call("get_pull_request", args);
        }
        result.map(|out| out.text).map_err(|e| AppError::Open {
            what,
            message: e.to_string(),
        })
    }
}
