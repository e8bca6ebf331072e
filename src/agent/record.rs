//! Runs and steps as data: what the CLI prints, `--trace` writes, the database keeps and the
//! desktop app shows.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::todo::TodoItem;
use crate::tools::Locator;

/// How a run ended, or that it has not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    /// The model gave a final answer and said the task was done.
    Succeeded,
    /// The model said it failed.
    Failed,
    /// The model said it could not go on (missing data, a refused tool).
    Blocked,
    Cancelled,
    MaxSteps,
    /// Burrow itself failed (the engine, the database).
    Error,
    /// The process ended while the run was going; it can be continued from its last step.
    Interrupted,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Blocked => "blocked",
            RunStatus::Cancelled => "cancelled",
            RunStatus::MaxSteps => "max_steps",
            RunStatus::Error => "error",
            RunStatus::Interrupted => "interrupted",
        }
    }

    pub fn parse(s: &str) -> Option<RunStatus> {
        [
            RunStatus::Running,
            RunStatus::Succeeded,
            RunStatus::Failed,
            RunStatus::Blocked,
            RunStatus::Cancelled,
            RunStatus::MaxSteps,
            RunStatus::Error,
            RunStatus::Interrupted,
        ]
        .into_iter()
        .find(|st| st.as_str() == s)
    }
}

/// A tool call as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionRecord {
    pub tool: String,
    pub args: Map<String, Value>,
}

/// One step: the prompt it was decoded from (token counts), what the model wrote, how that
/// was read, what happened, and how long each part took.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
// Steps kept by an older version lack the newer fields.
#[serde(default)]
pub struct StepRecord {
    pub index: usize,
    /// Tokens in the prompt, and how many of them were reused from the KV cache.
    pub prompt_tokens: usize,
    pub cached_tokens: usize,
    /// The raw model output.
    pub output: String,
    pub thought: String,
    pub action: Option<ActionRecord>,
    pub final_answer: Option<String>,
    pub observation: Option<String>,
    /// The items the observation shows (files, issues, pull requests, commits), as the tool
    /// located them: what a shell links, and what the run has seen.
    pub items: Vec<Locator>,
    /// A final answer's citations: items the run saw, as the model chose them (the grammar
    /// offers only those).
    pub citations: Vec<Locator>,
    /// What a final answer names (in its text, or cites without a grammar) that the run
    /// never saw: an issue, commit or file the model may have invented.
    pub unseen: Vec<String>,
    /// Burrow took this step itself, not the model: the search of the workspace with the
    /// task before the model's first step.
    pub automatic: bool,
    /// A check of one of the leading matches: the model said whether it answers the task.
    pub check: Option<Check>,
    /// Set when the step did not parse, or its tool call failed or was refused.
    pub error: Option<String>,
    /// The plan after the step.
    pub todos: Vec<TodoItem>,
    /// Tokens the model wrote.
    pub generated_tokens: usize,
    /// Preparing the model call (rendering, tokenizing, compiling the grammar); part of
    /// `ttft_ms`.
    pub setup_ms: f64,
    pub ttft_ms: f64,
    pub decode_ms: f64,
    pub tool_ms: f64,
    /// The step was decoded without its grammar: the model is served remotely by a server
    /// that takes no grammar of this form, so the output was read as it came.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unconstrained: bool,
    /// The call failed as it would again with the same arguments: the loop guard refuses it
    /// from then on, in a resumed run too (which forgot it, and made the call again).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub call_failed: bool,
    /// How this step's final answer ended the run. A run killed after keeping the step and
    /// before finishing its record ends so when it is continued, with this answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<RunStatus>,
}

/// What a check step decided: whether `item`, just opened, answers the task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub item: Locator,
    pub answers: bool,
}

/// A run as kept: its task, outcome and steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: i64,
    pub task: String,
    pub model: Option<String>,
    pub protocol: String,
    pub status: RunStatus,
    pub final_answer: Option<String>,
    pub error: Option<String>,
    /// Unix seconds.
    pub started_at: i64,
    pub ended_at: Option<i64>,
    pub steps: Vec<StepRecord>,
}
