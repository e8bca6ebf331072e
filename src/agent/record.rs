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
    /// Who took the step, and in which phase of the run.
    pub origin: Origin,
    /// Set when the step did not parse, or its tool call failed or was refused.
    pub error: Option<String>,
    /// The step's final answer was refused (too early, or the plan still open): the next
    /// one is not refused for the plan again.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub answer_refused: bool,
    /// The call's result was the same as the last time, still in the prompt, so the
    /// observation points to it rather than repeating it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub repeated: bool,
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

/// Who took a step: the model, or Burrow itself in the run's opening (a search with the task,
/// then the leading matches opened one by one, each checked by the model apart).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "by")]
pub enum Origin {
    /// The model's own step in the run's protocol.
    #[default]
    Model,
    /// Burrow's search of the workspace with the task, before the model's first step.
    Search,
    /// A call the model chose apart from the run under a grammar of the workspace's values:
    /// the run's first (`agent/route.rs`: a list, a count, a history, a definition, or the
    /// search with the task), or a name of an opened file followed to its definition
    /// (`agent/follow.rs`).
    Route,
    /// Burrow's opening of one of that search's leading matches.
    Open,
    /// The model's yes or no, asked apart from the run, on the match just opened.
    Check(Check),
}

impl StepRecord {
    /// A step as the database keeps it, written by this version or an older one. Older ones
    /// said who took a step with `automatic` and `check`, and a refused answer or a repeated
    /// result only in the text of `error` and `observation`.
    pub fn from_kept_json(json: &str) -> Result<StepRecord, serde_json::Error> {
        let mut value: Value = serde_json::from_str(json)?;
        if let Value::Object(fields) = &mut value {
            if !fields.contains_key("origin") {
                upgrade_older_step(fields);
            }
        }
        serde_json::from_value(value)
    }

    /// Whether Burrow took this step itself (its search, or an opening of a match).
    pub fn by_burrow(&self) -> bool {
        matches!(self.origin, Origin::Search | Origin::Open)
    }

    /// Whether the step's call was written by the model: its own step, or a route to a tool
    /// with its arguments. A route to the lookup is the model's choice, but the call is
    /// Burrow's search with the task.
    pub fn call_by_model(&self) -> bool {
        match self.origin {
            Origin::Model => true,
            Origin::Route => self
                .action
                .as_ref()
                .is_some_and(|a| a.tool != crate::agent::first::SEARCH),
            _ => false,
        }
    }

    /// What the step's check decided, when it was one.
    pub fn check(&self) -> Option<&Check> {
        match &self.origin {
            Origin::Check(c) => Some(c),
            _ => None,
        }
    }
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

/// How the texts of older steps said what `answer_refused` and `repeated` now say.
const OLDER_ANSWER_REFUSED: &str = "final answer refused";
const OLDER_REPEATED: &str = "The same result as the last time";

/// Gives a step kept before `origin` its typed fields, from the flags and texts it has.
fn upgrade_older_step(fields: &mut Map<String, Value>) {
    let automatic = fields.remove("automatic").and_then(|v| v.as_bool()) == Some(true);
    let check = fields.remove("check").filter(|c| !c.is_null());
    let searched = fields
        .get("action")
        .and_then(|a| a.get("tool"))
        .and_then(Value::as_str)
        == Some(crate::agent::first::SEARCH);
    let origin = match (check, automatic) {
        (Some(Value::Object(mut check)), _) => {
            check.insert("by".into(), Value::from("check"));
            Value::Object(check)
        }
        (_, true) if searched => serde_json::json!({"by": "search"}),
        (_, true) => serde_json::json!({"by": "open"}),
        _ => serde_json::json!({"by": "model"}),
    };
    fields.insert("origin".into(), origin);
    let text_starts = |field: &str, start: &str| {
        fields
            .get(field)
            .and_then(Value::as_str)
            .is_some_and(|t| t.starts_with(start))
    };
    let refused = text_starts("error", OLDER_ANSWER_REFUSED);
    let repeated = text_starts("observation", OLDER_REPEATED);
    fields.insert("answer_refused".into(), Value::Bool(refused));
    fields.insert("repeated".into(), Value::Bool(repeated));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_kept_by_older_versions_read_with_their_origin() {
        let read = |json: &str| StepRecord::from_kept_json(json).unwrap();
        let search = read(r#"{"index":0,"automatic":true,"action":{"tool":"search","args":{}}}"#);
        assert_eq!(search.origin, Origin::Search);
        let open = read(r#"{"index":1,"automatic":true,"action":{"tool":"get_issue","args":{}}}"#);
        assert_eq!(open.origin, Origin::Open);
        let check = read(
            r#"{"index":2,"check":{"item":{"kind":"issue","number":7,"repo":"o/r"},"answers":false}}"#,
        );
        assert_eq!(check.check().map(|c| c.answers), Some(false));
        let model = read(r#"{"index":3,"error":"final answer refused: too early"}"#);
        assert_eq!(model.origin, Origin::Model);
        assert!(model.answer_refused);
        let repeated = read(
            r#"{"index":4,"observation":"The same result as the last time search was called"}"#,
        );
        assert!(repeated.repeated && !repeated.answer_refused);
    }

    #[test]
    fn a_step_reads_back_as_it_was_written() {
        let step = StepRecord {
            index: 2,
            origin: Origin::Check(Check {
                item: Locator::commit("r", "abc123"),
                answers: true,
            }),
            answer_refused: true,
            ..Default::default()
        };
        let json = serde_json::to_string(&step).unwrap();
        assert!(json.contains(r#""origin":{"by":"check""#), "{json}");
        assert_eq!(StepRecord::from_kept_json(&json).unwrap(), step);
    }
}
