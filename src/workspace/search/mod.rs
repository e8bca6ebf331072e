//! Search: BM25-ranked full-text search over every kind of unit (code, documents, commits,
//! issues, pull requests and their comments), with filters, highlighted snippets and precise
//! locations.
//!
//! This module owns the search's types and its course, from what the user typed to a page of
//! hits. The parts: `query` turns the text and filters into FTS5 phrases, `plan` chooses which
//! matches to rank (so that no search ranks too many), `sql` runs the counting and ranking
//! statements, and `snippet` locates and marks the words in each hit's text.

mod compound;
mod intent;
mod plan;
pub(crate) mod query;
mod snippet;
mod sql;

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use super::text::Role;
use super::vectors::{Ask, VectorIndex};
use super::{db_err, Workspace, WorkspaceError};
use plan::{plan, Expr, Scope};
use query::{runs, tokens, words, Clause, Phrase};
use snippet::{first_matching_line, line_snippet, needles, words_snippet, SNIPPET_WORDS};
use sql::{rank_page, PostFilter, RawHit};

pub use intent::{asked_kinds, leaned_kinds};
pub(crate) use plan::{PhraseRows, RANK_ROWS};
pub(crate) use query::facet_token;
pub use query::fts_expression;

/// The kinds of things search finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Code,
    Doc,
    Commit,
    Issue,
    Pr,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Code => "code",
            Kind::Doc => "doc",
            Kind::Commit => "commit",
            Kind::Issue => "issue",
            Kind::Pr => "pr",
        }
    }

    pub fn parse(s: &str) -> Result<Self, WorkspaceError> {
        Ok(match s {
            "code" => Kind::Code,
            "doc" | "docs" => Kind::Doc,
            "commit" | "commits" => Kind::Commit,
            "issue" | "issues" => Kind::Issue,
            "pr" | "prs" | "pull" | "pull_request" => Kind::Pr,
            other => {
                return Err(WorkspaceError::BadQuery(format!(
                    "unknown kind {other:?} (code, doc, commit, issue or pr)"
                )))
            }
        })
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The most results one page holds.
pub const MAX_LIMIT: usize = 100;

/// The most words a query ranks by. About a thousand words (20 KB) passed SQLite's limit on a
/// function's arguments and dumped kilobytes of SQL (issue 17); the rarest words carry the
/// ranking anyway.
pub const MAX_QUERY_WORDS: usize = 32;

/// The furthest a page may start (`--offset 18446744073709551615` wrapped around: issue 17).
pub const MAX_OFFSET: usize = 1_000_000;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchQuery {
    pub text: String,
    /// Empty: every kind.
    pub kinds: Vec<Kind>,
    /// A repository name or owner/name.
    pub repo: Option<String>,
    /// open, closed or merged (issues and pull requests).
    pub state: Option<String>,
    pub label: Option<String>,
    pub author: Option<String>,
    /// A glob over paths (`src/**/*.rs`).
    pub path: Option<String>,
    /// Seconds since the epoch, inclusive.
    pub since: Option<i64>,
    /// Seconds since the epoch, exclusive.
    pub until: Option<i64>,
    pub limit: usize,
    pub offset: usize,
    pub mode: SearchMode,
    /// The query's vector from the embedding model, for `Meaning` and `Hybrid`; without it a
    /// hybrid search ranks by words alone.
    pub vector: Option<Vec<f32>>,
    /// Reciprocal rank fusion's constant for a hybrid search (None: `RRF_K`); for tuning.
    pub fusion_k: Option<f64>,
}

/// How a search ranks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchMode {
    /// By the words the units share with the query (BM25).
    Words,
    /// By the closeness of the units' vectors to the query's.
    Meaning,
    /// Both rankings fused by reciprocal rank (`RRF_K`).
    #[default]
    Hybrid,
}

/// Seconds since the epoch at the start of `day`, written YYYY-MM-DD (UTC), as the `since`
/// and `until` of a query are given by people and by the agent's tools.
pub fn day_start(day: &str) -> Option<i64> {
    chrono::NaiveDate::parse_from_str(day.trim(), "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc().timestamp())
}

impl SearchMode {
    pub fn parse(s: &str) -> Result<Self, WorkspaceError> {
        match s {
            "words" => Ok(SearchMode::Words),
            "meaning" => Ok(SearchMode::Meaning),
            "hybrid" => Ok(SearchMode::Hybrid),
            other => Err(WorkspaceError::BadQuery(format!(
                "unknown search mode {other:?}: expected words, meaning or hybrid"
            ))),
        }
    }
}

/// Reciprocal rank fusion's constant: a unit's hybrid score is the sum over the rankings of
/// weight / (RRF_K + its rank). The paper's 60 (Cormack et al., 2009; GPT4All's too) makes
/// rank 1 and rank 5 nearly equal, and then an issue found first could not lift the pull
/// request that fixed it. Tuned on the dev questions (README): 10 at first; 5 once words
/// ranked files by their outlines and searched for abbreviations (dev MRR@10 0.770 at 10,
/// 0.777 at 5, 0.768-0.775 at 2-8 but 6): a first place in one ranking is no longer outweighed
/// by units both rankings hold lower down.
pub const RRF_K: f64 = 5.0;

/// A query that asks for a kind: the weight of the ranking over every kind, beside the ranking
/// of that kind alone (1).
pub const ALL_KINDS_WEIGHT: f64 = 0.5;

/// The weight of "linked to an issue the query finds" beside the rankings by words and by
/// meaning, for a query asking for a pull request (tuned on the dev questions, README).
pub const LINK_WEIGHT: f64 = 2.0;

/// The abbreviations (or long forms) searched for at most for one long form (or
/// abbreviation) of a query.
const MAX_ABBREVIATIONS: usize = 3;

/// The abbreviations and long forms searched for at most for one query.
const MAX_ADDED: usize = 8;

/// An abbreviation (or long form) held by more than one unit in this many (and by more than
/// `COMMON_ABBREVIATION_ROWS`) is not searched for beside the words typed
/// (`Workspace::abbreviated`).
const COMMON_ABBREVIATION: f64 = 10.0;

/// Rows under which an abbreviation is never too common to search for.
const COMMON_ABBREVIATION_ROWS: f64 = 1_000.0;

/// The weight of the ranking of files' outlines by meaning in a search kept to code, beside
/// the parts' rankings by words and by meaning (1 each). Chosen on the dev split (25
/// questions): hybrid MRR@10 0.743 without the outlines' ranking, 0.743 at 0.5, 0.753 at 1
/// and at 2, recall@5 0.88 throughout; meaning alone 0.680 without, 0.685 at 1, 0.665 at 2.
pub const OUTLINE_WEIGHT: f64 = 1.0;

/// The weight of the ranking of files' outlines by words (the ranking by words kept to outlines
/// and files in one unit) in a search kept to code. Chosen on the dev split of the 68
/// questions: hybrid MRR@10 0.753 without it, 0.773 at 0.5 and 0.770 at 1 (recall@5 0.88 at
/// both), words alone (the questions that lean to code) 0.612 at 0.5 and 0.667 at 1.
pub const OUTLINE_WORDS_WEIGHT: f64 = 1.0;

/// The pull request units linked as fixing issue ?2 of repository ?1. Looked up by number
/// (`docs_number`): with no statistics SQLite chose the (repository, kind) index and read
/// every PR unit of the repository for each issue, 3 ms each, up to 330 ms a search; `+`
/// keeps it off that index.
const FIXING_PRS: &str = "SELECT d.id FROM links l
     CROSS JOIN docs d ON d.repo_id = l.repo_id AND +d.kind = 'pr'
         AND d.number = l.pr AND d.comment_id IS NULL
     WHERE l.repo_id = ?1 AND l.issue = ?2 ORDER BY l.pr";

/// How deep each ranking is read for fusion.
pub const FUSE_DEPTH: usize = 100;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    pub kind: Kind,
    pub repo: String,
    pub title: String,
    /// The matching text, with matches between « and ».
    pub snippet: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The line of the first match (code and documents), 1-based.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number: Option<i64>,
    /// Set when the match is in a comment or review of the issue or pull request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// Set when the match is in the lines the commit changed rather than in its message.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub in_changes: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<i64>,
    pub score: f64,
    /// An issue's: the pull requests that fixed it; a pull request's: the issues it fixed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub linked: Vec<i64>,
    /// How many more of the item's parts matched below this one (a file's other sections, an
    /// issue's other comments), folded into this hit so a page lists each item once. Counted
    /// among the parts read for the page: at least this many.
    #[serde(skip_serializing_if = "is_zero")]
    pub also: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Units read per item a page lists, before they are folded into items. On the question sets
/// five units held 3.55 items (about 1.4 units an item); three leaves room for a long file or
/// thread, and a read that still folds short is read again deeper.
const UNITS_PER_ITEM: usize = 3;

/// What a unit is part of: a file (its sections), an issue or pull request (its comments), a
/// commit.
#[derive(Debug, PartialEq, Eq, Hash)]
enum ItemKey {
    Thread(i64, i64),
    File(i64, String),
    Commit(i64, String),
    Unit(i64),
}

impl ItemKey {
    fn of(r: &RawHit) -> ItemKey {
        match (r.number, &r.path, &r.hash) {
            (Some(n), _, _) => ItemKey::Thread(r.repo_id, n),
            (None, Some(p), _) => ItemKey::File(r.repo_id, p.clone()),
            (None, None, Some(h)) => ItemKey::Commit(r.repo_id, h.clone()),
            (None, None, None) => ItemKey::Unit(r.id),
        }
    }
}

/// Units, best first, folded into items: each item at the place of its best unit, counting
/// the others in `also`. A page of five results repeated an item in 69 of 98 questions. A
/// file is shown by its best part rather than its outline, whose lines are not the file's:
/// the line a hit gives is where the agent reads and what an answer cites. An outline repeats
/// its file's words, so it is not counted as one more match in it.
fn fold_items(units: impl IntoIterator<Item = RawHit>) -> Vec<RawHit> {
    let mut at: HashMap<ItemKey, usize> = HashMap::new();
    let mut items: Vec<RawHit> = Vec::new();
    for u in units {
        let key = ItemKey::of(&u);
        match at.get(&key) {
            Some(&i) if is_outline(&items[i]) => {
                let (score, also) = (items[i].score, items[i].also);
                items[i] = RawHit { score, also, ..u };
            }
            Some(_) if is_outline(&u) => {}
            Some(&i) => items[i].also += 1,
            None => {
                at.insert(key, items.len());
                items.push(u);
            }
        }
    }
    items
}

impl SearchHit {
    /// "2 more matches in this file", for a hit that others of its item were folded into.
    pub fn also_note(&self) -> Option<String> {
        (self.also > 0).then(|| {
            let whole = match self.kind {
                Kind::Code | Kind::Doc => "file",
                Kind::Issue => "issue",
                Kind::Pr => "pull request",
                Kind::Commit => "commit",
            };
            let s = if self.also == 1 { "" } else { "es" };
            format!("{} more match{s} in this {whole}", self.also)
        })
    }

    /// "fixes #12, #14" for a pull request, "fixed by #31" for an issue.
    pub fn linked_note(&self) -> Option<String> {
        (!self.linked.is_empty()).then(|| {
            let numbers: Vec<String> = self.linked.iter().map(|n| format!("#{n}")).collect();
            let how = if self.kind == Kind::Pr {
                "fixes"
            } else {
                "fixed by"
            };
            format!("{how} {}", numbers.join(", "))
        })
    }

    /// Where the hit is, as people write it: `src/main.rs:12`, `#42`, `#42 (comment 7)`,
    /// `commit 1a2b3c4`.
    pub fn location(&self) -> String {
        match self.kind {
            Kind::Code | Kind::Doc => match (&self.path, self.line) {
                (Some(p), Some(l)) => format!("{p}:{l}"),
                (Some(p), None) => p.clone(),
                _ => String::new(),
            },
            Kind::Commit => format!(
                "commit {}{}",
                self.hash
                    .as_deref()
                    .map(|h| &h[..h.len().min(10)])
                    .unwrap_or(""),
                if self.in_changes {
                    " (in its changed lines)"
                } else {
                    ""
                }
            ),
            Kind::Issue | Kind::Pr => {
                let n = self.number.unwrap_or(0);
                match self.comment_id {
                    Some(c) => format!("#{n} (comment {c})"),
                    None => format!("#{n}"),
                }
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchPage {
    pub hits: Vec<SearchHit>,
    /// The offset of the next page, when there is one.
    pub next_offset: Option<usize>,
    /// What the search did beyond the words typed: ranked only a part of the matches (the
    /// words match too much to rank them all), searched for abbreviations, or ranked by words
    /// alone and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Workspace {
    pub fn search(&self, q: &SearchQuery) -> Result<SearchPage, WorkspaceError> {
        // A blank filter ("" where a model fills every field of the search tool) filters
        // nothing: taken as given, a blank state, label or author matched no row, and a blank
        // path, as the glob `*`, every file and no issue, so the page said "No results".
        let blank = |v: &Option<String>| v.as_deref().is_some_and(|s| s.trim().is_empty());
        let given = |v: &Option<String>| v.clone().filter(|s| !s.trim().is_empty());
        let unblanked;
        let q = if [&q.repo, &q.state, &q.label, &q.author, &q.path]
            .into_iter()
            .any(blank)
        {
            unblanked = SearchQuery {
                repo: given(&q.repo),
                state: given(&q.state),
                label: given(&q.label),
                author: given(&q.author),
                path: given(&q.path),
                ..q.clone()
            };
            &unblanked
        } else {
            q
        };
        let limit = q.limit.clamp(1, MAX_LIMIT);
        if q.offset > MAX_OFFSET {
            return Err(WorkspaceError::BadQuery(format!(
                "offset {} is past the furthest a page can start ({MAX_OFFSET})",
                q.offset
            )));
        }
        // As a search by words refuses it: by meaning alone, an empty query ("", "!!!") was
        // embedded and ranked every unit against the vector of nothing.
        if q.mode == SearchMode::Meaning && q.vector.is_none() && words(&q.text).is_empty() {
            return Err(WorkspaceError::BadQuery(
                "the query has no words to search for".into(),
            ));
        }
        // The query's vector is given, or made by the loaded model while the words rank.
        // A hybrid search that cannot rank by meaning says why: the vectors re-made with
        // another model under a running `burrow mcp` left its searches ranked by words, and
        // worse, with nothing said.
        let mut words_only = None;
        let embedder = match (q.mode, &q.vector) {
            (SearchMode::Words, _) | (_, Some(_)) => None,
            // Without a model, hybrid is words: the vectors need not even be loaded.
            (SearchMode::Hybrid, None) if self.query_embedder().is_none() => None,
            (mode, None) => match self.meaning_unavailable()? {
                None => self.query_embedder(),
                Some(why) if mode == SearchMode::Meaning => {
                    return Err(WorkspaceError::BadQuery(format!(
                        "cannot search by meaning: {why}"
                    )))
                }
                Some(why) => {
                    words_only = Some(format!("ranked by words only: {why}"));
                    None
                }
            },
        };
        let by_meaning = q.mode != SearchMode::Words && (q.vector.is_some() || embedder.is_some());
        // A query that says what kind of item it wants leans to that kind (unless it filters
        // kinds itself): its ranking among that kind alone is fused with the ranking over all.
        // Kept by a filter to the very kinds its words ask for (the agent's first search is),
        // it ranks as the lean does and keeps those kinds' items: the agent and the search box
        // put the same item first (kept to pull requests, the first search put #813 first
        // where `burrow search` had the one asked for, gui-pr-07).
        let (leaning, keep) = match leaned_kinds(&q.text) {
            lean if q.kinds.is_empty() => (lean, None),
            lean if !lean.is_empty()
                && lean.iter().all(|k| q.kinds.contains(k))
                && q.kinds.iter().all(|k| lean.contains(k)) =>
            {
                (lean, Some(q.kinds.clone()))
            }
            _ => (Vec::new(), None),
        };
        let base = match &keep {
            Some(_) => SearchQuery {
                kinds: Vec::new(),
                ..q.clone()
            },
            None => q.clone(),
        };
        // Asked for pull requests, or kept to them by a filter (the agent's first search is),
        // the issues the query finds are evidence for the pull requests that fixed them.
        let wants_pr = leaning.contains(&Kind::Pr) || q.kinds.contains(&Kind::Pr);
        // Kept to code, the words of the files' outlines make a ranking of their own (below).
        if !by_meaning && leaning.is_empty() && !wants_pr && !ranks_outlines(q) {
            let (rows, note) = self.words_items(q, limit)?;
            return self.page(q, rows, limit, join_notes(words_only, note));
        }
        // Every page starts from the same depth, whatever its offset and size (see below).
        let depth = FUSE_DEPTH;
        let k = q.fusion_k.unwrap_or(RRF_K);
        // The rankings to fuse: the query's own; that of the kinds it asks for; and, for pull
        // requests, the issues' (see below).
        let leans = !leaning.is_empty();
        let mut subs = vec![base.clone()];
        if leans {
            subs.push(SearchQuery {
                kinds: leaning,
                ..base.clone()
            });
        }
        if wants_pr {
            // Without the filters of state, label, author and dates, which are the pull
            // requests' (`fixing_prs` applies them to those): no issue is "merged", and the
            // issue's reporter is rarely the author of the fix, so with them the evidence was
            // gone and `--kind pr --state merged` ranked by words alone. This ranking comes
            // last, so its rows, read through fewer filters, are never taken as having passed
            // another ranking's (`meaning_ranking`); it only ranks pull requests.
            subs.push(SearchQuery {
                kinds: vec![Kind::Issue],
                state: None,
                label: None,
                author: None,
                since: None,
                until: None,
                ..q.clone()
            });
        }
        let repo_id = self.repo_id_of(q)?;
        // Embedding the query (a paragraph: 25-40 ms on one core) overlaps ranking by words,
        // and so do the scans of the vectors that follow it (2-3 ms over all of them, bound by
        // memory). The ranking by words may still hold the connection, so the scans read the
        // vectors as last loaded, and the stamp they had is checked against the database's
        // once both are done: changed meanwhile, they are scanned again.
        let (made, words) = std::thread::scope(|s| {
            let job = embedder.as_ref().map(|e| {
                s.spawn(|| {
                    e.embed_query(&q.text).map(|v| {
                        let scans = self.with_loaded_vectors(|ix| {
                            ix.map(|ix| {
                                (
                                    ix.stamp(),
                                    meaning_scans(Some(ix), &subs, &v, depth, repo_id),
                                )
                            })
                        });
                        (v, scans)
                    })
                })
            });
            let words: Result<Vec<_>, WorkspaceError> = if q.mode == SearchMode::Meaning {
                Ok(Vec::new())
            } else {
                self.words_rankings(&subs, depth)
            };
            let made = job.map(|j| {
                j.join()
                    .unwrap_or_else(|_| Err("the embedding model stopped".to_string()))
            });
            (made, words)
        });
        let mut words = words?;
        let mut note = join_notes(words_only, words.first_mut().and_then(|w| w.2.take()));
        let mut first_scans = None;
        let vector = match made {
            Some(Ok((v, scans))) => {
                if let Some((stamp, scans)) = scans {
                    if self.vectors_stamp()? == Some(stamp) {
                        first_scans = Some(scans);
                    }
                }
                Some(v)
            }
            Some(Err(e)) if q.mode == SearchMode::Meaning => {
                return Err(WorkspaceError::BadQuery(format!(
                    "cannot search by meaning: the query could not be embedded: {e}"
                )))
            }
            Some(Err(e)) => {
                note = join_notes(
                    Some(format!(
                        "ranked by words only: the query could not be embedded: {e}"
                    )),
                    note,
                );
                None
            }
            None => q.vector.clone().filter(|_| q.mode != SearchMode::Words),
        };
        // Folded into items, the parts of a few long files or threads can fill the rankings
        // and leave the page short of items: then the rankings are read deeper. What a deeper
        // fusion adds comes after what the shallower one ranked, which stays as it was: fused
        // deeper, the same items come in another order, and pages read at different depths
        // repeated some items and skipped others.
        let needed = q.offset + limit + 1;
        let mut depth = depth;
        let mut shown: Vec<RawHit> = Vec::new();
        let mut held: HashSet<ItemKey> = HashSet::new();
        let mut first_words = Some(words);
        loop {
            let words = match first_words.take() {
                Some(w) => w,
                None if q.mode == SearchMode::Meaning => Vec::new(),
                None => self.words_rankings(&subs, depth)?,
            };
            let scans = match (&vector, first_scans.take()) {
                (None, _) => None,
                (Some(_), Some(scans)) => scans?,
                (Some(v), None) => {
                    self.with_vectors(|ix| meaning_scans(ix, &subs, v, depth, repo_id))??
                }
            };
            // The subs' own scans, then their outlines' (`meaning_scans`).
            let (mut scans, mut outline_scans) = match scans {
                Some(mut own) => {
                    let outlines = own.split_off(subs.len().min(own.len()));
                    (Some(own.into_iter()), Some(outlines.into_iter()))
                }
                None => (None, None),
            };
            let mut rows: HashMap<i64, RawHit> = HashMap::new();
            let mut orders: Vec<Vec<(i64, f64)>> = Vec::with_capacity(subs.len());
            // A ranking shorter than its depth holds every match it has.
            let mut full = false;
            let mut words = words.into_iter();
            for sub in &subs {
                let by_words = words.next().map(|(order, found, _)| {
                    rows.extend(found);
                    order
                });
                let by_meaning = match scans.as_mut().and_then(Iterator::next) {
                    Some(near) => {
                        // Filtered, the scan reads further than the depth and the filters
                        // drop units after it: whether it stopped short is its own count's
                        // to say (judged after the filters, a filtered search by meaning
                        // never read deeper and lost what lay past the first scan).
                        full |= near.len() >= scan_depth(sub, depth);
                        Some(self.meaning_ranking(sub, near, depth, &mut rows)?)
                    }
                    None => None,
                };
                let by_outline = match ranks_outlines(sub)
                    .then(|| outline_scans.as_mut().and_then(Iterator::next))
                    .flatten()
                {
                    Some(near) => Some(self.meaning_ranking(sub, near, depth, &mut rows)?),
                    None => None,
                };
                full |= by_words.as_ref().is_some_and(|o| o.len() >= depth)
                    || by_meaning.as_ref().is_some_and(|o| o.len() >= depth);
                let words_outline = match (ranks_outlines(sub), &by_words) {
                    (true, Some(order)) => Some(Self::outlines_by_words(order, &rows)),
                    _ => None,
                }
                .filter(|o| !o.is_empty());
                let (by_outline, words_outline) = if by_outline.is_some() || words_outline.is_some()
                {
                    let parts = file_parts([&by_words, &by_meaning], &rows);
                    (
                        by_outline.map(|o| to_files(&o, &parts, &rows)),
                        words_outline.map(|o| to_files(&o, &parts, &rows)),
                    )
                } else {
                    (None, None)
                };
                // Words and meaning (and, kept to code, the outlines), fused; one alone as it
                // ranks.
                let rankings: Vec<(Vec<(i64, usize)>, f64)> = by_words
                    .iter()
                    .chain(&by_meaning)
                    .map(|o| (ranked(o), 1.0))
                    .chain(by_outline.map(|o| (o, OUTLINE_WEIGHT)))
                    .chain(words_outline.map(|o| (o, OUTLINE_WORDS_WEIGHT)))
                    .collect();
                orders.push(match rankings.len() {
                    0 => return Err(WorkspaceError::BadQuery(
                        "no unit of the workspace has a vector yet: run `burrow workspace embed`"
                            .into(),
                    )),
                    // Each outlines' ranking comes with the ranking it was taken from, so
                    // one ranking alone is words' or meaning's.
                    1 => by_words.or(by_meaning).unwrap_or_default(),
                    _ => fuse(&rankings, k),
                });
            }
            let mut orders = orders.into_iter();
            let mut order = orders.next().unwrap_or_default();
            let mut rankings = Vec::new();
            if leans {
                let kind_order = orders.next().unwrap_or_default();
                rankings.push((ranked(&order), ALL_KINDS_WEIGHT));
                rankings.push((ranked(&kind_order), 1.0));
            } else {
                rankings.push((ranked(&order), 1.0));
            }
            // Asked for a pull request, people describe the problem it fixed: the issue that
            // reported it is found by those words, and the pull requests linked to the issues
            // found rank where those issues rank, with the weight of that evidence.
            if let Some(issue_order) = orders.next() {
                let (fixing, fixing_rows) = self.fixing_prs(&issue_order, &rows, depth, q)?;
                rankings.push((fixing, LINK_WEIGHT));
                for (id, r) in fixing_rows {
                    rows.entry(id).or_insert(r);
                }
            }
            if rankings.len() > 1 {
                order = fuse(&rankings, k);
            }
            let units = order
                .into_iter()
                .filter_map(|(id, score)| {
                    rows.remove(&id).map(|mut r| {
                        // Higher is better here; `page` reports words' BM25 negated.
                        r.score = -score;
                        r
                    })
                })
                .filter(|r| {
                    keep.as_ref()
                        .is_none_or(|kinds| kinds.iter().any(|k| k.as_str() == r.kind))
                });
            for item in fold_items(units) {
                if held.insert(ItemKey::of(&item)) {
                    shown.push(item);
                }
            }
            if shown.len() >= needed || !full || depth > RANK_ROWS {
                let page: Vec<RawHit> = shown.into_iter().skip(q.offset).take(limit + 1).collect();
                return self.page(q, page, limit, note);
            }
            depth *= 4;
        }
    }

    /// The rankings by words of `subs` (one query, each of its rankings kept to some kinds):
    /// from one ranking of every match where the query ranks them all, else one by one.
    fn words_rankings(
        &self,
        subs: &[SearchQuery],
        depth: usize,
    ) -> Result<Vec<WordsRanking>, WorkspaceError> {
        // One ranking serves them all only where they differ in kinds alone.
        let same_filters = subs.iter().all(|s| {
            subs.first().is_some_and(|f| {
                (
                    &s.repo, &s.state, &s.label, &s.author, &s.path, s.since, s.until,
                ) == (
                    &f.repo, &f.state, &f.label, &f.author, &f.path, f.since, f.until,
                )
            })
        });
        if subs.len() > 1 && same_filters {
            if let Some(shared) = self.words_rankings_shared(subs, depth)? {
                return Ok(shared);
            }
        }
        subs.iter()
            .map(|sub| self.words_ranking(sub, depth))
            .collect()
    }

    /// `words_rankings` from one pass: the query's matches over the kinds of all of `subs`,
    /// each scored once, then each ranking's kinds taken from that list. A row scores the same
    /// whichever kinds a ranking keeps to (the kind is a facet, of weight 0), so this is each
    /// ranking as it would come alone, less the index walks of all but one (a third of a
    /// search asking for a pull request). None where the query ranks only a part of its
    /// matches (`Scope` other than whole): the parts would differ by kind.
    fn words_rankings_shared(
        &self,
        subs: &[SearchQuery],
        depth: usize,
    ) -> Result<Option<Vec<WordsRanking>>, WorkspaceError> {
        let Some(first) = subs.first() else {
            return Ok(Some(Vec::new()));
        };
        let mut kinds: Vec<Kind> = Vec::new();
        if subs.iter().all(|s| !s.kinds.is_empty()) {
            for k in subs.iter().flat_map(|s| s.kinds.iter()) {
                if !kinds.contains(k) {
                    kinds.push(*k);
                }
            }
        }
        let shared = SearchQuery {
            kinds,
            ..first.clone()
        };
        let plan = self.words_plan(&shared)?;
        if plan.scope != Scope::Whole {
            return Ok(None);
        }
        let conn = self.conn();
        let all = match plan.scored {
            Some(mut scored) => {
                sql::sort_ranked(&mut scored);
                scored
            }
            None => sql::rank_all(&conn, &plan.expr, &plan.post)?,
        };
        // A kind's rows come from its facet's list in the index: reading each match's kind
        // from its row made the searches that lean to no kind 1.19-1.26x slower (README).
        let mut of_kind = HashMap::new();
        {
            let mut cache = self.phrase_rows.lock().unwrap_or_else(|e| e.into_inner());
            for k in subs.iter().flat_map(|s| s.kinds.iter()) {
                if !of_kind.contains_key(k) {
                    of_kind.insert(*k, cache.facet(&conn, &facet_token('k', k.as_str()))?);
                }
            }
        }
        let orders: Vec<Vec<(i64, f64)>> = subs
            .iter()
            .map(|sub| {
                all.iter()
                    .filter(|(id, _)| {
                        sub.kinds.is_empty()
                            || sub
                                .kinds
                                .iter()
                                .any(|k| of_kind.get(k).is_some_and(|s| s.contains(id)))
                    })
                    // As many as a ranking of its own reads (`words_ranking`).
                    .take(depth + 1)
                    .map(|&(id, bm25)| (id, -bm25))
                    .collect()
            })
            .collect();
        let mut ids: Vec<i64> = orders.iter().flatten().map(|(id, _)| *id).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut rows = sql::rows_by_ids(&conn, &ids, &shared)?;
        drop(conn);
        for (id, score) in orders.iter().flatten() {
            if let Some(r) = rows.get_mut(id) {
                r.score = -score;
            }
        }
        // The rows go with the first ranking only: the caller keeps them all in one map.
        let mut rows = Some(rows);
        let out = orders
            .into_iter()
            .enumerate()
            .map(|(i, order)| {
                let note = if i == 0 { plan.cut.clone() } else { None };
                (order, rows.take().unwrap_or_default(), note)
            })
            .collect();
        Ok(Some(out))
    }

    /// The first `depth` units for `q` by words, best first with their scores (higher is
    /// better), their rows, and the ranking's note.
    fn words_ranking(&self, q: &SearchQuery, depth: usize) -> Result<WordsRanking, WorkspaceError> {
        let read = self.words_read(q, depth, depth + 1)?;
        let note = read.note(read.rows.len() <= depth);
        let rows = read.rows;
        let order = rows.iter().map(|r| (r.id, -r.score)).collect();
        Ok((order, rows.into_iter().map(|r| (r.id, r)).collect(), note))
    }

    /// The first `depth` units for `q` of `near` (its scan of the vectors, best first with
    /// their similarity) that pass its filters, adding their rows to `rows`.
    fn meaning_ranking(
        &self,
        q: &SearchQuery,
        near: Vec<(i64, f32)>,
        depth: usize,
        rows: &mut HashMap<i64, RawHit>,
    ) -> Result<Vec<(i64, f64)>, WorkspaceError> {
        let ids: Vec<i64> = near
            .iter()
            .map(|(id, _)| *id)
            .filter(|id| !rows.contains_key(id))
            .collect();
        let found = sql::rows_by_ids(&self.conn(), &ids, q)?;
        rows.extend(found);
        // Rows already read passed the same filters (the rankings of one search differ only
        // in kinds, which the scan applies), so only the others are read, through the filters.
        Ok(near
            .into_iter()
            .filter(|(id, _)| rows.contains_key(id))
            .take(depth)
            .map(|(id, s)| (id, f64::from(s)))
            .collect())
    }

    /// The files' outlines among `order` (a ranking by words), in its order: the outline units,
    /// and the units that are their file's only one (each its own outline, as in the ranking
    /// by meaning).
    fn outlines_by_words(order: &[(i64, f64)], rows: &HashMap<i64, RawHit>) -> Vec<(i64, f64)> {
        order
            .iter()
            .filter(|(id, _)| {
                rows.get(id)
                    .is_some_and(|r| r.kind == "code" && r.role != Role::Part)
            })
            .copied()
            .collect()
    }

    /// The id of the repository `q` keeps to, if it names one.
    fn repo_id_of(&self, q: &SearchQuery) -> Result<Option<i64>, WorkspaceError> {
        Ok(q.repo
            .as_deref()
            .map(|r| self.repo(r))
            .transpose()?
            .map(|r| r.id))
    }

    /// The pull requests linked as fixing the issues of `order` (their first units), each at
    /// the rank of the best issue it fixed, and their rows (filtered as `q` says).
    #[allow(clippy::type_complexity)]
    fn fixing_prs(
        &self,
        order: &[(i64, f64)],
        rows: &HashMap<i64, RawHit>,
        depth: usize,
        q: &SearchQuery,
    ) -> Result<(Vec<(i64, usize)>, HashMap<i64, RawHit>), WorkspaceError> {
        let mut ids: Vec<(i64, usize)> = Vec::new();
        {
            let conn = self.conn();
            let mut st = conn
                .prepare_cached(FIXING_PRS)
                .map_err(db_err("reading links"))?;
            for (rank, (id, _)) in order.iter().take(depth).enumerate() {
                let Some(row) = rows.get(id) else { continue };
                let (Some(n), "issue") = (row.number, row.kind.as_str()) else {
                    continue;
                };
                let found = st
                    .query_map(rusqlite::params![row.repo_id, n], |r| r.get::<_, i64>(0))
                    .map_err(db_err("reading links"))?;
                for pr in found {
                    let pr = pr.map_err(db_err("reading links"))?;
                    if !ids.iter().any(|(seen, _)| *seen == pr) {
                        ids.push((pr, rank + 1));
                    }
                }
            }
        }
        let plain: Vec<i64> = ids.iter().map(|(id, _)| *id).collect();
        let found = sql::rows_by_ids(&self.conn(), &plain, q)?;
        ids.retain(|(id, _)| found.contains_key(id));
        Ok((ids, found))
    }

    /// A page of hits from rows read for it (up to `limit + 1`: one more says there is a next
    /// page).
    fn page(
        &self,
        q: &SearchQuery,
        rows: Vec<RawHit>,
        limit: usize,
        note: Option<String>,
    ) -> Result<SearchPage, WorkspaceError> {
        // What the query also searched for is shown where it matched, as the words typed are.
        // A search by meaning alone searched for nothing more.
        let (added, joined) = if q.mode == SearchMode::Meaning {
            (Vec::new(), std::sync::Arc::new(Vec::new()))
        } else {
            let conn = self.conn();
            let mut cache = self.phrase_rows.lock().unwrap_or_else(|e| e.into_inner());
            (
                Self::abbreviations_for(&conn, &mut cache, &q.text)?,
                Self::compounds_for(&conn, &mut cache, &q.text)?,
            )
        };
        let needles = needles(
            &std::iter::once(q.text.as_str())
                .chain(added.iter().map(|a| a.added.as_str()))
                .chain(joined.iter().map(|c| c.joined.as_str()))
                .collect::<Vec<_>>()
                .join(" "),
        );
        let mut hits = Vec::new();
        for row in rows {
            let Ok(kind) = Kind::parse(&row.kind) else {
                continue;
            };
            // For code and documents: the line of the first match within the unit, and the
            // snippet is that line and the two after it. Elsewhere words around the first
            // match, on one line.
            let (line, snippet) = match (kind, row.line) {
                (Kind::Code | Kind::Doc, Some(start)) => {
                    let idx = first_matching_line(&row.body, &needles);
                    // An outline's lines are not consecutive lines of the file: it is cited at
                    // its first, the file's first documentation or declaration.
                    let offset = if is_outline(&row) { 0 } else { idx as i64 };
                    (Some(start + offset), line_snippet(&row.body, idx, &needles))
                }
                // A commit's changed lines are lines of code and text, as a file's are.
                _ if row.role == Role::Changes => {
                    let idx = first_matching_line(&row.body, &needles);
                    (None, line_snippet(&row.body, idx, &needles))
                }
                _ => (row.line, words_snippet(&row.body, &needles, SNIPPET_WORDS)),
            };
            let linked = match (kind, row.number) {
                (Kind::Issue | Kind::Pr, Some(n)) => crate::workspace::queries::linked(
                    &self.conn(),
                    row.repo_id,
                    n,
                    kind == Kind::Pr,
                )?,
                _ => Vec::new(),
            };
            hits.push(SearchHit {
                kind,
                repo: row.repo,
                title: row.title,
                snippet: snippet.trim().to_string(),
                path: row.path,
                line,
                number: row.number,
                comment_id: row.comment_id,
                hash: row.hash,
                in_changes: row.role == Role::Changes,
                state: row.state,
                author: row.author,
                time: row.time,
                // Lower is better for the rank function; report higher-is-better.
                score: -row.score,
                linked,
                also: row.also,
            });
        }
        let next_offset = (hits.len() > limit).then(|| q.offset + limit);
        hits.truncate(limit);
        Ok(SearchPage {
            hits,
            next_offset,
            note,
        })
    }

    /// A page of items by words: units read from the first, enough for the page once folded
    /// into items (more if the first read falls short), and the page's part of them.
    fn words_items(
        &self,
        q: &SearchQuery,
        limit: usize,
    ) -> Result<(Vec<RawHit>, Option<String>), WorkspaceError> {
        let needed = q.offset + limit + 1;
        let mut units = needed * UNITS_PER_ITEM;
        loop {
            let mut read = self.words_read(q, units, needed)?;
            let rows = std::mem::take(&mut read.rows);
            let read_all = rows.len() <= units;
            let items = fold_items(rows);
            // A ranking holds at most RANK_ROWS units: past that, reading more finds no more.
            if items.len() >= needed || read_all || units > RANK_ROWS {
                let note = read.note(items.len() <= q.offset + limit);
                let page = items.into_iter().skip(q.offset).take(limit + 1).collect();
                return Ok((page, note));
            }
            units *= 4;
        }
    }

    /// What a search by words ranks: its expression and scope, its filters, the window, and
    /// the note of a query cut to its rarest words.
    fn words_plan(&self, q: &SearchQuery) -> Result<WordsPlan, WorkspaceError> {
        let words = words(&q.text);
        if words.is_empty() {
            return Err(WorkspaceError::BadQuery(
                "the query has no words to search for".into(),
            ));
        }
        let repo_id = self.repo_id_of(q)?;
        let conn = self.conn();
        let mut cache = self.phrase_rows.lock().unwrap_or_else(|e| e.into_inner());
        let mut facet = |token: String| -> Result<Phrase, WorkspaceError> {
            let rows = cache.get(&conn, &token)?;
            Ok(Phrase {
                quoted: format!("\"{token}\""),
                rows,
            })
        };
        let mut facets: Vec<Vec<Phrase>> = Vec::new();
        if let Some(id) = repo_id {
            facets.push(vec![facet(format!("r{id}"))?]);
        }
        if !q.kinds.is_empty() {
            let kinds = q.kinds.iter().map(|k| facet(facet_token('k', k.as_str())));
            facets.push(kinds.collect::<Result<_, _>>()?);
        }
        for (prefix, value) in [('t', &q.state), ('g', &q.label), ('h', &q.author)] {
            if let Some(v) = value {
                facets.push(vec![facet(facet_token(prefix, v))?]);
            }
        }
        let mut clauses = Vec::with_capacity(words.len());
        for (word, phrases) in words {
            let mut ps = Vec::with_capacity(phrases.len());
            for p in phrases {
                ps.push(Phrase {
                    rows: cache.get(&conn, &p)?,
                    quoted: format!("\"{p}\""),
                });
            }
            clauses.push(Clause {
                word,
                phrases: ps,
                added: false,
            });
        }
        // Cut to the words typed first: what is added for them never displaces one.
        let cut = cut_to_rarest(&mut clauses, MAX_QUERY_WORDS);
        let also = Self::abbreviated(&conn, &mut cache, &q.text, &mut clauses)?;
        let cut = join_notes(also, cut);
        let joined = Self::compounded(&conn, &mut cache, &q.text, &mut clauses)?;
        let cut = join_notes(joined, cut);
        let post = PostFilter::from_query(q);
        let window = self.rank_rows.load(std::sync::atomic::Ordering::Relaxed);
        let planned = plan(&conn, &clauses, &facets, &post, window, &mut || {
            cache.units(&conn)
        })?;
        Ok(WordsPlan {
            clauses,
            facets,
            post,
            window,
            expr: planned.expr,
            scope: planned.scope,
            scored: planned.scored,
            cut,
        })
    }

    /// What `text` also searches for: the abbreviations the workspace defines for long forms
    /// it writes ("byte-order mark": BOM), and the long forms of the abbreviations it writes,
    /// each with what was typed for it and how many rows hold it. People ask in words, and
    /// trackers and code write the abbreviations, or the other way round.
    fn abbreviations_for(
        conn: &rusqlite::Connection,
        cache: &mut plan::PhraseRows,
        text: &str,
    ) -> Result<Vec<Abbreviated>, WorkspaceError> {
        let defined = cache.abbreviations(conn)?;
        let mut out: Vec<Abbreviated> = Vec::new();
        if defined.by_long.is_empty() {
            return Ok(out);
        }
        // A word in a tenth of the units or more weighs little in the ranking (BM25's IDF),
        // and in thousands of them it widens what is ranked: "PR" for "pull request" in a
        // tracker (a search's time; in a small workspace nothing is common).
        let common = Self::most_rows_added(conn, cache)?;
        // Each distinct once, and looked up in sets: a query that repeats a word thousands of
        // times costs what its distinct words and runs cost.
        let mut seen = HashSet::new();
        let runs: Vec<String> = runs(text)
            .into_iter()
            .filter(|r| seen.insert(r.clone()))
            .collect();
        let typed: Vec<String> = tokens(text).filter(|w| seen.insert(w.clone())).collect();
        let typed_set: HashSet<&String> = typed.iter().collect();
        let runs_set: HashSet<&String> = runs.iter().collect();
        let forward = runs.iter().flat_map(|run| {
            let abbrs = defined
                .by_long
                .get(run)
                .or_else(|| defined.by_long.get(&format!("{run}s")))
                .or_else(|| run.strip_suffix('s').and_then(|r| defined.by_long.get(r)));
            abbrs
                .into_iter()
                .flatten()
                .take(MAX_ABBREVIATIONS)
                .map(move |a| (run, a, true))
        });
        let back = typed.iter().flat_map(|word| {
            let longs = defined
                .by_abbr
                .get(word)
                .or_else(|| word.strip_suffix('s').and_then(|w| defined.by_abbr.get(w)));
            longs
                .into_iter()
                .flatten()
                .take(MAX_ABBREVIATIONS)
                .map(move |l| (word, l, false))
        });
        let mut tried: HashSet<&String> = HashSet::new();
        for (typed_as, added, is_abbr) in forward.chain(back) {
            let already = if is_abbr {
                typed_set.contains(added)
            } else {
                runs_set.contains(added)
            };
            if already || !tried.insert(added) {
                continue;
            }
            if out.len() == MAX_ADDED {
                break;
            }
            let rows = cache.get(conn, added)?;
            if rows <= common {
                out.push(Abbreviated {
                    typed: typed_as.clone(),
                    added: added.clone(),
                    rows,
                    abbreviation: is_abbr,
                });
            }
        }
        Ok(out)
    }

    /// Adds to `clauses` what the query also searches for (`abbreviations_for`), and says so.
    fn abbreviated(
        conn: &rusqlite::Connection,
        cache: &mut plan::PhraseRows,
        text: &str,
        clauses: &mut Vec<Clause>,
    ) -> Result<Option<String>, WorkspaceError> {
        let added = Self::abbreviations_for(conn, cache, text)?;
        let mut said: Vec<String> = Vec::new();
        for a in &added {
            let (word, typed) = if a.abbreviation {
                (a.added.to_uppercase(), format!("\"{}\"", a.typed))
            } else {
                (format!("\"{}\"", a.added), a.typed.to_uppercase())
            };
            let said_as = format!("{word} for {typed}");
            if add_clause(clauses, word, &a.added, a.rows) {
                said.push(said_as);
            }
        }
        Ok((!said.is_empty()).then(|| {
            format!(
                "also searched for {} (abbreviations this workspace defines)",
                said.join(", ")
            )
        }))
    }

    /// The most rows a term searched for beside the words typed (an abbreviation, a name
    /// written as one word) may be in: one in ten units, and never fewer than a thousand.
    fn most_rows_added(
        conn: &rusqlite::Connection,
        cache: &mut plan::PhraseRows,
    ) -> Result<f64, WorkspaceError> {
        Ok((cache.units(conn)? / COMMON_ABBREVIATION).max(COMMON_ABBREVIATION_ROWS))
    }

    /// The workspace's names written as one word from the words of `text`
    /// (`compound::compounds`), as common as an abbreviation searched for may be.
    fn compounds_for(
        conn: &rusqlite::Connection,
        cache: &mut plan::PhraseRows,
        text: &str,
    ) -> Result<std::sync::Arc<Vec<compound::Compound>>, WorkspaceError> {
        let common = Self::most_rows_added(conn, cache)?;
        compound::compounds(conn, cache, text, common)
    }

    /// Adds to `clauses` the workspace's names written as one word from the query's words
    /// (`compound::compounds`), and says so.
    fn compounded(
        conn: &rusqlite::Connection,
        cache: &mut plan::PhraseRows,
        text: &str,
        clauses: &mut Vec<Clause>,
    ) -> Result<Option<String>, WorkspaceError> {
        let mut said: Vec<String> = Vec::new();
        for c in Self::compounds_for(conn, cache, text)?.iter() {
            if add_clause(clauses, format!("\"{}\"", c.joined), &c.joined, c.rows) {
                said.push(format!("{} for {}", c.joined, c.parts.join(" + ")));
            }
        }
        Ok((!said.is_empty()).then(|| {
            format!(
                "also searched for {} (names this workspace writes as one word)",
                said.join(", ")
            )
        }))
    }

    /// Up to `read + 1` units ranked by words from the first, for a caller that needs
    /// `needed` results of them (the page's items, or a ranking's depth): where too few rows
    /// hold every word for that, the newest with any of them rank instead.
    fn words_read(
        &self,
        q: &SearchQuery,
        read: usize,
        needed: usize,
    ) -> Result<WordsRead, WorkspaceError> {
        let WordsPlan {
            clauses,
            facets,
            post,
            window,
            expr,
            mut scope,
            scored,
            cut,
        } = self.words_plan(q)?;
        let conn = self.conn();
        let windowed = matches!(
            scope,
            Scope::Every { .. } | Scope::Newest { .. } | Scope::EveryThenNewest { .. }
        );
        let from_scored = match scored {
            Some(mut scored) => {
                sql::sort_ranked(&mut scored);
                let rows = sql::page_of_ranked(&conn, &scored, q, read + 1, 0)?;
                // A row the indexer removed after it was scored (the connection was let go
                // in between) would cut the page short: then the statement ranks them again.
                (rows.len() == scored.len().min(read + 1)).then_some(rows)
            }
            None => None,
        };
        let (mut rows, mut ranked) = match from_scored {
            Some(rows) => (rows, None),
            None => rank_page(&conn, &expr, &post, windowed.then_some(window), read + 1, 0)?,
        };
        if let Scope::Every { common } = &scope {
            let every = ranked.unwrap_or(0);
            if every < needed {
                // Too few rows have every word to fill what is asked: the newest with any of
                // them come after those (all of which are read: `every < needed <= read + 1`).
                // After, not instead: instead, a page reaching past them ranked other rows
                // than the page before it, and pages read one after another skipped some.
                let all: Vec<&Clause> = clauses.iter().collect();
                let any = Expr::new(&all, " OR ", &facets);
                let (more, any_ranked) = rank_page(&conn, &any, &post, Some(window), read + 1, 0)?;
                let held: HashSet<i64> = rows.iter().map(|r| r.id).collect();
                rows.extend(more.into_iter().filter(|r| !held.contains(&r.id)));
                rows.truncate(read + 1);
                scope = Scope::EveryThenNewest {
                    common: common.clone(),
                    every,
                };
                ranked = any_ranked;
            }
        }
        Ok(WordsRead {
            rows,
            cut,
            scope,
            ranked: ranked.unwrap_or(0),
            window,
        })
    }
}

/// One thing a query also searches for (`Workspace::abbreviations_for`).
struct Abbreviated {
    /// What was typed for it: a long form, or an abbreviation, lowercase.
    typed: String,
    /// What is searched for as well: the abbreviation, or the long form.
    added: String,
    /// How many rows hold `added`.
    rows: f64,
    /// Whether `added` is the abbreviation (of a long form typed).
    abbreviation: bool,
}

/// Units read by words, with what the ranking's note needs.
struct WordsRead {
    rows: Vec<RawHit>,
    cut: Option<String>,
    scope: Scope,
    ranked: usize,
    window: usize,
}

impl WordsRead {
    /// The note for a page, `last` when no results come after it.
    fn note(&self, last: bool) -> Option<String> {
        join_notes(
            self.cut.clone(),
            self.scope.note(self.ranked, self.window, last),
        )
    }
}

/// A ranking by words: units best first with their scores (higher is better), their rows
/// (those of several rankings may all come with the first), and the ranking's note.
type WordsRanking = (Vec<(i64, f64)>, HashMap<i64, RawHit>, Option<String>);

/// A search by words, planned (`Workspace::words_plan`).
struct WordsPlan {
    clauses: Vec<Clause>,
    facets: Vec<Vec<Phrase>>,
    post: PostFilter,
    window: usize,
    expr: Expr,
    scope: Scope,
    /// Every match, scored, where planning had to walk them (`Planned::scored`).
    scored: Option<Vec<(i64, f64)>>,
    /// Set when the query was cut to its rarest words, or searched for abbreviations too.
    cut: Option<String>,
}

/// Each of `subs`' scan of the vectors `ix` holds for `vector`: the units nearest it among
/// the kinds the ranking keeps to (and `repo`), deeper than `depth` where filters the scan
/// cannot apply will drop some; then, for each sub that `ranks_outlines`, the files' outlines
/// nearest it. None when no unit has a vector.
#[allow(clippy::type_complexity)]
fn meaning_scans<'a>(
    ix: Option<&VectorIndex>,
    subs: &'a [SearchQuery],
    vector: &[f32],
    depth: usize,
    repo: Option<i64>,
) -> Result<Option<Vec<Vec<(i64, f32)>>>, WorkspaceError> {
    let Some(ix) = ix else { return Ok(None) };
    let ask = |q: &'a SearchQuery, outlines| Ask {
        n: scan_depth(q, depth),
        kinds: q.kinds.as_slice(),
        outlines,
    };
    let asks: Vec<Ask> = subs
        .iter()
        .map(|q| ask(q, false))
        .chain(
            subs.iter()
                .filter(|q| ranks_outlines(q))
                .map(|q| ask(q, true)),
        )
        .collect();
    ix.nearest_each(vector, &asks, repo).map(Some)
}

/// How many units a scan of the vectors reads for a ranking `depth` deep: the filters other
/// than kinds and repository are applied to the rows after it, so a filtered one reads more.
fn scan_depth(q: &SearchQuery, depth: usize) -> usize {
    let filtered = q.state.is_some()
        || q.label.is_some()
        || q.author.is_some()
        || q.path.is_some()
        || q.since.is_some()
        || q.until.is_some();
    depth * if filtered { 10 } else { 1 }
}

/// Whether the rankings kept to `q`'s kinds are fused with rankings of files by their outlines
/// (by meaning, and by words: so a search kept to code in words alone is fused too): a search
/// kept to code (and documents, as "where is …" leans) asks which file does something, which
/// the file's outline says better than any part of it. Beside other kinds it would favour code
/// over them.
fn ranks_outlines(q: &SearchQuery) -> bool {
    q.kinds.contains(&Kind::Code) && q.kinds.iter().all(|k| matches!(k, Kind::Code | Kind::Doc))
}

/// A file's outline (`text::outline_unit`).
fn is_outline(r: &RawHit) -> bool {
    r.kind == "code" && r.role == Role::Outline
}

/// The units of each file that the rankings `others` hold, for `to_files`.
fn file_parts(
    others: [&Option<Vec<(i64, f64)>>; 2],
    rows: &HashMap<i64, RawHit>,
) -> HashMap<ItemKey, Vec<i64>> {
    let mut parts: HashMap<ItemKey, Vec<i64>> = HashMap::new();
    for &(id, _) in others.into_iter().flatten().flatten() {
        if let Some(r) = rows.get(&id) {
            let of_file = parts.entry(ItemKey::of(r)).or_default();
            if !of_file.contains(&id) {
                of_file.push(id);
            }
        }
    }
    parts
}

/// The ranking of outlines `outlines` given to their files: each outline's rank goes to it and
/// to every unit of its file in `parts` (`file_parts`), so that it adds to the file's best part
/// as it does to the one unit of a file that is its own outline (fusion adds up per unit).
fn to_files(
    outlines: &[(i64, f64)],
    parts: &HashMap<ItemKey, Vec<i64>>,
    rows: &HashMap<i64, RawHit>,
) -> Vec<(i64, usize)> {
    let mut out = Vec::new();
    for (id, rank) in ranked(outlines) {
        out.push((id, rank));
        let file = rows.get(&id).and_then(|r| parts.get(&ItemKey::of(r)));
        out.extend(
            file.into_iter()
                .flatten()
                .filter(|&&p| p != id)
                .map(|&p| (p, rank)),
        );
    }
    out
}

/// Reciprocal rank fusion of weighted rankings (best first): each unit scores the sum over
/// the rankings that hold it of weight / (k + rank), rank counted from 1 (a ranking may give
/// several units one rank, or skip ranks). Best first; ties keep the
/// first ranking's order.
fn fuse(rankings: &[(Vec<(i64, usize)>, f64)], k: f64) -> Vec<(i64, f64)> {
    let mut scores: Vec<(i64, f64)> = Vec::new();
    let mut at: HashMap<i64, usize> = HashMap::new();
    for (ranking, weight) in rankings {
        for &(id, rank) in ranking {
            let add = weight / (k + rank as f64);
            match at.get(&id) {
                Some(&i) => scores[i].1 += add,
                None => {
                    at.insert(id, scores.len());
                    scores.push((id, add));
                }
            }
        }
    }
    scores.sort_by(|a, b| b.1.total_cmp(&a.1));
    scores
}

/// Keeps the `max` rarest words of a long query, in the query's order (words the index does
/// not hold are left out first: they rank nothing), and says so.
fn cut_to_rarest(clauses: &mut Vec<Clause>, max: usize) -> Option<String> {
    if clauses.len() <= max {
        return None;
    }
    let total = clauses.len();
    let mut order: Vec<usize> = (0..total).collect();
    order.sort_by(|&a, &b| {
        let (ra, rb) = (clauses[a].rows(), clauses[b].rows());
        (ra == 0.0).cmp(&(rb == 0.0)).then(ra.total_cmp(&rb))
    });
    let keep: std::collections::HashSet<usize> = order.into_iter().take(max).collect();
    let mut i = 0;
    clauses.retain(|_| {
        i += 1;
        keep.contains(&(i - 1))
    });
    Some(format!(
        "the query has {total} words: ranked by its {max} rarest ({})",
        clauses
            .iter()
            .map(|c| c.word.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    ))
}

/// Adds the clause `word` searching for `phrase` (held by `rows` rows) beside the words typed,
/// unless a clause searches for that phrase already; whether it did.
fn add_clause(clauses: &mut Vec<Clause>, word: String, phrase: &str, rows: f64) -> bool {
    let quoted = format!("\"{phrase}\"");
    if clauses
        .iter()
        .any(|c| c.phrases.iter().any(|p| p.quoted == quoted))
    {
        return false;
    }
    clauses.push(Clause {
        word,
        phrases: vec![Phrase { quoted, rows }],
        added: true,
    });
    true
}

fn join_notes(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    }
}

/// A ranking's units with their ranks, counted from 1.
fn ranked(order: &[(i64, f64)]) -> Vec<(i64, usize)> {
    order
        .iter()
        .enumerate()
        .map(|(i, (id, _))| (*id, i + 1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issues 1..=n, opened a minute apart, imported as GitHub REST JSON into `o/r`, listed
    /// newest first as `gh api` does: every body has "wallet sync crash"; issues in `keypool`
    /// also say "keypool"; closed when n % 3 == 0, labelled "bug" when even and "GUI" when odd,
    /// by user{n % 5}.
    fn imported(n: u64, keypool: &[u64]) -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let items: Vec<serde_json::Value> = (1..=n)
            .rev()
            .map(|i| {
                let opened = format!("2024-01-01T{:02}:{:02}:00Z", i / 60, i % 60);
                let extra = if keypool.contains(&i) { " keypool" } else { "" };
                serde_json::json!({
                    "number": i, "title": format!("Report {i}"),
                    "body": format!("wallet sync crash{extra}"),
                    "state": if i % 3 == 0 { "closed" } else { "open" },
                    "user": {"login": format!("user{}", i % 5)},
                    "labels": [{"name": if i % 2 == 0 { "bug" } else { "GUI" }}],
                    "created_at": opened, "updated_at": opened,
                })
            })
            .collect();
        let (ws, _) = import_items(dir.path(), &items);
        (dir, ws)
    }

    /// Issue 17, defect 8: about a thousand words gave "too many arguments on function
    /// burrow_rank" and kilobytes of SQL; an offset near `u64::MAX` wrapped around.
    #[test]
    fn a_long_query_is_cut_to_its_rarest_words_and_says_so() {
        let (_dir, ws) = imported(20, &[7]);
        let mut text: Vec<String> = (0..1000).map(|i| format!("filler{i}")).collect();
        text.extend(["wallet".into(), "keypool".into()]);
        let page = ws.search(&query(&text.join(" "))).unwrap();
        assert_eq!(numbers(&page).first(), Some(&7), "{page:?}");
        let note = page.note.unwrap();
        assert!(
            note.contains("1002 words") && note.contains("keypool") && note.contains("wallet"),
            "{note}"
        );
        let far = ws.search(&SearchQuery {
            offset: usize::MAX,
            ..query("wallet")
        });
        assert!(
            matches!(&far, Err(WorkspaceError::BadQuery(m)) if m.contains("offset")),
            "{far:?}"
        );
    }

    /// Issue 18: a query asking for a pull request looked up the PRs linked to each issue found
    /// through the (repository, kind) index, reading every PR unit of the repository each
    /// time: 330 ms of a 345 ms search over bitcoin-core/gui.
    #[test]
    fn linked_pull_requests_are_looked_up_by_number() {
        let (_dir, ws) = imported(3, &[]);
        let conn = ws.conn();
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {FIXING_PRS}"))
            .unwrap()
            .query_map([1, 2], |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            plan.iter()
                .any(|step| step.contains("docs_number") && step.contains("number=?")),
            "{plan:?}"
        );
    }

    /// Issue #1 (peers table freezes when sorted, by ann), the pull request that fixed it, #2
    /// (by bob, merged, "Fixes #1"), and #3, another merged pull request of bob's whose own words
    /// match the question better.
    fn peers_fixed_by_a_pull_request() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let item = |n: i64, title: &str, body: &str, pr: bool| {
            let mut r = serde_json::json!({
                "number": n, "title": title, "body": body, "state": "closed",
                "user": {"login": if pr { "bob" } else { "ann" }},
                "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z"});
            if pr {
                r["pull_request"] =
                    serde_json::json!({"url": "x", "merged_at": "2024-01-02T00:00:00Z"});
            }
            r
        };
        let items = vec![
            item(
                1,
                "Peers table freezes when sorted by address",
                "The node window hangs.",
                false,
            ),
            item(
                2,
                "qt: use a proxy model for the peer list",
                "Fixes #1. Moves the work off the main thread.",
                true,
            ),
            item(
                3,
                "qt: sort the peers table faster",
                "Sorted by address the node window is slow; this tunes sorting.",
                true,
            ),
        ];
        let (ws, _) = import_items(dir.path(), &items);
        (dir, ws)
    }

    /// Issue 18: the agent's first search keeps to the kinds a question asks for, by a filter,
    /// and a filter lost the links a question that only asks for pull requests follows: the
    /// pull request that fixed the issue the words find ranked by its own words alone (0.5B
    /// model: 9 of 17 pull-request questions right, against 12 for search's own first hit).
    #[test]
    fn a_search_kept_to_pull_requests_ranks_the_one_that_fixed_the_issue_its_words_find() {
        let (_dir, ws) = peers_fixed_by_a_pull_request();
        let text = "the peers table freezes when sorted by address";
        let kept = ws
            .search(&SearchQuery {
                kinds: vec![Kind::Pr],
                ..query(text)
            })
            .unwrap();
        assert_eq!(numbers(&kept).first(), Some(&2), "{:?}", kept.hits);
        assert!(!numbers(&kept).contains(&1));
        // A filter to issues ranks by words alone, as before.
        let issues = ws
            .search(&SearchQuery {
                kinds: vec![Kind::Issue],
                ..query(text)
            })
            .unwrap();
        assert_eq!(numbers(&issues), [1]);
    }

    /// Issue 18 (latency): a question asking for a pull request ranked the index three times
    /// (every kind, pull requests, issues), 35 + 19 + 9 ms over bitcoin-core/gui; the shared
    /// pass ranks once and takes each kind's part, and must give each ranking exactly as it
    /// came alone: the same units, in the same order, with the same scores, under filters, to
    /// any depth.
    #[test]
    fn one_pass_gives_each_kind_the_ranking_it_gets_alone() {
        let dir = tempfile::tempdir().unwrap();
        // Each item has one of the query's words (each word in a third of the rows, so every
        // one weighs), repeated 1-4 times, and a length of its own: no two score the same, so
        // the order is the ranking's, not a tie broken one way or the other.
        let items: Vec<serde_json::Value> = (1..=30)
            .map(|n: usize| {
                let word = ["wallet", "sync", "crash"][n % 3];
                let mut r = serde_json::json!({
                    "number": n, "title": format!("Report {n}"),
                    "body": format!("{}{}", format!("{word} ").repeat(n % 4 + 1), "text ".repeat(n)),
                    "state": if n.is_multiple_of(4) { "closed" } else { "open" },
                    "user": {"login": format!("user{}", (n / 2) % 2)},
                    "labels": [{"name": if n % 5 < 3 { "bug" } else { "GUI" }}],
                    "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z"
                });
                if n.is_multiple_of(2) {
                    r["pull_request"] = serde_json::json!({"url": "x"});
                }
                r
            })
            .collect();
        let (ws, file) = import_items(dir.path(), &items);

        let base = query("which pull request fixed the wallet sync crash");
        let filtered = [
            base.clone(),
            SearchQuery {
                state: Some("open".into()),
                ..base.clone()
            },
            SearchQuery {
                label: Some("bug".into()),
                author: Some("user1".into()),
                repo: Some("o/r".into()),
                ..base.clone()
            },
        ];
        let mut compared = 0;
        for q in filtered {
            for kinds in [vec![], vec![Kind::Pr]] {
                let first = SearchQuery {
                    kinds: kinds.clone(),
                    ..q.clone()
                };
                let subs = kind_subs(first, &q);
                for depth in [3, 100] {
                    let shared = ws.words_rankings_shared(&subs, depth).unwrap().unwrap();
                    let mut rows: HashMap<i64, RawHit> = HashMap::new();
                    for (sub, (order, found, _)) in subs.iter().zip(shared) {
                        rows.extend(found);
                        let (alone, alone_rows, _) = ws.words_ranking(sub, depth).unwrap();
                        assert_eq!(order, alone, "{sub:?} to {depth}");
                        assert!(!alone.is_empty());
                        for (id, score) in &order {
                            let row = &rows[id];
                            assert_eq!(row.score, -score);
                            assert_eq!(row.kind, alone_rows[id].kind);
                            assert_eq!(row.body, alone_rows[id].body);
                        }
                        compared += 1;
                    }
                }
            }
        }
        assert_eq!(compared, 36);

        // A pull request imported after a search is of its kind in the next search (the kinds'
        // rows are kept only while the database is unchanged).
        let subs = [
            base.clone(),
            SearchQuery {
                kinds: vec![Kind::Pr],
                ..base.clone()
            },
        ];
        let before = ws.words_rankings_shared(&subs, 100).unwrap().unwrap();
        let mut more = items.clone();
        more.push(serde_json::json!({
            "number": 31, "title": "Report 31", "body": "wallet sync crash",
            "state": "open", "user": {"login": "ann"}, "pull_request": {"url": "x"},
            "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z"
        }));
        std::fs::write(&file, serde_json::to_vec(&more).unwrap()).unwrap();
        ws.import(&file, "o/r", &mut |_| {}).unwrap();
        let after = ws.words_rankings_shared(&subs, 100).unwrap().unwrap();
        let prs = |r: &[WordsRanking]| r[1].0.len();
        assert_eq!(prs(&after), prs(&before) + 1);
        assert_eq!(after[1].0, ws.words_ranking(&subs[1], 100).unwrap().0);

        // Where the query ranks only a part of its matches, the parts would differ by kind:
        // no shared pass, and the rankings come one by one.
        ws.rank_rows.store(5, std::sync::atomic::Ordering::Relaxed);
        let subs = [
            base.clone(),
            SearchQuery {
                kinds: vec![Kind::Pr],
                ..base.clone()
            },
        ];
        assert!(ws.words_rankings_shared(&subs, 10).unwrap().is_none());
        let each = ws.words_rankings(&subs, 10).unwrap();
        for (sub, (order, _, _)) in subs.iter().zip(each) {
            assert_eq!(order, ws.words_ranking(sub, 10).unwrap().0);
        }
    }

    /// A workspace of `items` (REST issue objects) imported as o/r, and the file they came from.
    fn import_items(
        dir: &std::path::Path,
        items: &[serde_json::Value],
    ) -> (Workspace, std::path::PathBuf) {
        let file = dir.join("items.json");
        std::fs::write(&file, serde_json::to_vec(items).unwrap()).unwrap();
        let ws = Workspace::open_at(&dir.join("w.db")).unwrap();
        ws.import(&file, "o/r", &mut |_| {}).unwrap();
        (ws, file)
    }

    /// An open issue (or pull request) by ann, as GitHub's REST API gives it.
    fn open_item(n: usize, title: &str, body: &str, pr: bool) -> serde_json::Value {
        let mut r = serde_json::json!({
            "number": n, "title": title, "body": body,
            "state": "open", "user": {"login": "ann"},
            "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z"
        });
        if pr {
            r["pull_request"] = serde_json::json!({"url": "x"});
        }
        r
    }

    /// The rankings a pull-request question fuses: `first`, then `q`'s pull requests and issues.
    fn kind_subs(first: SearchQuery, q: &SearchQuery) -> [SearchQuery; 3] {
        let of = |kind| SearchQuery {
            kinds: vec![kind],
            ..q.clone()
        };
        [first, of(Kind::Pr), of(Kind::Issue)]
    }

    /// Review of issue 18's shared pass: rows that score the same (here, items with the same
    /// text) came in whatever order each statement's sorter left them, so the shared pass and
    /// a ranking alone could list tied units differently, and a page cut between them could
    /// hold different items. Ties are now broken by the newest row first, in every statement.
    #[test]
    fn tied_rows_come_in_one_order_whichever_statement_ranks_them() {
        let dir = tempfile::tempdir().unwrap();
        let items: Vec<serde_json::Value> = (1..=40)
            .map(|n: usize| {
                let body = ["wallet sync crash", "sync crash text", "crash text more"][n % 3];
                open_item(n, "Report", body, n.is_multiple_of(2))
            })
            .collect();
        let (ws, _) = import_items(dir.path(), &items);
        let base = query("which pull request fixed the wallet sync crash");
        let subs = kind_subs(base.clone(), &base);
        for depth in [2, 5, 100] {
            let shared = ws.words_rankings_shared(&subs, depth).unwrap().unwrap();
            for (sub, (order, _, _)) in subs.iter().zip(shared) {
                let (alone, rows, _) = ws.words_ranking(sub, depth).unwrap();
                assert_eq!(order, alone, "{sub:?} to {depth}");
                // Within each run of equal scores, the newest item first.
                for pair in alone.windows(2) {
                    if pair[0].1 == pair[1].1 {
                        assert!(
                            rows[&pair[0].0].number > rows[&pair[1].0].number,
                            "{pair:?} at depth {depth}"
                        );
                    }
                }
            }
        }
    }

    /// Issue 18's leftover: the rows of a kind (and the words' counts) that search keeps were
    /// dropped at any commit, so every step an agent run recorded, and every batch of vectors an
    /// embedding pass wrote, made the next search read them again (about 15 ms for a kind of
    /// 100,000 issues). They are now kept until the units themselves change, and a change to
    /// the units from another connection (an import) is still seen.
    #[test]
    fn kept_rows_of_a_kind_outlive_other_writes_and_not_a_change_of_the_units() {
        let dir = tempfile::tempdir().unwrap();
        let item = |n: usize, pr: bool| open_item(n, &format!("Report {n}"), "wallet crash", pr);
        let (ws, file) = import_items(dir.path(), &[item(1, false), item(2, true)]);
        let token = facet_token('k', Kind::Issue.as_str());
        let issues = || {
            let conn = ws.conn();
            let mut cache = ws.phrase_rows.lock().unwrap();
            cache.facet(&conn, &token).unwrap()
        };
        let first = issues();
        assert_eq!(first.len(), 1);
        // What an embedding pass commits, on a connection of its own; what an agent run
        // records, on the connection searches use.
        ws.connect()
            .unwrap()
            .execute("UPDATE vector_changes SET n = n + 1 WHERE id = 1", [])
            .unwrap();
        ws.conn()
            .execute(
                "INSERT INTO runs (task, protocol, status, started_at) VALUES ('t', 'text', 'running', 0)",
                [],
            )
            .unwrap();
        assert!(
            std::sync::Arc::ptr_eq(&first, &issues()),
            "read again after writes that left the units alone"
        );
        // A new issue, imported on the import's own connection, is seen.
        std::fs::write(&file, serde_json::to_vec(&[item(3, false)]).unwrap()).unwrap();
        ws.import(&file, "o/r", &mut |_| {}).unwrap();
        assert_eq!(issues().len(), 2);
    }

    fn numbers(page: &SearchPage) -> Vec<i64> {
        page.hits.iter().filter_map(|h| h.number).collect()
    }

    fn query(text: &str) -> SearchQuery {
        SearchQuery {
            text: text.into(),
            limit: 10,
            ..Default::default()
        }
    }

    #[test]
    fn words_in_too_many_rows_rank_a_part_and_the_page_says_which() {
        let (_dir, ws) = imported(200, &[7, 90, 120]);
        let ws = ws;
        // Within the window everything is ranked and nothing needs saying.
        let page = ws.search(&query("wallet")).unwrap();
        assert_eq!(page.hits.len(), 10);
        assert_eq!(page.note, None);

        ws.rank_rows.store(50, std::sync::atomic::Ordering::Relaxed);
        // A rare word narrows the ranking to its rows, old ones included.
        let page = ws.search(&query("wallet keypool")).unwrap();
        let mut found = numbers(&page);
        found.sort();
        assert_eq!(found, vec![7, 90, 120]);
        let note = page.note.unwrap();
        assert!(
            note.contains("keypool") && note.contains("wallet"),
            "{note}"
        );

        // Every word common: the newest rows with all of them, and the page says so.
        let page = ws.search(&query("wallet sync")).unwrap();
        assert_eq!(page.hits.len(), 10);
        assert!(numbers(&page).iter().all(|&n| n > 150), "{page:?}");
        let note = page.note.unwrap();
        assert!(
            note.contains("newest 50") && note.contains("all of them"),
            "{note}"
        );

        // One common word: the newest matches.
        let page = ws.search(&query("crash")).unwrap();
        assert_eq!(page.hits.len(), 10);
        assert!(numbers(&page).iter().all(|&n| n > 150), "{page:?}");
        assert!(page.note.unwrap().contains("newest 50 matches"));
        // A filter that leaves few rows ranks them all again.
        let page = ws
            .search(&SearchQuery {
                author: Some("user1".into()),
                label: Some("bug".into()),
                ..query("crash")
            })
            .unwrap();
        assert_eq!(page.note, None);
        assert_eq!(page.hits.len(), 10);
        assert!(numbers(&page).iter().all(|&n| n % 10 == 6), "{page:?}");
    }

    /// What a search adds to the words typed (a name written as one word from them, an
    /// abbreviation) is ranked, but never alone decides which rows are: where every word typed
    /// is in too many rows, the rarest rows were those of the added name, and the page held
    /// its one issue only (found in review).
    #[test]
    fn an_added_name_never_alone_narrows_what_is_ranked() {
        let (_dir, ws) = imported_with(|i| {
            if i == 5 {
                "wallet sync, see walletsync"
            } else {
                "wallet sync"
            }
        });
        ws.rank_rows.store(20, std::sync::atomic::Ordering::Relaxed);
        let page = ws.search(&query("wallet sync")).unwrap();
        let note = page.note.clone().unwrap_or_default();
        assert!(note.contains("walletsync for wallet + sync"), "{note}");
        assert_eq!(page.hits.len(), 10, "{note}");
        assert!(note.contains("newest 20"), "{note}");
        // Beside a rare word typed, it narrows too: its rows are ranked with that word's.
        let page = ws.search(&query("wallet sync report 5")).unwrap();
        assert_eq!(numbers(&page).first(), Some(&5), "{:?}", page.note);
    }

    /// Issues numbered 1..=60 whose bodies hold the words `words(i)` gives each.
    fn imported_with(words: impl Fn(u64) -> &'static str) -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let items: Vec<serde_json::Value> = (1..=60u64)
            .map(|i| {
                serde_json::json!({
                    "number": i, "title": format!("Report {i}"), "body": words(i),
                    "state": "open", "user": {"login": "someone"}, "labels": [],
                    "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z",
                })
            })
            .collect();
        let (ws, _) = import_items(dir.path(), &items);
        (dir, ws)
    }

    /// Matches that planning had to count are scored as they are counted (one walk of the
    /// index instead of two): they must rank exactly as when the vocabulary alone shows them
    /// few and the statements rank them, ties (newest first) included, by words alone and in
    /// the one-pass rankings of a query that leans to a kind.
    #[test]
    fn matches_scored_while_counted_rank_as_the_ranking_statements_rank_them() {
        // 30 rows with "alpha", 30 with "beta", 20 with both: 40 match, 60 by the counts.
        let (_dir, ws) = imported_with(|i| match i {
            1..=10 => "alpha wallet",
            11..=30 => "alpha beta wallet",
            31..=40 => "beta wallet",
            _ => "gamma wallet",
        });
        let all = |q: &SearchQuery| {
            let page = ws
                .search(&SearchQuery {
                    limit: MAX_LIMIT,
                    mode: SearchMode::Words,
                    ..q.clone()
                })
                .unwrap();
            (numbers(&page), page.note)
        };
        let queries = [
            query("alpha beta"),
            query("which issue says alpha beta"),
            // Filters the page's rows are read through again.
            SearchQuery {
                state: Some("open".into()),
                author: Some("someone".into()),
                ..query("alpha beta")
            },
        ];
        let counted_never: Vec<_> = queries.iter().map(&all).collect();
        assert_eq!(counted_never[0].0.len(), 40, "{counted_never:?}");
        assert_eq!(counted_never[2], counted_never[0]);
        // Above the 40 matches and the 45 the counts suggest, below the 60 they add up to.
        ws.rank_rows.store(50, std::sync::atomic::Ordering::Relaxed);
        for q in &queries {
            assert!(ws.words_plan(q).unwrap().scored.is_some(), "{q:?}");
        }
        let scored: Vec<_> = queries.iter().map(&all).collect();
        assert_eq!(scored, counted_never);
    }

    /// Where the counts suggest few matches but the rows are many (words that avoid each
    /// other), the search narrows to the rarer words as a counted one does, and says so.
    #[test]
    fn matches_likely_few_but_many_narrow_as_counted_ones_do() {
        let (_dir, ws) = imported_with(|i| match i {
            1..=25 => "alpha wallet",
            _ => "beta wallet",
        });
        // 60 match; the counts suggest 60 * (1 - 35/60 * 25/60) = 45, below the window.
        ws.rank_rows.store(50, std::sync::atomic::Ordering::Relaxed);
        let page = ws
            .search(&SearchQuery {
                limit: MAX_LIMIT,
                ..query("alpha beta")
            })
            .unwrap();
        let mut found = numbers(&page);
        found.sort();
        assert_eq!(found, (1..=25).collect::<Vec<_>>());
        let note = page.note.unwrap();
        assert!(note.contains("alpha") && note.contains("beta"), "{note}");
    }

    #[test]
    fn filters_select_exactly_the_matching_items() {
        let (_dir, ws) = imported(200, &[]);
        let page = ws
            .search(&SearchQuery {
                state: Some("closed".into()),
                label: Some("gui".into()),
                author: Some("USER1".into()),
                kinds: vec![Kind::Issue],
                repo: Some("o/r".into()),
                ..query("crash")
            })
            .unwrap();
        let mut found = numbers(&page);
        found.sort();
        // Closed (n % 3 == 0), odd, and n % 5 == 1.
        assert_eq!(found, vec![21, 51, 81, 111, 141, 171]);
        assert!(page
            .hits
            .iter()
            .all(|h| h.state.as_deref() == Some("closed")));
        for kind in [Kind::Pr, Kind::Code, Kind::Commit] {
            let page = ws
                .search(&SearchQuery {
                    kinds: vec![kind],
                    ..query("crash")
                })
                .unwrap();
            assert!(page.hits.is_empty(), "{kind:?}: {page:?}");
        }
    }

    #[test]
    fn query_words_never_match_the_filter_tokens() {
        let (_dir, ws) = imported(20, &[]);
        assert_eq!(ws.search(&query("crash")).unwrap().hits.len(), 10);
        for word in [
            facet_token('t', "closed"),
            facet_token('h', "user1"),
            facet_token('k', "issue"),
            "r1".to_string(),
        ] {
            let page = ws.search(&query(&word)).unwrap();
            assert!(page.hits.is_empty(), "{word}: {page:?}");
        }
    }

    /// Pages by words of a query whose every word is very common, read one after another,
    /// are one ranking. Where fewer rows than a page reached held every word, that page
    /// ranked the newest rows with any of them instead, so the second page of ten ranked
    /// other rows than the first, and rows with every word were never shown (found in
    /// review, as the fused ranking's pages were).
    #[test]
    fn pages_of_every_word_join_into_one_ranking() {
        let (_dir, ws) = imported_with(|i| match i {
            1..=15 => "alpha wallet",
            16..=30 => "alpha beta wallet",
            31..=45 => "beta wallet",
            _ => "gamma wallet",
        });
        ws.rank_rows.store(20, std::sync::atomic::Ordering::Relaxed);
        let at = |offset, limit| {
            ws.search(&SearchQuery {
                offset,
                limit,
                ..query("alpha beta")
            })
            .unwrap()
        };
        let first = at(0, 10);
        let mut joined = numbers(&first);
        joined.extend(numbers(&at(10, 10)));
        let whole = at(0, 20);
        assert_eq!(joined, numbers(&whole));
        // The 15 with both words first, then the newest with either.
        let mut both = numbers(&whole)[..15].to_vec();
        both.sort();
        assert_eq!(both, (16..=30).collect::<Vec<_>>());
        let note = whole.note.unwrap_or_default();
        assert!(
            note.contains("the 15 results with all of them come first")
                && note.contains("newest 20"),
            "{note}"
        );
    }

    /// A search for pull requests kept to merged ones, or to their author, still ranks the
    /// pull request that fixed the issue its words find. The ranking of issues that carries
    /// that evidence took the pull requests' filters too: no issue is merged, and the
    /// reporter is rarely the author of the fix, so it was empty and the words alone ranked
    /// (found in review).
    #[test]
    fn filters_on_pull_requests_keep_the_link_to_the_issue() {
        let (_dir, ws) = peers_fixed_by_a_pull_request();
        let kept = |state: Option<&str>, author: Option<&str>| {
            numbers(
                &ws.search(&SearchQuery {
                    kinds: vec![Kind::Pr],
                    state: state.map(str::to_string),
                    author: author.map(str::to_string),
                    ..query("the peers table freezes when sorted by address")
                })
                .unwrap(),
            )
        };
        assert_eq!(kept(None, None).first(), Some(&2));
        assert_eq!(kept(Some("merged"), None), vec![2, 3]);
        assert_eq!(kept(None, Some("bob")), vec![2, 3]);
        // The filters still keep the pull requests: none by ann, none open.
        assert!(kept(None, Some("ann")).is_empty());
        assert!(kept(Some("open"), None).is_empty());
    }

    /// A model that fills every field of the search tool writes "" for the filters it does
    /// not want: each filtered nothing, where "" as a state, label or author matched no row,
    /// as a path (the glob `*`) kept no issue, and as a date was refused (found in review).
    #[test]
    fn blank_filters_filter_nothing() {
        use crate::tools::Tool;
        let (_dir, ws) = imported(20, &[]);
        let ws = std::sync::Arc::new(ws);
        let plain = ws.search(&query("wallet crash")).unwrap();
        assert!(!plain.hits.is_empty());
        let blank = ws
            .search(&SearchQuery {
                repo: Some(" ".into()),
                state: Some(String::new()),
                label: Some(String::new()),
                author: Some(String::new()),
                path: Some(String::new()),
                ..query("wallet crash")
            })
            .unwrap();
        assert_eq!(numbers(&blank), numbers(&plain));
        let tool = crate::tools::workspace::Search(ws.clone());
        let input: crate::tools::workspace::SearchInput = serde_json::from_value(
            serde_json::json!({"query": "wallet crash", "repo": "", "state": "", "label": "",
                "author": "", "path": "", "since": "", "until": " "}),
        )
        .unwrap();
        let out = tool.run(input).unwrap();
        assert!(out.text.starts_with("8 results"), "{}", out.text);
    }
}
