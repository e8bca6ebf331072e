//! `burrow eval` on tasks: a task's answer has parts (an item, a person, a tag, a number, a
//! value, a yes or no), every one required. A run counts only when its answer states each
//! part and does not list candidates in place of an answer.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::eval::{read_set, Accepted, EvalError};
use super::{App, AppError};
use crate::agent::meta::is_meta;
use crate::agent::record::{RunStatus, StepRecord};
use crate::agent::{AgentConfig, AgentEvent, RunOutcome};
use crate::llm::engine::LanguageModel;
use crate::tools::locator::mentions;

/// What a part of an answer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartKind {
    Issue,
    Pr,
    Commit,
    File,
    /// A GitHub login or a git author's name.
    Person,
    /// A release's tag, as written (`14.0.0`).
    Tag,
    /// A whole number, in digits or (up to twenty) in words.
    Number,
    /// A value as the code or the docs write it (`--`, `100 MiB`).
    Value,
    /// `yes` or `no`.
    Verdict,
}

impl PartKind {
    fn is_item(self) -> bool {
        matches!(
            self,
            PartKind::Issue | PartKind::Pr | PartKind::Commit | PartKind::File
        )
    }
}

/// One part of a task's answer, and every answer that counts for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    pub what: PartKind,
    pub accept: Vec<String>,
}

/// A task whose answer has parts, all required.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub id: String,
    #[serde(default)]
    pub split: String,
    #[serde(default)]
    pub kind: String,
    pub task: String,
    pub parts: Vec<Part>,
    /// The evidence read to verify the answer.
    #[serde(default)]
    pub why: String,
}

/// Whether a set's file holds tasks (objects with `parts`) rather than questions.
pub fn is_task_set(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("//"))
        .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .is_some_and(|v| v.get("parts").is_some())
}

/// Reads a task set: one JSON object per line (blank lines and `//` comments skipped).
pub fn read_tasks(path: &Path) -> Result<Vec<Task>, EvalError> {
    read_set(path, |t: &Task| {
        if t.task.trim().is_empty() {
            return Err(format!("{}: the task is empty", t.id));
        }
        if t.parts.is_empty() {
            return Err(format!("{}: the task has no parts", t.id));
        }
        for p in &t.parts {
            if p.accept.iter().all(|a| a.trim().is_empty()) {
                return Err(format!("{}: a {:?} part accepts nothing", t.id, p.what));
            }
            let bad = p.accept.iter().find(|a| match p.what {
                k if k.is_item() => Accepted::parse(a).is_none(),
                PartKind::Number => a.parse::<u64>().is_err(),
                PartKind::Verdict => !matches!(a.as_str(), "yes" | "no"),
                _ => false,
            });
            if let Some(bad) = bad {
                return Err(format!(
                    "{}: {bad:?} is no answer for a {:?} part",
                    t.id, p.what
                ));
            }
        }
        Ok(t.id.clone())
    })
}

/// One task done by one model under one protocol.
#[derive(Debug, Clone, Serialize)]
pub struct ScoredTask {
    pub id: String,
    pub kind: String,
    pub model: String,
    pub protocol: String,
    pub run_id: Option<i64>,
    pub status: RunStatus,
    /// Every part is in the answer, and it lists no candidates in place of one.
    pub correct: bool,
    /// Whether each part is in the answer, in the task's order.
    pub parts: Vec<bool>,
    /// The answer named more items, or more numbers, than the task asks for.
    pub too_many: bool,
    /// The workspace tools the model called itself, in order (Burrow's own steps left out).
    pub model_calls: Vec<String>,
    /// The model called a workspace tool with arguments that are not the task's own words.
    pub model_acted: bool,
    /// The model wrote a workspace call itself, whatever its arguments (a route to the lookup
    /// is Burrow's call): a filter or a name copied from the task counts here, not in
    /// `model_acted`.
    pub model_called: bool,
    pub steps: usize,
    /// Items the answer names that the run never saw.
    pub unseen: Vec<String>,
    pub wall_s: f64,
    pub answer: Option<String>,
}

/// Scores a run's outcome against a task. `files_ending`: how many of the workspace's files
/// a path's end names.
pub fn score_task(
    t: &Task,
    (model, protocol): (&str, &str),
    o: &RunOutcome,
    wall_s: f64,
    files_ending: &dyn Fn(&str) -> usize,
) -> ScoredTask {
    let answer = o.final_answer.clone().unwrap_or_default();
    let last: Option<&StepRecord> = o.steps.iter().rev().find(|s| s.final_answer.is_some());
    let citations = last.map(|s| s.citations.as_slice()).unwrap_or_default();
    let named = mentions(&answer);
    let parts: Vec<bool> = t
        .parts
        .iter()
        .map(|p| {
            p.accept.iter().any(|a| match p.what {
                k if k.is_item() => Accepted::parse(a).is_some_and(|acc| {
                    citations.iter().any(|c| acc.is(c))
                        || named.iter().any(|m| acc.named_by(m, files_ending))
                }),
                PartKind::Number => numbers(&answer).iter().any(|n| n == a),
                PartKind::Verdict => verdict(&answer) == Some(a.as_str()),
                PartKind::Person | PartKind::Tag | PartKind::Value => says(&answer, a),
                _ => false,
            })
        })
        .collect();
    let item_parts = t.parts.iter().filter(|p| p.what.is_item()).count();
    let mut items: Vec<String> = citations.iter().map(|c| c.cite()).collect();
    // What the task names itself (the file whose history it asks for) is restated, not a
    // candidate answer.
    let in_task: Vec<String> = mentions(&t.task).iter().map(|m| m.text()).collect();
    for m in &named {
        let cited = citations.iter().any(|c| c.is_named_by(m));
        if !cited && !items.contains(&m.text()) && !in_task.contains(&m.text()) {
            items.push(m.text());
        }
    }
    let asked = numbers(&t.task);
    let other_numbers = numbers(&answer)
        .into_iter()
        .filter(|n| !asked.contains(n))
        .count();
    let number_parts = t
        .parts
        .iter()
        .filter(|p| p.what == PartKind::Number)
        .count();
    let too_many = (item_parts > 0 && items.len() > item_parts + 2)
        || (number_parts > 0 && other_numbers > number_parts + 1);
    let model_steps = || {
        o.steps.iter().filter(|s| {
            !s.by_burrow()
                && s.error.is_none()
                && s.action.as_ref().is_some_and(|a| !is_meta(&a.tool))
        })
    };
    let model_calls: Vec<String> = model_steps()
        .filter_map(|s| s.action.as_ref().map(|a| a.tool.clone()))
        .collect();
    let model_called = model_steps().any(|s| s.call_by_model());
    let model_acted = model_steps().filter(|s| s.call_by_model()).any(|s| {
        s.action.as_ref().is_some_and(|a| {
            a.args
                .values()
                .any(|v| v.as_str().is_none_or(|text| !t.task.contains(text.trim())))
        })
    });
    ScoredTask {
        id: t.id.clone(),
        kind: t.kind.clone(),
        model: model.to_string(),
        protocol: protocol.to_string(),
        run_id: o.run_id,
        status: o.status,
        correct: !parts.is_empty() && parts.iter().all(|p| *p) && !too_many,
        parts,
        too_many,
        model_calls,
        model_acted,
        model_called,
        steps: o.steps.len(),
        unseen: last.map(|s| s.unseen.clone()).unwrap_or_default(),
        wall_s,
        answer: o.final_answer.clone(),
    }
}

/// The whole numbers a text states, as digits: `76`, `eight`; not the digits of a version
/// (`13.0.0`), an issue (`#76`), a hash or a word (`x86`).
fn numbers(text: &str) -> Vec<String> {
    const WORDS: [&str; 21] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ];
    let chars: Vec<char> = text.chars().collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
        let before = start.checked_sub(1).map(|j| chars[j]);
        let after = chars.get(i).copied();
        let after2 = chars.get(i + 1).copied();
        let joined_before = before.is_some_and(|c| c.is_alphanumeric() || "#@._-/".contains(c));
        let joined_after = after.is_some_and(|c| c.is_alphanumeric() || c == '_')
            || (after.is_some_and(|c| ".-/".contains(c))
                && after2.is_some_and(|c| c.is_ascii_digit()));
        if !joined_before && !joined_after {
            let n: String = chars[start..i].iter().collect();
            let n = n.trim_start_matches('0');
            let n = if n.is_empty() { "0" } else { n }.to_string();
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    for word in words(text) {
        if let Some(n) = WORDS.iter().position(|w| *w == word) {
            let n = n.to_string();
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    out
}

/// The text's words, lowercased.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The answer's yes or no: the first of the two words it says.
fn verdict(answer: &str) -> Option<&'static str> {
    words(answer).iter().find_map(|w| match w.as_str() {
        "yes" => Some("yes"),
        "no" => Some("no"),
        _ => None,
    })
}

/// Whether `text` says `needle` whole, ignoring case and runs of spaces: not inside a longer
/// word or a longer run of the same punctuation (`--` is not said by `--context-separator`),
/// where a tag may be written with a leading `v`.
fn says(text: &str, needle: &str) -> bool {
    let norm = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let (text, needle) = (norm(text), norm(needle));
    if needle.is_empty() {
        return false;
    }
    let first = needle.chars().next();
    let last = needle.chars().last();
    let joins = |c: char, edge: Option<char>| {
        c.is_alphanumeric() || c == '_' || (Some(c) == edge && !c.is_alphanumeric())
    };
    text.match_indices(&needle).any(|(at, _)| {
        let mut before = text[..at].chars().rev();
        let left = match before.next() {
            None => true,
            Some('v') => before.next().is_none_or(|c| !joins(c, first)),
            Some(c) => !joins(c, first),
        };
        let mut after = text[at + needle.len()..].chars();
        let right = match after.next() {
            None => true,
            // A sentence's full stop or a comma ends the value; a version's dot does not.
            Some(c @ ('.' | ',' | '-')) => {
                Some(c) != last && after.next().is_none_or(|n| !n.is_alphanumeric())
            }
            Some(c) => !joins(c, last),
        };
        left && right
    })
}

/// One model and protocol over the task set, in all and per kind of task.
#[derive(Debug, Clone, Serialize)]
pub struct TaskSummary {
    pub model: String,
    pub protocol: String,
    pub kind: String,
    pub tasks: usize,
    pub accuracy: f64,
    /// Share of runs in which the model called a workspace tool with its own arguments.
    pub model_acted: f64,
    /// Share of runs in which the model wrote a workspace call itself, whatever its arguments.
    pub model_called: f64,
    pub median_steps: f64,
    pub unseen: usize,
    pub median_wall_s: f64,
}

/// The summary of all runs (kind `all`), then one per kind of task, in the order first seen.
pub fn summarize_tasks(runs: &[ScoredTask]) -> Vec<TaskSummary> {
    let mut kinds: Vec<&str> = vec!["all"];
    for r in runs {
        if !kinds.contains(&r.kind.as_str()) {
            kinds.push(&r.kind);
        }
    }
    kinds
        .into_iter()
        .map(|kind| {
            let these: Vec<&ScoredTask> = runs
                .iter()
                .filter(|r| kind == "all" || r.kind == kind)
                .collect();
            let n = these.len().max(1) as f64;
            let share =
                |f: &dyn Fn(&ScoredTask) -> bool| these.iter().filter(|r| f(r)).count() as f64 / n;
            TaskSummary {
                model: these.first().map(|r| r.model.clone()).unwrap_or_default(),
                protocol: these
                    .first()
                    .map(|r| r.protocol.clone())
                    .unwrap_or_default(),
                kind: kind.to_string(),
                tasks: these.len(),
                accuracy: share(&|r| r.correct),
                model_acted: share(&|r| r.model_acted),
                model_called: share(&|r| r.model_called),
                median_steps: super::eval::median(these.iter().map(|r| r.steps as f64).collect()),
                unseen: these.iter().map(|r| r.unseen.len()).sum(),
                median_wall_s: super::eval::median(these.iter().map(|r| r.wall_s).collect()),
            }
        })
        .collect()
}

impl App {
    /// Runs the agent on one task with `config` and scores the answer's parts. The run is
    /// kept with the others (`burrow runs show`).
    pub fn eval_task(
        &self,
        model: &dyn LanguageModel,
        config: AgentConfig,
        t: &Task,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<ScoredTask, AppError> {
        let run = self.eval_run(model, config, &t.task, on_event)?;
        let files_ending = |end: &str| self.files_ending(end);
        Ok(score_task(
            t,
            (&run.model, &run.protocol),
            &run.outcome,
            run.wall_s,
            &files_ending,
        ))
    }
}

#[cfg(test)]
mod tests;
