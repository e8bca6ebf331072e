//! Search: BM25-ranked full-text search over every kind of unit (code, documents, commits,
//! issues, pull requests and their comments), with filters, highlighted snippets and precise
//! locations.
//!
//! This module owns the search's types and its course, from what the user typed to a page of
//! hits. The parts: `query` turns the text and filters into FTS5 phrases, `plan` chooses which
//! matches to rank (so that no search ranks too many), `sql` runs the counting and ranking
//! statements, and `snippet` locates and marks the words in each hit's text.

mod plan;
pub(crate) mod query;
mod snippet;
mod sql;

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{Workspace, WorkspaceError};
use plan::{plan, Expr, Scope};
use query::{words, Clause, Phrase};
use snippet::{first_matching_line, line_snippet, needles, words_snippet, SNIPPET_WORDS};
use sql::{rank_page, PostFilter};

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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<i64>,
    pub score: f64,
}

impl SearchHit {
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
                "commit {}",
                self.hash
                    .as_deref()
                    .map(|h| &h[..h.len().min(10)])
                    .unwrap_or("")
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
    /// Set when the ranking was narrowed because the words match too much to rank it all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Workspace {
    pub fn search(&self, q: &SearchQuery) -> Result<SearchPage, WorkspaceError> {
        let words = words(&q.text);
        if words.is_empty() {
            return Err(WorkspaceError::BadQuery(
                "the query has no words to search for".into(),
            ));
        }
        let limit = q.limit.clamp(1, MAX_LIMIT);
        if q.offset > MAX_OFFSET {
            return Err(WorkspaceError::BadQuery(format!(
                "offset {} is past the furthest a page can start ({MAX_OFFSET})",
                q.offset
            )));
        }
        let repo_id = q
            .repo
            .as_deref()
            .map(|r| self.repo(r))
            .transpose()?
            .map(|r| r.id);

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
            clauses.push(Clause { word, phrases: ps });
        }
        let cut = cut_to_rarest(&mut clauses, MAX_QUERY_WORDS);
        let post = PostFilter::from_query(q);
        let needed = q.offset + limit + 1;
        let window = self.rank_rows.load(std::sync::atomic::Ordering::Relaxed);
        let (expr, mut scope) = plan(&conn, &clauses, &facets, &post, window)?;
        let windowed = matches!(scope, Scope::Every { .. } | Scope::Newest { .. });
        let (mut rows, mut ranked) = rank_page(
            &conn,
            &expr,
            &post,
            windowed.then_some(window),
            limit + 1,
            q.offset,
        )?;
        if let Scope::Every { common } = &scope {
            if ranked.unwrap_or(0) < needed {
                // Too few rows have every word: the newest with any of them instead.
                let all: Vec<&Clause> = clauses.iter().collect();
                let any = Expr::new(&all, " OR ", &facets);
                scope = Scope::Newest {
                    common: common.clone(),
                };
                (rows, ranked) = rank_page(&conn, &any, &post, Some(window), limit + 1, q.offset)?;
            }
        }

        let needles = needles(&q.text);
        let mut hits = Vec::new();
        for row in rows {
            let (
                kind,
                repo,
                title,
                path,
                line,
                number,
                comment_id,
                hash,
                state,
                author,
                time,
                score,
                body,
            ) = row;
            let kind = Kind::parse(&kind)?;
            // For code and documents: the line of the first match within the unit, and the
            // snippet is that line and the two after it. Elsewhere words around the first
            // match, on one line.
            let (line, snippet) = match (kind, line) {
                (Kind::Code | Kind::Doc, Some(start)) => {
                    let idx = first_matching_line(&body, &needles);
                    (Some(start + idx as i64), line_snippet(&body, idx, &needles))
                }
                _ => (line, words_snippet(&body, &needles, SNIPPET_WORDS)),
            };
            hits.push(SearchHit {
                kind,
                repo,
                title,
                snippet: snippet.trim().to_string(),
                path,
                line,
                number,
                comment_id,
                hash,
                state,
                author,
                time,
                // Lower is better for the rank function; report higher-is-better.
                score: -score,
            });
        }
        let next_offset = (hits.len() > limit).then(|| q.offset + limit);
        hits.truncate(limit);
        Ok(SearchPage {
            hits,
            next_offset,
            note: join_notes(
                cut,
                scope.note(ranked.unwrap_or(0), window, next_offset.is_none()),
            ),
        })
    }
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

fn join_notes(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    }
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
        let file = dir.path().join("issues.json");
        std::fs::write(&file, serde_json::to_vec(&items).unwrap()).unwrap();
        let ws = Workspace::open_at(&dir.path().join("w.db")).unwrap();
        ws.import(&file, "o/r", &mut |_| {}).unwrap();
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
}
