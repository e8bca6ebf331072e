//! The steps Burrow takes before the model's first: a search of the workspace with the task,
//! so the model starts from evidence rather than from what it remembers, then the opening of
//! the best match, so it checks that item against the task rather than choosing among titles.
//! Each is a real step: recorded, streamed, kept, and replayed to the model in its own
//! protocol's format (which also shows the model well-formed steps before it writes any).

use crate::workspace::search::asked_kinds;
use serde_json::{json, Map, Value};

use std::time::Instant;

use super::decision::CallShape;
use super::events::{AgentError, AgentEvent};
use super::protocol::Action;
use super::record::{Check, Origin, StepRecord};
use super::run::{Agent, Next};
use super::state::RunState;
use super::step::decoded;
use crate::llm::engine::{CancelToken, GenerateRequest, Prompt, SamplingParams, StopReason};
use crate::llm::grammar::Grammar;
use crate::llm::template::ChatMessage;
use crate::notes;
use crate::tools::locator::LineWindow;
use crate::tools::Locator;

/// The tool the first step calls.
pub const SEARCH: &str = "search";

const THOUGHT: &str = "First I search the workspace for the task.";

/// Characters of the task the search takes (a tool argument's bound under the grammars).
const QUERY_CHARS: usize = 300;

/// Results the first search shows: the item that answers is among search's first five for
/// three questions in four of the eval set, and each result shown is prefilled at every step.
const RESULTS: usize = 5;

impl Agent<'_> {
    /// Whether the run starts with Burrow's search: the setting is on, the run has the search
    /// tool, and a step is left after it for the model to answer in (at a limit of one step,
    /// the search took it and the run ended with no answer).
    pub(super) fn searches_first(&self, state: &RunState) -> bool {
        self.config.search_first && state.max_steps >= 2 && state.active.iter().any(|n| n == SEARCH)
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
        let record = self.own_step(state, Origin::Search, THOUGHT, &action, on_event);
        let how = CallShape::default();
        self.call(
            state,
            record,
            vec![notes::AFTER_SEARCH.to_string()],
            action,
            how,
            on_event,
        )
    }

    /// The record of a step Burrow takes itself, started: its call written as the model
    /// would write it in the run's protocol.
    fn own_step(
        &self,
        state: &RunState,
        origin: Origin,
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
            origin,
            ..Default::default()
        }
    }

    /// The item Burrow opens next, when the run is just past its first search (the best
    /// match), or past a check that said no (the next match): each of the search's first
    /// `check_matches` distinct items once, while the step limit leaves room to open it,
    /// check it and answer. A small model shown only titles and snippets picks the wrong item
    /// more often than search's own first place (issue 22); shown the leading item whole, it
    /// checks it against the task.
    pub(super) fn next_to_open(&self, state: &RunState) -> Option<Action> {
        self.next_to_open_in(state, None)
    }

    /// `refused`: an item the model is saying no to in a check not yet recorded, counted as
    /// the run's last step.
    fn next_to_open_in(&self, state: &RunState, refused: Option<&Locator>) -> Option<Action> {
        let steps = &state.steps;
        let first = steps.first()?;
        if !searched(first) {
            return None;
        }
        let taken = steps.len() + usize::from(refused.is_some());
        let after_search = taken == 1;
        let rejected = refused.is_some()
            || steps
                .last()
                .and_then(StepRecord::check)
                .is_some_and(|c| !c.answers);
        if !after_search && !rejected {
            return None;
        }
        // Room to open, check and answer; else (a short step limit) the best match alone is
        // opened, unchecked, as long as the model can still answer after it.
        let checks = self.checks_fit(taken, state.max_steps);
        let unchecked_fits = after_search && taken + 2 <= state.max_steps;
        if !(checks || unchecked_fits) {
            return None;
        }
        let opened: Vec<&Locator> = steps
            .iter()
            .filter_map(|s| s.check().map(|c| &c.item))
            .chain(refused)
            .collect();
        let mut candidates: Vec<&Locator> = Vec::new();
        for item in &first.items {
            if !candidates.iter().any(|c| same_item(c, item)) {
                candidates.push(item);
            }
        }
        let item = candidates
            .into_iter()
            .take(if checks { self.check_matches } else { 1 })
            .find(|c| !opened.iter().any(|o| same_item(o, c)))?;
        let action = open_call(item);
        state.active.contains(&action.tool).then_some(action)
    }

    /// Opens one of the first search's leading matches (see `next_to_open`).
    pub(super) fn open_match(
        &self,
        state: &mut RunState,
        action: Action,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<Next, AgentError> {
        let thought = if state.steps.len() == 1 {
            OPEN_THOUGHT
        } else {
            OPEN_NEXT_THOUGHT
        };
        let cap = match action.tool.as_str() {
            "get_issue" | "get_pull_request" | "show_commit" => HEADED_OPENED_CHARS,
            _ => OPENED_CHARS,
        };
        let how = CallShape {
            cap: Some(cap),
            checked: self.checks_fit(state.steps.len(), state.max_steps),
        };
        // Once a match is opened, the results it came from are shown by their head lines
        // alone, without the note on what to do with them: the opening holds what the answer
        // needs, and the snippets and notes were about 350 of the 1,150 tokens the default
        // model's answer step read before its first token.
        if state.steps.len() == 1 {
            if let Some(search) = state.turns.last_mut() {
                let heads = crate::tools::workspace::without_snippets(&search.observation);
                search.observation = heads
                    .lines()
                    .filter(|l| l.trim() != notes::AFTER_SEARCH)
                    .collect::<Vec<_>>()
                    .join("\n");
            }
        }
        let record = self.own_step(state, Origin::Open, thought, &action, on_event);
        self.call(state, record, Vec::new(), action, how, on_event)
    }

    /// Whether, with `taken` steps taken, a match opened next is checked: checks are on and
    /// the step limit leaves room to open, check and answer.
    fn checks_fit(&self, taken: usize, max_steps: usize) -> bool {
        self.check_matches > 0 && taken + 3 <= max_steps
    }

    /// The item to check, when the last step is Burrow's opening of a match that showed it
    /// for a check (see `checks_fit`).
    pub(super) fn check_due(&self, state: &RunState) -> Option<Locator> {
        if !self.checks_fit(state.steps.len().saturating_sub(1), state.max_steps) {
            return None;
        }
        Self::opened_match(state).cloned()
    }

    /// The model says whether `item`, just opened, answers the task: one word under a
    /// grammar, `yes` or `no`. On yes its next step is the final answer, citing the item; on
    /// no Burrow opens the next match, and past the last one the model goes on by itself.
    ///
    /// The question is asked apart from the run, in a conversation of its own (the task and
    /// the item): asked at the end of the run's prompt, Qwen2.5-Coder-1.5B said no to right
    /// items it accepted when asked apart (issue 22's eval: 3 of its first 16 questions lost).
    /// The checks come before the model's first step of the run, whose warm start then
    /// brings back the system prompt's state.
    pub(super) fn check(
        &self,
        state: &mut RunState,
        item: Locator,
        cancel: &CancelToken,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<Next, AgentError> {
        let index = state.steps.len();
        on_event(AgentEvent::StepStarted { index });
        let cite = item.cite();
        let shown = state
            .steps
            .last()
            .and_then(|s| s.observation.as_deref())
            .unwrap_or("");
        let question = format!(
            "Question: {}\n\nItem {cite}:\n{shown}\n\nDoes this item answer the question? \
             Reply yes or no.",
            state.task
        );
        // The task and the item are data; only Burrow's own instruction is not.
        let prompt = Prompt::Chat {
            messages: vec![
                ChatMessage::system(CHECK_SYSTEM),
                ChatMessage::user(question),
            ],
            tools: None,
            untrusted: vec![1],
        };
        let prompt = self.model.prepare(prompt)?.prompt;
        // Greedy without the repetition penalty: "yes" and "no" are in the text it read.
        let mut request = GenerateRequest::new(prompt)
            .sampling(SamplingParams::greedy())
            .max_tokens(CHECK_TOKENS);
        if self.config.grammar {
            request = request.grammar(Grammar::Gbnf(CHECK_GRAMMAR.to_string()));
        }
        let started = Instant::now();
        let mut on_token = |t: &str| {
            on_event(AgentEvent::Token {
                index,
                text: t.to_string(),
            })
        };
        let (output, usage, stop) = self.generate(request, cancel, &mut on_token)?;
        if stop == StopReason::Cancelled || cancel.is_cancelled() {
            return Ok(Next::cancelled());
        }
        let mut record = decoded(index, output, &usage, started);
        let answers = says_yes(&record.output);
        let observation = if answers {
            notes::answer_citing(&cite)
        } else if self.next_to_open_after_no(state, &item) {
            notes::NEXT_MATCH.to_string()
        } else {
            notes::NO_LEADING_MATCH.to_string()
        };
        record.thought = format!("Does {cite} answer the task?");
        record.origin = Origin::Check(Check { item, answers });
        self.finish_step(state, record, None, Some(observation), on_event)
    }

    /// Whether a "no" to `item` leads Burrow to open another match.
    fn next_to_open_after_no(&self, state: &RunState, item: &Locator) -> bool {
        self.next_to_open_in(state, Some(item)).is_some()
    }

    /// The item Burrow opened at the last step, if it did: checked next when checks fit
    /// (`check_due`), else cited by the model's answer.
    pub(super) fn opened_match(state: &RunState) -> Option<&Locator> {
        let [first, .., last] = state.steps.as_slice() else {
            return None;
        };
        let opened = searched(first) && last.origin == Origin::Open && last.error.is_none();
        if opened {
            last.items.first()
        } else {
            None
        }
    }

    /// The match Burrow just opened, when the run checks none (`check_matches` 0): the
    /// model's next step is the answer that cites it. Going on past it would be the model
    /// saying no to it, and checks are off for a model whose no is said to right matches as
    /// often as to wrong ones (Qwen2.5-Coder-0.5B). Free to go on past the right commit, that
    /// model searched the code with the text it had been shown, to the step limit; in the
    /// protocols that write a thought first it copied Burrow's steps and opened result after
    /// result.
    pub(super) fn answered_unchecked<'s>(&self, state: &'s RunState) -> Option<&'s Locator> {
        Self::opened_match(state).filter(|_| self.check_matches == 0)
    }

    /// The item the model said answers the task, when the last step was that check.
    pub(super) fn confirmed(state: &RunState) -> Option<&Locator> {
        let check = state.steps.last()?.check()?;
        check.answers.then_some(&check.item)
    }
}

/// Whether a run's first step searched by words, so its leading matches are opened next:
/// Burrow's search with the task, or a route to a search with words of the model's (a list by
/// filters alone is read as it is).
fn searched(first: &StepRecord) -> bool {
    let words = |a: &crate::agent::record::ActionRecord| {
        a.args
            .get("query")
            .and_then(Value::as_str)
            .is_some_and(|q| !q.trim().is_empty())
    };
    first.error.is_none()
        && match first.origin {
            Origin::Search => true,
            Origin::Route => first.action.as_ref().is_some_and(words),
            _ => false,
        }
}

/// Whether two of a search's results are the same item: a file's chunks are one file.
fn same_item(a: &Locator, b: &Locator) -> bool {
    match (a, b) {
        (
            Locator::File {
                path: pa, repo: ra, ..
            },
            Locator::File {
                path: pb, repo: rb, ..
            },
        ) => pa == pb && ra == rb,
        _ => a == b,
    }
}

/// The system message of a check's conversation.
const CHECK_SYSTEM: &str =
    "You check whether an item from a code workspace answers a user's question.";

/// Whether a check's output is a yes. Without a grammar (a server that takes none) a model
/// may write anything: only a yes is taken as one, dressed as it may be (`**Yes**`, `"yes"`,
/// which read as no).
fn says_yes(output: &str) -> bool {
    output
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase()
        .starts_with("yes")
}

/// What a check may write, and the tokens it may take.
// GBNF, which every llama.cpp engine takes, in-process or as a remote llama-server.
const CHECK_GRAMMAR: &str = "root ::= \"yes\" | \"no\"\n";
const CHECK_TOKENS: usize = 3;

const OPEN_NEXT_THOUGHT: &str = "Then I open the next match to check it against the task.";

/// Characters of the best match Burrow opens: its head (an issue's title, state and opening
/// text; a commit's message and files; the lines around a match), which is where it says
/// whether it answers, at a third of the cost of a whole observation in prefill.
const OPENED_CHARS: usize = 1200;

/// The same for an issue, a pull request or a commit, whose head line already names what a
/// lookup answers with (a title and who fixed, merged and approved it; a summary and the first
/// release): the start of the rest is enough to check it against the task, and the rest was a
/// fifth of the answer step's prefill.
const HEADED_OPENED_CHARS: usize = 800;

const OPEN_THOUGHT: &str = "Then I open the best match to check it against the task.";

/// Lines of a file the opening shows before the line search matched, and in all: the match
/// with its context, not the file's licence header.
const LINES_BEFORE: usize = 5;
const LINES: usize = 40;

/// The call that opens `item` with the tool made for its kind.
fn open_call(item: &Locator) -> Action {
    let window = LineWindow {
        before: LINES_BEFORE,
        lines: Some(LINES),
    };
    let (tool, args) = item.open_call(window);
    Action {
        tool: tool.to_string(),
        args,
    }
}

/// The search a task starts with: its words, and the kinds of item it asks for when it names
/// them ("which commit", "is there an issue or pull request"), since ranking over every kind
/// buries a commit under the files that share its words. English only: a task in another
/// language is searched by its words alone.
pub fn first_search(task: &str) -> Map<String, Value> {
    let mut args = Map::new();
    args.insert("query".into(), Value::String(task_query(task)));
    let kinds: Vec<&str> = asked_kinds(task).iter().map(|k| k.as_str()).collect();
    if !kinds.is_empty() {
        args.insert("kinds".into(), json!(kinds));
    }
    args.insert("limit".into(), json!(RESULTS));
    args
}

/// The task as the words a search takes.
pub(super) fn task_query(task: &str) -> String {
    task.trim().chars().take(QUERY_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_match_is_opened_with_the_tool_made_for_it() {
        let call = |item: Locator| {
            let a = open_call(&item);
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
        let args = first_search("  Which document explains the long paths?  ");
        assert_eq!(
            Value::Object(args),
            json!({"query": "Which document explains the long paths?", "kinds": ["doc"], "limit": 5})
        );
    }

    /// Found in review: without a grammar, `**Yes**` and `"yes"` read as no.
    #[test]
    fn a_dressed_yes_is_a_yes() {
        for yes in ["yes", "Yes.", "**Yes**", "\"yes\"", " YES"] {
            assert!(super::says_yes(yes), "{yes:?}");
        }
        for no in ["no", "**No**", "", "_no_"] {
            assert!(!super::says_yes(no), "{no:?}");
        }
    }
}
