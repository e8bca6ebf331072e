//! `burrow eval`: the agent measured on answers. A question set (JSON lines) lists, per
//! question, the items that answer it; each run is scored on whether its final answer names
//! one of them, and on what the design guarantees (a workspace tool used, no call repeated, no
//! cited item that the run never saw), beside the baseline of search's own first hit.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{App, AppError};
use crate::agent::meta::is_meta;
use crate::agent::record::{RunStatus, StepRecord};
use crate::agent::{AgentConfig, AgentEvent, RunOutcome};
use crate::llm::engine::{CancelToken, LanguageModel};
use crate::tools::locator::{mentions, Mention};
use crate::tools::Locator;
use crate::workspace::{SearchQuery, Workspace};

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("cannot read the question set {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}, line {line}: {reason}")]
    Invalid {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("{0}: the question set has no questions")]
    Empty(PathBuf),
}

/// One question and the items that answer it: `owner/repo#12` (an issue or a pull request),
/// `repo:path` (a file), `repo@hash` (a commit, its full hash or a prefix of seven digits or
/// more).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    pub id: String,
    #[serde(default)]
    pub split: String,
    #[serde(default)]
    pub kind: String,
    pub question: String,
    pub accept: Vec<String>,
    /// The evidence read to verify the answer.
    #[serde(default)]
    pub why: String,
}

/// An accepted item, read from its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Accepted {
    Number { repo: String, number: i64 },
    File { repo: String, path: String },
    Commit { repo: String, hash: String },
}

impl Accepted {
    pub(crate) fn parse(s: &str) -> Option<Accepted> {
        if let Some((repo, n)) = s.rsplit_once('#') {
            return Some(Accepted::Number {
                repo: repo.to_string(),
                number: n.parse().ok()?,
            });
        }
        if let Some((repo, hash)) = s.split_once('@') {
            let hex = hash.len() >= 7 && hash.chars().all(|c| c.is_ascii_hexdigit());
            return hex.then(|| Accepted::Commit {
                repo: repo.to_string(),
                hash: hash.to_ascii_lowercase(),
            });
        }
        let (repo, path) = s.split_once(':')?;
        (!path.is_empty()).then(|| Accepted::File {
            repo: repo.to_string(),
            path: path.to_string(),
        })
    }

    /// Whether an item the answer cites is this one.
    pub(crate) fn is(&self, l: &Locator) -> bool {
        let same_repo = |r: &Option<String>, repo: &str| r.as_deref().is_none_or(|r| r == repo);
        match (self, l) {
            (
                Accepted::Number { repo, number },
                Locator::Issue { number: n, repo: r } | Locator::PullRequest { number: n, repo: r },
            ) => n == number && same_repo(r, repo),
            (
                Accepted::File { repo, path },
                Locator::File {
                    path: p, repo: r, ..
                },
            ) => p == path && same_repo(r, repo),
            (Accepted::Commit { repo, hash }, Locator::Commit { hash: h, repo: r }) => {
                (h.starts_with(hash.as_str()) || hash.starts_with(h.as_str())) && same_repo(r, repo)
            }
            _ => false,
        }
    }

    /// Whether something the answer's text names is this item (the text names no repository).
    /// `files_ending`: how many of the workspace's files a path's end names.
    pub(crate) fn named_by(&self, m: &Mention, files_ending: &dyn Fn(&str) -> usize) -> bool {
        match (self, m) {
            (Accepted::Number { number, .. }, Mention::Number(n)) => n == number,
            (Accepted::Number { number, repo }, Mention::RepoNumber { repo: r, number: n }) => {
                n == number && crate::tools::locator::same_repo(repo, r)
            }
            // A path's end counts only with a folder in it (a bare `README.md` is the root's,
            // not a crate's), and only where it names one file (`src/lib.rs` is nine crates'
            // and was counted as the one accepted). The repository's name as a folder
            // (`ripgrep/README.md`) is the repository's root.
            (Accepted::File { path, repo }, Mention::Path(p)) => {
                let p = p.trim_start_matches("./");
                let short = repo.rsplit('/').next().unwrap_or(repo);
                p == path
                    || [repo.as_str(), short]
                        .iter()
                        .any(|r| p.strip_prefix(&format!("{r}/")) == Some(path.as_str()))
                    || (p.contains('/') && path.ends_with(&format!("/{p}")) && files_ending(p) <= 1)
            }
            (Accepted::Commit { hash, .. }, Mention::Hash(h)) => {
                let h = h.to_ascii_lowercase();
                hash.starts_with(&h) || h.starts_with(hash.as_str())
            }
            _ => false,
        }
    }
}

/// Reads a question set: one JSON object per line (blank lines and `//` comments skipped).
pub fn read_questions(path: &Path) -> Result<Vec<Question>, EvalError> {
    read_set(path, |q: &Question| {
        if q.question.trim().is_empty() {
            return Err("the question is empty".into());
        }
        if q.accept.is_empty() {
            return Err(format!("{} accepts no item", q.id));
        }
        match q.accept.iter().find(|a| Accepted::parse(a).is_none()) {
            Some(bad) => Err(format!(
                "{}: {bad:?} is not repo#N, repo:path or repo@hash",
                q.id
            )),
            None => Ok(q.id.clone()),
        }
    })
}

/// Reads a set of JSON lines (blank lines and `//` comments skipped): `check` refuses an entry
/// with the reason, or gives its id, which no other entry may have.
pub(crate) fn read_set<T: serde::de::DeserializeOwned>(
    path: &Path,
    check: impl Fn(&T) -> Result<String, String>,
) -> Result<Vec<T>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|source| EvalError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut out: Vec<T> = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        let invalid = |reason: String| EvalError::Invalid {
            path: path.to_path_buf(),
            line: i + 1,
            reason,
        };
        let entry: T = serde_json::from_str(line).map_err(|e| invalid(e.to_string()))?;
        let id = check(&entry).map_err(invalid)?;
        if ids.contains(&id) {
            return Err(invalid(format!("the id {id} is used twice")));
        }
        ids.push(id);
        out.push(entry);
    }
    if out.is_empty() {
        return Err(EvalError::Empty(path.to_path_buf()));
    }
    Ok(out)
}

/// One question answered by one model under one protocol.
#[derive(Debug, Clone, Serialize)]
pub struct Scored {
    pub id: String,
    pub model: String,
    pub protocol: String,
    pub run_id: Option<i64>,
    pub status: RunStatus,
    /// The final answer names an accepted item (cited, or in its text).
    pub correct: bool,
    /// The first item the answer names is an accepted one.
    pub first_correct: bool,
    /// What the answer names, its citations first.
    pub named: Vec<String>,
    /// A workspace tool ran (Burrow's own search first included).
    pub used_tool: bool,
    /// The model itself called a workspace tool.
    pub model_used_tool: bool,
    pub steps: usize,
    /// Steps whose call is identical to an earlier step's.
    pub repeated: usize,
    /// Items the answer names that the run never saw.
    pub unseen: Vec<String>,
    pub wall_s: f64,
    pub answer: Option<String>,
}

/// Scores a run's outcome against a question.
pub fn score(q: &Question, model: &str, protocol: &str, o: &RunOutcome, wall_s: f64) -> Scored {
    score_in(q, model, protocol, o, wall_s, &|_| 1)
}

/// `score`, with how many of the workspace's files a path's end names.
pub fn score_in(
    q: &Question,
    model: &str,
    protocol: &str,
    o: &RunOutcome,
    wall_s: f64,
    files_ending: &dyn Fn(&str) -> usize,
) -> Scored {
    let accepted: Vec<Accepted> = q.accept.iter().filter_map(|a| Accepted::parse(a)).collect();
    let last: Option<&StepRecord> = o.steps.iter().rev().find(|s| s.final_answer.is_some());
    let answer = o.final_answer.clone();
    let mut named: Vec<String> = Vec::new();
    let mut correct = Vec::new();
    if let Some(step) = last {
        for c in &step.citations {
            if !named.contains(&c.cite()) {
                named.push(c.cite());
                correct.push(accepted.iter().any(|a| a.is(c)));
            }
        }
    }
    for m in mentions(answer.as_deref().unwrap_or("")) {
        let cited = last.is_some_and(|s| s.citations.iter().any(|c| c.is_named_by(&m)));
        if !cited && !named.contains(&m.text()) {
            named.push(m.text());
            correct.push(accepted.iter().any(|a| a.named_by(&m, files_ending)));
        }
    }
    let workspace_call =
        |s: &StepRecord| s.error.is_none() && s.action.as_ref().is_some_and(|a| !is_meta(&a.tool));
    let mut calls: Vec<(&str, &serde_json::Map<String, serde_json::Value>)> = Vec::new();
    let mut repeated = 0;
    for a in o.steps.iter().filter_map(|s| s.action.as_ref()) {
        let key = (a.tool.as_str(), &a.args);
        if calls.contains(&key) {
            repeated += 1;
        } else {
            calls.push(key);
        }
    }
    Scored {
        id: q.id.clone(),
        model: model.to_string(),
        protocol: protocol.to_string(),
        run_id: o.run_id,
        status: o.status,
        correct: correct.iter().any(|c| *c),
        first_correct: correct.first().copied().unwrap_or(false),
        named,
        used_tool: o.steps.iter().any(workspace_call),
        model_used_tool: o
            .steps
            .iter()
            .any(|s| s.call_by_model() && workspace_call(s)),
        steps: o.steps.len(),
        repeated,
        unseen: last.map(|s| s.unseen.clone()).unwrap_or_default(),
        wall_s,
        answer,
    }
}

/// One model and protocol over the question set.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub model: String,
    pub protocol: String,
    pub questions: usize,
    pub accuracy: f64,
    pub first_accuracy: f64,
    pub used_tool: f64,
    pub model_used_tool: f64,
    pub median_steps: f64,
    pub repeated: usize,
    pub unseen: usize,
    pub median_wall_s: f64,
}

pub fn summarize(runs: &[Scored]) -> Summary {
    let n = runs.len().max(1) as f64;
    let share = |f: &dyn Fn(&Scored) -> bool| runs.iter().filter(|r| f(r)).count() as f64 / n;
    Summary {
        model: runs.first().map(|r| r.model.clone()).unwrap_or_default(),
        protocol: runs.first().map(|r| r.protocol.clone()).unwrap_or_default(),
        questions: runs.len(),
        accuracy: share(&|r| r.correct),
        first_accuracy: share(&|r| r.first_correct),
        used_tool: share(&|r| r.used_tool),
        model_used_tool: share(&|r| r.model_used_tool),
        median_steps: median(runs.iter().map(|r| r.steps as f64).collect()),
        repeated: runs.iter().map(|r| r.repeated).sum(),
        unseen: runs.iter().map(|r| r.unseen.len()).sum(),
        median_wall_s: median(runs.iter().map(|r| r.wall_s).collect()),
    }
}

pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    if v.len().is_multiple_of(2) {
        (v[m - 1] + v[m]) / 2.0
    } else {
        v[m]
    }
}

/// Search's own answer to a question: its first hit, and whether an accepted item is among
/// its first five distinct items.
#[derive(Debug, Clone, Serialize)]
pub struct BaselineHit {
    pub id: String,
    pub first: Option<String>,
    pub correct: bool,
    pub in_top5: bool,
}

pub fn baseline(ws: &Workspace, questions: &[Question]) -> Result<Vec<BaselineHit>, AppError> {
    let mut out = Vec::new();
    for q in questions {
        let accepted: Vec<Accepted> = q.accept.iter().filter_map(|a| Accepted::parse(a)).collect();
        let page = ws.search(&SearchQuery {
            text: q.question.clone(),
            limit: 20,
            ..Default::default()
        })?;
        let mut items: Vec<Locator> = Vec::new();
        for l in page.hits.iter().filter_map(Locator::of_hit) {
            let l = without_line(l);
            if !items.contains(&l) {
                items.push(l);
            }
        }
        let ok = |l: &Locator| accepted.iter().any(|a| a.is(l));
        out.push(BaselineHit {
            id: q.id.clone(),
            first: items.first().map(Locator::cite),
            correct: items.first().is_some_and(ok),
            in_top5: items.iter().take(5).any(ok),
        });
    }
    Ok(out)
}

pub(crate) fn without_line(l: Locator) -> Locator {
    match l {
        Locator::File { path, repo, .. } => Locator::File {
            path,
            repo,
            line: None,
        },
        other => other,
    }
}

impl App {
    /// Runs the agent on one question with `config` and scores the answer. The run is kept
    /// with the others (`burrow runs show`).
    pub fn eval_question(
        &self,
        model: &dyn LanguageModel,
        config: AgentConfig,
        q: &Question,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<Scored, AppError> {
        let run = self.eval_run(model, config, &q.question, on_event)?;
        let files_ending = |end: &str| self.files_ending(end);
        Ok(score_in(
            q,
            &run.model,
            &run.protocol,
            &run.outcome,
            run.wall_s,
            &files_ending,
        ))
    }

    /// Runs the agent on `text` with `config`, timed, for an evaluation to score.
    pub(crate) fn eval_run(
        &self,
        model: &dyn LanguageModel,
        config: AgentConfig,
        text: &str,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<EvalRun, AppError> {
        let protocol = config.protocol.as_str().to_string();
        let agent = self.agent(model, config)?;
        let started = Instant::now();
        let outcome = agent.run(text, &CancelToken::new(), on_event);
        Ok(EvalRun {
            model: model.descriptor().name,
            protocol,
            outcome,
            wall_s: started.elapsed().as_secs_f64(),
        })
    }

    /// How many of the workspace's files a path's end names (as many as there may be, where
    /// the index cannot say).
    pub(crate) fn files_ending(&self, end: &str) -> usize {
        self.workspace.files_ending(end).unwrap_or(usize::MAX)
    }
}

/// One run of the agent for an evaluation: who ran it, how it ended, how long it took.
pub(crate) struct EvalRun {
    pub model: String,
    pub protocol: String,
    pub outcome: RunOutcome,
    pub wall_s: f64,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn question(accept: &[&str]) -> Question {
        Question {
            id: "q".into(),
            split: String::new(),
            kind: String::new(),
            question: "which?".into(),
            accept: accept.iter().map(|s| s.to_string()).collect(),
            why: String::new(),
        }
    }

    /// A run that ended with `answer`, citing `citations`, after `steps`.
    pub(crate) fn finished(
        answer: &str,
        citations: Vec<Locator>,
        steps: Vec<StepRecord>,
    ) -> RunOutcome {
        let mut steps = steps;
        steps.push(StepRecord {
            index: steps.len(),
            final_answer: Some(answer.into()),
            citations,
            ..Default::default()
        });
        RunOutcome {
            run_id: None,
            status: RunStatus::Succeeded,
            final_answer: Some(answer.into()),
            error: None,
            steps,
        }
    }

    fn call(tool: &str, query: &str, automatic: bool) -> StepRecord {
        StepRecord {
            action: Some(crate::agent::record::ActionRecord {
                tool: tool.into(),
                args: serde_json::json!({ "query": query })
                    .as_object()
                    .unwrap()
                    .clone(),
            }),
            origin: if automatic {
                crate::agent::record::Origin::Search
            } else {
                crate::agent::record::Origin::Model
            },
            ..Default::default()
        }
    }

    #[test]
    fn answers_are_scored_by_the_items_they_name() {
        let q = question(&[
            "o/gui#907",
            "rg:crates/cli/src/human.rs",
            "rg@9268ff8e8db179a4",
        ]);
        // Cited.
        let o = finished(
            "It is this one.",
            vec![Locator::issue_or_pr("o/gui", 907, false)],
            vec![call("search", "x", true)],
        );
        let s = score(&q, "m", "p", &o, 1.0);
        assert!(s.correct && s.first_correct && s.used_tool && !s.model_used_tool);
        assert_eq!(s.named, ["o/gui#907"]);
        // Named in the text only, after a wrong citation; a call made twice.
        let o = finished(
            "Maybe crates/cli/src/human.rs, or commit 9268ff8e8d.",
            vec![Locator::issue_or_pr("o/gui", 12, true)],
            vec![call("search", "x", true), call("search", "x", false)],
        );
        let s = score(&q, "m", "p", &o, 1.0);
        assert!(s.correct && !s.first_correct && s.model_used_tool);
        assert_eq!(
            s.named,
            ["o/gui#12", "crates/cli/src/human.rs", "9268ff8e8d"]
        );
        assert_eq!(s.repeated, 1);
        // A file of the same name elsewhere, or a different commit, is not the answer.
        let o = finished("See src/main.rs and 1234abcd.", vec![], vec![]);
        assert!(!score(&q, "m", "p", &o, 1.0).correct);
    }

    #[test]
    fn a_bad_question_set_is_refused_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.jsonl");
        std::fs::write(
            &path,
            "{\"id\": \"a\", \"question\": \"q?\", \"accept\": [\"o/r#1\"]}\n\n{\"id\": \"b\", \"question\": \"q?\", \"accept\": [\"nothing\"]}\n",
        )
        .unwrap();
        let e = read_questions(&path).unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains("\"nothing\""), "{e}");
        std::fs::write(
            &path,
            "{\"id\": \"a\", \"question\": \"q?\", \"accept\": [\"o/r#1\"]}\n",
        )
        .unwrap();
        assert_eq!(read_questions(&path).unwrap().len(), 1);
    }

    /// The shipped question sets load, and each fresh set (kept apart to check changes made
    /// while reading the others' misses) asks about no item an earlier set accepts and reuses
    /// no id.
    #[test]
    fn the_shipped_question_sets_load_and_the_fresh_ones_are_disjoint() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/eval");
        let sets: Vec<(&str, usize, Vec<Question>)> = [
            ("questions.jsonl", "", 68),
            ("questions-fresh.jsonl", "fresh", 30),
            ("questions-fresh2.jsonl", "fresh2", 24),
            ("questions-fresh3.jsonl", "fresh3", 30),
            ("questions-fresh4.jsonl", "fresh4", 30),
            ("questions-fresh5.jsonl", "fresh5", 30),
            ("questions-fresh6.jsonl", "fresh6", 30),
        ]
        .into_iter()
        .map(|(file, split, n)| (split, n, read_questions(&dir.join(file)).unwrap()))
        .collect();
        for (i, (split, n, set)) in sets.iter().enumerate() {
            assert_eq!(set.len(), *n, "{split}");
            if i > 0 {
                assert!(set.iter().all(|q| q.split == *split), "{split}");
            }
            for (q, o) in set.iter().flat_map(|q| {
                sets[..i]
                    .iter()
                    .flat_map(|(_, _, e)| e)
                    .map(move |o| (q, o))
            }) {
                assert_ne!(q.id, o.id);
                assert!(
                    q.accept.iter().all(|a| !o.accept.contains(a)),
                    "{} and {} accept the same item",
                    q.id,
                    o.id
                );
            }
        }
    }

    /// How an answer's text is read, four ways it was scored wrong (found in review): a cited
    /// root `README.md` hid the crate's README the text named; a bare `README.md` in the text
    /// counted as a crate's; a path without an extension (a benchmark summary) was never read;
    /// and `owner/repo#N`, the form the tools print, was not read either.
    #[test]
    fn an_answers_text_names_what_it_names() {
        let readme = question(&["ripgrep:crates/core/README.md"]);
        let root = Locator::file("ripgrep", "README.md", Some(1));
        let s = score(
            &readme,
            "m",
            "p",
            &finished("See crates/core/README.md.", vec![root], vec![]),
            1.0,
        );
        assert!(s.correct, "{:?}", s.named);
        let s = score(
            &readme,
            "m",
            "p",
            &finished("It is in README.md.", vec![], vec![]),
            1.0,
        );
        assert!(!s.correct, "{:?}", s.named);
        let summary = question(&["ripgrep:benchsuite/runs/2016-12-30-archlinux-cheetah/summary"]);
        let text = "The timings are in benchsuite/runs/2016-12-30-archlinux-cheetah/summary.";
        let s = score(&summary, "m", "p", &finished(text, vec![], vec![]), 1.0);
        assert!(s.correct, "{:?}", s.named);
        let pr = question(&["bitcoin-core/gui#613"]);
        let s = score(
            &pr,
            "m",
            "p",
            &finished("It was fixed by bitcoin-core/gui#613.", vec![], vec![]),
            1.0,
        );
        assert!(s.correct, "{:?}", s.named);
        // Another repository's number is not this one.
        let s = score(
            &pr,
            "m",
            "p",
            &finished("See bitcoin/bitcoin#613.", vec![], vec![]),
            1.0,
        );
        assert!(!s.correct, "{:?}", s.named);
        // A URL is not a path of the workspace.
        assert!(
            crate::tools::locator::mentions("https://github.com/bitcoin-core/gui/pull/613")
                .iter()
                .all(|m| !matches!(m, Mention::Path(_)))
        );
    }

    // Answers as models write them (found in review).
    fn right(accept: &str, text: &str) -> (bool, Vec<String>) {
        let s = score(
            &question(&[accept]),
            "m",
            "p",
            &finished(text, vec![], vec![]),
            1.0,
        );
        (s.correct, s.named)
    }

    /// `gui#907`, the short form `mentions` now reads, is bitcoin-core/gui#907.
    #[test]
    fn short_repo_form_is_the_accepted_item() {
        let (ok, named) = right("bitcoin-core/gui#907", "It was fixed by gui#907.");
        assert!(ok, "counted wrong; named {named:?}");
    }

    /// A path's end shared by many crates (`src/lib.rs`) is not the accepted crate's file.
    #[test]
    fn ambiguous_path_end_is_not_the_accepted_file() {
        let q = question(&["ripgrep:crates/cli/src/lib.rs"]);
        let o = finished("It is in src/lib.rs.", vec![], vec![]);
        // Nine crates have a src/lib.rs; one has cli/src/lib.rs.
        let files = |end: &str| if end == "src/lib.rs" { 9 } else { 1 };
        let s = score_in(&q, "m", "p", &o, 1.0, &files);
        assert!(!s.correct, "counted right; named {:?}", s.named);
        let o = finished("It is in cli/src/lib.rs.", vec![], vec![]);
        assert!(score_in(&q, "m", "p", &o, 1.0, &files).correct);
    }

    /// A file named with its repository as the tools print it (`ripgrep:path`), a path
    /// without an extension (a benchmark summary), is the file.
    #[test]
    fn summary_named_with_its_repository_is_the_file() {
        let f = "ripgrep:benchsuite/runs/2016-12-30-archlinux-cheetah/summary";
        let (ok, named) = right(f, &format!("The timings are in {f}."));
        assert!(ok, "counted wrong; named {named:?}");
    }

    /// `ripgrep/README.md` (the repository's name as a folder) is the root README.
    #[test]
    fn repo_as_folder_is_the_file() {
        let (ok, named) = right("ripgrep:README.md", "See ripgrep/README.md.");
        assert!(ok, "counted wrong; named {named:?}");
    }

    /// A pull request's URL names it.
    #[test]
    fn url_is_the_pull_request() {
        let (ok, named) = right(
            "bitcoin-core/gui#907",
            "Fixed by https://github.com/bitcoin-core/gui/pull/907.",
        );
        assert!(ok, "counted wrong; named {named:?}");
    }
}
