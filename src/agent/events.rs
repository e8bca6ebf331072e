//! What a run reports (`AgentEvent`, one tagged enum streamed to both shells), how it ended
//! (`RunOutcome`), and Burrow's own failures that end it (`AgentError`).

use serde::Serialize;

use super::prompt::PromptError;
use super::record::{RunStatus, StepRecord};
use super::todo::TodoItem;
use crate::llm::engine::LlmError;
use crate::llm::grammar::GrammarError;
use crate::workspace::WorkspaceError;

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
    /// A piece of the step's raw output. An empty one ends the step's output (the model
    /// stopped writing): what merges pieces sends what it holds then, rather than with the
    /// next event, which comes only once the step's tool has run.
    Token {
        index: usize,
        text: String,
    },
    /// The thought as the model writes it, piece by piece; the step's record, when it comes,
    /// holds the thought as it was read.
    ThoughtDelta {
        index: usize,
        text: String,
    },
    TodoChanged {
        items: Vec<TodoItem>,
    },
    /// The step as recorded and kept, the one account of what it did: its thought, action,
    /// observation with the items it shows, final answer, tokens, cache reuse and timings.
    /// Before it, only deltas of what is being written (`Token`, `ThoughtDelta`).
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
    /// A run goes on in the protocol its steps are written in: read under another's prompt
    /// and grammar, its history was misread and its next steps written in another form.
    #[error("run {run} is in the {kept} protocol; it cannot go on in {asked}")]
    OtherProtocol {
        run: i64,
        kept: String,
        asked: String,
    },
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
