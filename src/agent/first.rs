//! The steps Burrow takes before the model's first: a search of the workspace with the task,
//! so the model starts from evidence rather than from what it remembers, then the opening of
//! the best match, so it checks that item against the task rather than choosing among titles.
//! Each is a real step: recorded, streamed, kept, and replayed to the model in its own
//! protocol's format (which also shows the model well-formed steps before it writes any).

use serde_json::{json, Map, Value};

use super::events::{AgentError, AgentEvent};
use super::protocol::Action;
use super::record::StepRecord;
use super::run::{Agent, Next};
use super::state::RunState;
use crate::tools::Locator;

/// The tool the first step calls.
pub const SEARCH: &str = "search";

const THOUGHT: &str = "First I search the workspace for the task.";

/// What the model is told after the first results: what it can do next, in a line.
const NEXT: &str = "These are the workspace's best matches for the task. If one answers it, \
     answer and cite it; to check one, open it; else search with other words or another kind.";

/// Characters of the task the search takes (a tool argument's bound under the grammars).
const QUERY_CHARS: usize = 300;

/// Results the first search shows: the item that answers is among search's first five for
/// three questions in four of the eval set, and each result shown is prefilled at every step.
const RESULTS: usize = 5;

impl Agent<'_> {
    /// Whether the run starts with Burrow's search: the setting is on and the run has the
    /// search tool.
    pub(super) fn searches_first(&self, state: &RunState) -> bool {
        self.config.search_first && state.active.iter().any(|n| n == SEARCH)
    }

    /// Searches the workspace with the task, as the run's first step.
    pub(super) fn search_first(
        &self,
        state: &mut RunState,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<Next, AgentError> {
        let action = Action {
            tool: SEARCH.to_string(),
            args: first_search(&state.task),
        };
        let record = self.own_step(state, THOUGHT, &action, on_event);
        self.call(state, record, vec![NEXT.to_string()], action, on_event)
    }

    /// The record of a step Burrow takes itself, started: its call written as the model
    /// would write it in the run's protocol.
    fn own_step(
        &self,
        state: &RunState,
        thought: &str,
        action: &Action,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> StepRecord {
        let index = state.steps.len();
        on_event(AgentEvent::StepStarted { index });
        StepRecord {
            index,
            output: self.config.protocol.write_call(thought, action),
            thought: thought.to_string(),
            automatic: true,
            ..Default::default()
        }
    }

    /// The call that opens the first search's best match, when the run is just past that
    /// search, it showed something, and the run has the tool that opens it. A small model
    /// shown only titles and snippets picks the wrong item more often than search's own first
    /// place (issue 22); shown the leading item whole, it checks it against the task.
    pub(super) fn opens_first(&self, state: &RunState) -> Option<Action> {
        let [first] = state.steps.as_slice() else {
            return None;
        };
        if !first.automatic || first.error.is_some() {
            return None;
        }
        let action = open_call(first.items.first()?)?;
        state.active.contains(&action.tool).then_some(action)
    }

    /// Opens the first search's best match, as the run's second step.
    pub(super) fn open_first(
        &self,
        state: &mut RunState,
        action: Action,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<Next, AgentError> {
        let record = self.own_step(state, OPEN_THOUGHT, &action, on_event);
        state.observation_cap = Some(OPENED_CHARS);
        let next = self.call(state, record, Vec::new(), action, on_event);
        state.observation_cap = None;
        next
    }
}

/// Characters of the best match Burrow opens: its head (an issue's title, state and opening
/// text; a commit's message and files; the lines around a match), which is where it says
/// whether it answers, at a third of the cost of a whole observation in prefill.
const OPENED_CHARS: usize = 1200;

const OPEN_THOUGHT: &str = "Then I open the best match to check it against the task.";

/// Lines of a file the opening shows before the line search matched, and in all: the match
/// with its context, not the file's licence header.
const LINES_BEFORE: usize = 5;
const LINES: usize = 40;

/// The call that opens `item` with the tool made for its kind.
fn open_call(item: &Locator) -> Option<Action> {
    let mut args = Map::new();
    let tool = match item {
        Locator::Issue { number, repo } | Locator::PullRequest { number, repo } => {
            args.insert("number".into(), json!(number));
            if let Some(r) = repo {
                args.insert("repo".into(), json!(r));
            }
            if matches!(item, Locator::Issue { .. }) {
                "get_issue"
            } else {
                "get_pull_request"
            }
        }
        Locator::File { path, line, repo } => {
            args.insert("path".into(), json!(path));
            if let Some(r) = repo {
                args.insert("repo".into(), json!(r));
            }
            if let Some(l) = line {
                let start = l.saturating_sub(LINES_BEFORE).max(1);
                args.insert("start_line".into(), json!(start));
                args.insert("end_line".into(), json!(start + LINES - 1));
            }
            "read_file"
        }
        Locator::Commit { hash, repo } => {
            args.insert("hash".into(), json!(hash));
            if let Some(r) = repo {
                args.insert("repo".into(), json!(r));
            }
            "show_commit"
        }
    };
    Some(Action {
        tool: tool.to_string(),
        args,
    })
}

/// The search a task starts with: its words, and the kinds of item it asks for when it names
/// them ("which commit", "is there an issue or pull request"), since ranking over every kind
/// buries a commit under the files that share its words. English only: a task in another
/// language is searched by its words alone.
pub fn first_search(task: &str) -> Map<String, Value> {
    let query: String = task.trim().chars().take(QUERY_CHARS).collect();
    let mut args = Map::new();
    args.insert("query".into(), Value::String(query));
    let kinds = asked_kinds(task);
    if !kinds.is_empty() {
        args.insert("kinds".into(), json!(kinds));
    }
    args.insert("limit".into(), json!(RESULTS));
    args
}

/// The kinds of item a question asks for: the noun right after "which", "what" or "is there"
/// (past an article and one adjective: "which merged pull request"), and a second one joined
/// by "or" ("an issue or pull request").
fn asked_kinds(task: &str) -> Vec<&'static str> {
    const KINDS: [(&[&str], &str); 5] = [
        (&["issue", "issues", "bug report", "report"], "issue"),
        (&["pull request", "pull requests", "pr", "prs"], "pr"),
        (&["commit", "commits"], "commit"),
        (&["document", "documents", "doc", "docs", "guide"], "doc"),
        (
            &[
                "source file",
                "source files",
                "file",
                "files",
                "function",
                "module",
            ],
            "code",
        ),
    ];
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    // The kind named at `at` (or one word later), and where its name ends.
    let kind_at = |at: usize| -> Option<(&'static str, usize)> {
        let mut at = at;
        while words
            .get(at)
            .is_some_and(|w| matches!(*w, "a" | "an" | "the"))
        {
            at += 1;
        }
        for start in [at, at + 1] {
            for (names, kind) in KINDS {
                for n in names {
                    let parts: Vec<&str> = n.split(' ').collect();
                    if words.get(start..start + parts.len()) == Some(parts.as_slice()) {
                        return Some((kind, start + parts.len()));
                    }
                }
            }
        }
        None
    };
    for (i, w) in words.iter().enumerate() {
        if !matches!(*w, "which" | "what" | "there") {
            continue;
        }
        if let Some((kind, end)) = kind_at(i + 1) {
            let mut kinds = vec![kind];
            if words.get(end) == Some(&"or") {
                if let Some((other, _)) = kind_at(end + 1) {
                    if other != kind {
                        kinds.push(other);
                    }
                }
            }
            return kinds;
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_match_is_opened_with_the_tool_made_for_it() {
        let call = |item: Locator| {
            let a = open_call(&item).unwrap();
            (a.tool, Value::Object(a.args))
        };
        assert_eq!(
            call(Locator::issue_or_pr("o/r", 7, true)),
            (
                "get_pull_request".into(),
                json!({"number": 7, "repo": "o/r"})
            )
        );
        assert_eq!(call(Locator::issue_or_pr("o/r", 7, false)).0, "get_issue");
        // Around the line search matched, not from the file's licence header.
        assert_eq!(
            call(Locator::file("r", "src/a.rs", Some(120))),
            (
                "read_file".into(),
                json!({"path": "src/a.rs", "repo": "r", "start_line": 115, "end_line": 154})
            )
        );
        assert_eq!(
            call(Locator::file("r", "README.md", Some(2))).1["start_line"],
            1
        );
        assert_eq!(
            call(Locator::commit("r", "0123456789abcdef")),
            (
                "show_commit".into(),
                json!({"hash": "0123456789abcdef", "repo": "r"})
            )
        );
    }

    #[test]
    fn a_question_that_names_a_kind_searches_that_kind() {
        let kinds = |t: &str| asked_kinds(t);
        assert_eq!(kinds("Which commit fixed the hang?"), ["commit"]);
        assert_eq!(
            kinds("Which merged pull request makes it quit with an error?"),
            ["pr"]
        );
        assert_eq!(
            kinds("The file is written without a suffix. Is there an issue or pull request about this?"),
            ["issue", "pr"]
        );
        assert_eq!(kinds("Which source file walks the regex?"), ["code"]);
        // The thing asked for, not a thing named after it.
        assert_eq!(
            kinds("Which commit dropped the ag ignore file?"),
            ["commit"]
        );
        // Named, but not asked for.
        assert!(
            kinds("Where does the project say whether agents may open pull requests?").is_empty()
        );
        assert!(kinds("how does the walker skip hidden files").is_empty());
        let args = first_search("  Which document explains the long paths?  ");
        assert_eq!(
            Value::Object(args),
            json!({"query": "Which document explains the long paths?", "kinds": ["doc"], "limit": 5})
        );
    }
}
