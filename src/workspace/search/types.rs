//! The search's public types: what is asked (`SearchQuery`, `Kind`, `SearchMode`, and the
//! limits on a query), and what comes back (`SearchHit`, `SearchPage`).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::workspace::WorkspaceError;

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
