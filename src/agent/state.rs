//! What a run carries from step to step: the task, the turns the prompt replays, the plan, the
//! steps taken, the toolbelt and the calls made (for the loop guard).

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::events::AgentEvent;
use super::prompt::Turn;
use super::protocol::{Action, TodoChange};
use super::record::StepRecord;
use super::store::RunHandle;
use super::todo::{TodoError, TodoList};
use crate::tools::locator::{mentions, Mention};
use crate::tools::Locator;

pub(super) struct RunState {
    pub task: String,
    pub turns: Vec<Turn>,
    pub summary: Option<String>,
    pub plan: TodoList,
    pub steps: Vec<StepRecord>,
    /// Tools in the toolbelt (all of them when the toolbelt is off).
    pub active: Vec<String>,
    pub toolbelt: bool,
    /// Calls made, by tool and arguments.
    pub calls: HashMap<String, CallMemo>,
    /// Calls that failed, by tool and arguments, with their error.
    pub failed: HashMap<String, String>,
    pub handle: Option<RunHandle>,
    /// The step limit: the configured one, or more for a resumed run that had as many steps
    /// already (it ended at once, with no answer and no way to continue it).
    pub max_steps: usize,
    /// The system message, rendered at the first step and then kept: it starts every prompt,
    /// so it must not change for the KV cache to be reused. Tools the toolbelt adds later are
    /// described in the observation that adds them.
    pub system: Option<String>,
    /// The model was asked whether to follow a name of an opened file (`agent/follow.rs`):
    /// it is asked once a run.
    pub followed: bool,
}

/// A call the run made, for the loop guard and for results it need not show twice.
pub(super) struct CallMemo {
    pub count: usize,
    /// The last result, as the model was shown it.
    pub result: String,
    /// The step whose observation shows that result in full.
    pub step: usize,
}

/// Lines an answer may quote at most, and characters of each.
const QUOTES: usize = 40;
const QUOTE_CHARS: usize = 240;

impl RunState {
    pub fn new(
        task: &str,
        active: Vec<String>,
        toolbelt: bool,
        handle: Option<RunHandle>,
        max_steps: usize,
    ) -> Self {
        RunState {
            task: task.to_string(),
            turns: Vec::new(),
            summary: None,
            plan: TodoList::new(),
            steps: Vec::new(),
            active,
            toolbelt,
            calls: HashMap::new(),
            failed: HashMap::new(),
            handle,
            max_steps,
            system: None,
            followed: false,
        }
    }

    /// Whether a step's observation is still in the prompt: summaries fold the older ones.
    pub fn shows_step(&self, step: usize) -> bool {
        step >= self.steps.len().saturating_sub(self.turns.len()) && step < self.steps.len()
    }

    /// Changes the plan, checked whole: a bad change leaves it as it was.
    pub fn change_plan(
        &mut self,
        change: &TodoChange,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<(), TodoError> {
        match change {
            TodoChange::Patch(p) => self.plan.apply_patch(p)?,
            TodoChange::Write(w) => self.plan.apply_write(w)?,
        }
        on_event(AgentEvent::TodoChanged {
            items: self.plan.items().to_vec(),
        });
        Ok(())
    }

    /// Every item the run's observations showed, each once, in the order first seen.
    /// The lines an answer may quote (see `AgentConfig::quote_answers`): those of the last
    /// tool result's head, up to its first blank line (an opened issue's title, state,
    /// reviews and fixes, not its description; a commit's hash, author and releases, not its
    /// diff), or, where it has none, its first `QUOTES` lines (a list, a file's lines); without
    /// Burrow's notes, a results page's header, cut marks or match marks, each at most
    /// `QUOTE_CHARS` long. An answer starts with the first. Offered the
    /// description too, Qwen2.5-Coder-0.5B quoted it instead of who approved the change.
    pub fn quotable(&self) -> Vec<String> {
        // A tool's result: not Burrow's note on a refused step, which an answer quoted whole
        // ("The final answer was refused: the plan still has open items…").
        let Some(text) = self
            .steps
            .iter()
            .rev()
            .filter(|s| s.action.is_some() && s.error.is_none())
            .find_map(|s| s.observation.as_deref())
        else {
            return Vec::new();
        };
        let lines: Vec<&str> = text.lines().collect();
        let head_ends = lines.iter().position(|l| l.trim().is_empty());
        let lines = match head_ends {
            Some(n) if n >= 1 => &lines[..n],
            _ => &lines[..],
        };
        let mut out: Vec<String> = Vec::new();
        for line in lines {
            let line = crate::notes::without_match_marks(line.trim());
            let lower = line.to_lowercase();
            let burrows = crate::notes::GUIDANCE.iter().any(|g| lower.starts_with(g))
                || crate::notes::cut_marks().is_some_and(|re| re.is_match(&line))
                || crate::tools::workspace::is_results_header(&line);
            if line.chars().count() < 3 || burrows {
                continue;
            }
            let line: String = line.chars().take(QUOTE_CHARS).collect();
            let line = line.trim_end().to_string();
            if !out.contains(&line) {
                out.push(line);
            }
            if out.len() >= QUOTES {
                break;
            }
        }
        out
    }

    pub fn seen(&self) -> Vec<Locator> {
        let mut seen: Vec<Locator> = Vec::new();
        for item in self.steps.iter().flat_map(|s| &s.items) {
            if !seen.contains(item) {
                seen.push(item.clone());
            }
        }
        seen
    }

    /// The items a tool may open: those the run saw, then those the task names (`#12`, a
    /// commit hash, a path), which the user may ask about before any search shows them.
    pub fn openable(&self) -> Vec<Locator> {
        let mut items = self.seen();
        for m in mentions(&self.task) {
            let item = match m {
                Mention::Number(number) => Locator::Issue { number, repo: None },
                // Either kind: `owner/repo#12` is how GitHub and the tools write a pull
                // request too, which the task could not open as an issue of the repository.
                Mention::RepoNumber { repo, number } => {
                    let pr = Locator::PullRequest {
                        number,
                        repo: Some(repo.clone()),
                    };
                    if !items.contains(&pr) {
                        items.push(pr);
                    }
                    Locator::Issue {
                        number,
                        repo: Some(repo),
                    }
                }
                Mention::Hash(hash) => Locator::Commit { hash, repo: None },
                Mention::Path(path) => Locator::File {
                    path,
                    line: None,
                    repo: None,
                },
            };
            if !items.contains(&item) {
                items.push(item);
            }
        }
        items
    }

    /// The calls the run's steps made, each once.
    pub fn calls_made(&self) -> Vec<Action> {
        let mut made: Vec<Action> = Vec::new();
        for a in self.steps.iter().filter_map(|s| s.action.as_ref()) {
            let call = Action {
                tool: a.tool.clone(),
                args: a.args.clone(),
            };
            if !made.contains(&call) {
                made.push(call);
            }
        }
        made
    }

    /// Whether the step before this one was a final answer refused.
    pub fn last_answer_refused(&self) -> bool {
        self.steps.last().is_some_and(|s| s.answer_refused)
    }

    pub fn run_id(&self) -> Option<i64> {
        self.handle.as_ref().map(|h| h.id)
    }
}

/// The loop guard's key for a call: the tool and its arguments.
pub(super) fn call_key(tool: &str, args: &Map<String, Value>) -> String {
    format!("{tool}\u{0}{}", Value::Object(args.clone()))
}

/// The plan as an observation shows it: nothing until there is one.
pub(super) fn plan_text(plan: &TodoList) -> String {
    if plan.is_empty() {
        String::new()
    } else {
        plan.render()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::record::ActionRecord;

    #[test]
    fn an_answer_quotes_the_last_tool_result_not_a_refusal() {
        let mut state = RunState::new("Which PR fixed it?", Vec::new(), false, None, 6);
        state.steps.push(StepRecord {
            action: Some(ActionRecord {
                tool: "get_pull_request".into(),
                args: Map::new(),
            }),
            observation: Some("Pull request #757: Add wallet name\nApproved by: A\n\nBody".into()),
            ..Default::default()
        });
        state.steps.push(StepRecord {
            final_answer: None,
            error: Some("final answer refused: the plan has open items".into()),
            observation: Some(
                "The final answer was refused: the plan still has open items.".into(),
            ),
            answer_refused: true,
            ..Default::default()
        });
        assert_eq!(
            state.quotable(),
            ["Pull request #757: Add wallet name", "Approved by: A"]
        );
    }
}
