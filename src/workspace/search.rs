//! Search: BM25-ranked full-text search over every kind of unit (code, documents, commits,
//! issues, pull requests and their comments), with filters, highlighted snippets and precise
//! locations.

use std::fmt;

use rusqlite::types::Value as SqlValue;
use serde::{Deserialize, Serialize};

use super::text::identifier_parts;
use super::{db_err, Workspace, WorkspaceError};

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
}

const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "how", "i", "in",
    "is", "it", "of", "on", "or", "that", "the", "this", "to", "was", "what", "when", "where",
    "which", "who", "why", "with", "can", "there", "any", "we", "you", "my", "our",
];

/// Turns what the user typed into an FTS5 expression: every word becomes a quoted term (so no
/// character can be taken for query syntax), a compound identifier matches both as its words
/// (`"parse args"`) and joined (`"parseargs"`), common words are dropped, and the terms are
/// OR-ed: BM25 ranks the units that match more of them first.
pub fn fts_expression(text: &str) -> Option<String> {
    let mut clauses: Vec<String> = Vec::new();
    for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-' || c == '.')) {
        let word = word.trim_matches(|c: char| c == '.' || c == '-');
        if word.is_empty() {
            continue;
        }
        let parts = identifier_parts(word);
        if parts.is_empty() {
            continue;
        }
        if parts.len() == 1 {
            let p = &parts[0];
            if STOP_WORDS.contains(&p.as_str()) {
                continue;
            }
            clauses.push(format!("\"{p}\""));
        } else {
            clauses.push(format!(
                "(\"{}\" OR \"{}\")",
                parts.join(" "),
                parts.concat()
            ));
        }
    }
    clauses.dedup();
    (!clauses.is_empty()).then(|| clauses.join(" OR "))
}

/// The words of a query, lowercased, to locate the matching line in a chunk.
fn needles(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        if word.len() < 2 || STOP_WORDS.contains(&word.to_lowercase().as_str()) {
            continue;
        }
        out.push(word.to_lowercase());
        for p in identifier_parts(word) {
            if p.len() >= 3 {
                out.push(p);
            }
        }
    }
    out.sort();
    out.dedup();
    // Whole words first: a line with `parse_args` beats one with `args`.
    out.sort_by_key(|w| std::cmp::Reverse(w.len()));
    out
}

impl Workspace {
    pub fn search(&self, q: &SearchQuery) -> Result<SearchPage, WorkspaceError> {
        let Some(expr) = fts_expression(&q.text) else {
            return Err(WorkspaceError::BadQuery(
                "the query has no words to search for".into(),
            ));
        };
        let limit = q.limit.clamp(1, MAX_LIMIT);
        let mut sql = String::from(
            "SELECT docs.kind, repos.name, docs.title,
                    snippet(docs_fts, 1, '«', '»', '…', 24),
                    docs.path, docs.line, docs.number, docs.comment_id, docs.hash, docs.state,
                    docs.author, docs.time, bm25(docs_fts, 8.0, 1.0, 2.0), docs.body
             FROM docs_fts
             JOIN docs ON docs.id = docs_fts.rowid
             JOIN repos ON repos.id = docs.repo_id
             WHERE docs_fts MATCH ?",
        );
        let mut args: Vec<SqlValue> = vec![SqlValue::Text(expr)];
        if !q.kinds.is_empty() {
            let marks = vec!["?"; q.kinds.len()].join(", ");
            sql.push_str(&format!(" AND docs.kind IN ({marks})"));
            args.extend(q.kinds.iter().map(|k| SqlValue::Text(k.as_str().into())));
        }
        if let Some(repo) = &q.repo {
            let r = self.repo(repo)?;
            sql.push_str(" AND docs.repo_id = ?");
            args.push(SqlValue::Integer(r.id));
        }
        if let Some(state) = &q.state {
            sql.push_str(" AND docs.state = ?");
            args.push(SqlValue::Text(state.to_lowercase()));
        }
        if let Some(label) = &q.label {
            sql.push_str(
                " AND EXISTS (SELECT 1 FROM json_each(docs.labels) WHERE lower(json_each.value) = lower(?))",
            );
            args.push(SqlValue::Text(label.clone()));
        }
        if let Some(author) = &q.author {
            sql.push_str(" AND lower(docs.author) = lower(?)");
            args.push(SqlValue::Text(author.clone()));
        }
        if let Some(glob) = &q.path {
            // A glob with no slash matches the file name anywhere in the tree.
            let glob = if glob.contains('/') {
                glob.clone()
            } else {
                format!("*{glob}")
            };
            sql.push_str(" AND docs.path GLOB ?");
            args.push(SqlValue::Text(glob));
        }
        if let Some(since) = q.since {
            sql.push_str(" AND docs.time >= ?");
            args.push(SqlValue::Integer(since));
        }
        if let Some(until) = q.until {
            sql.push_str(" AND docs.time < ?");
            args.push(SqlValue::Integer(until));
        }
        sql.push_str(" ORDER BY bm25(docs_fts, 8.0, 1.0, 2.0) LIMIT ? OFFSET ?");
        args.push(SqlValue::Integer(limit as i64 + 1));
        args.push(SqlValue::Integer(q.offset as i64));

        let needles = needles(&q.text);
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(&sql)
            .map_err(db_err("preparing a search"))?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args.iter()), |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, Option<i64>>(5)?,
                    r.get::<_, Option<i64>>(6)?,
                    r.get::<_, Option<i64>>(7)?,
                    r.get::<_, Option<String>>(8)?,
                    r.get::<_, Option<String>>(9)?,
                    r.get::<_, Option<String>>(10)?,
                    r.get::<_, Option<i64>>(11)?,
                    r.get::<_, f64>(12)?,
                    r.get::<_, String>(13)?,
                ))
            })
            .map_err(db_err("searching"))?;
        let mut hits = Vec::new();
        for row in rows {
            let (
                kind,
                repo,
                title,
                snippet,
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
            ) = row.map_err(db_err("searching"))?;
            let kind = Kind::parse(&kind)?;
            // For code and documents: the line of the first match within the unit, and the
            // snippet is that line and the two after it. Elsewhere FTS5's snippet, on one line.
            let (line, snippet) = match (kind, line) {
                (Kind::Code | Kind::Doc, Some(start)) => {
                    let idx = first_matching_line(&body, &needles);
                    (Some(start + idx as i64), line_snippet(&body, idx, &needles))
                }
                _ => (line, collapse_whitespace(&snippet)),
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
                // bm25() is lower for better matches; report higher-is-better.
                score: -score,
            });
        }
        let next_offset = (hits.len() > limit).then(|| q.offset + limit);
        hits.truncate(limit);
        Ok(SearchPage { hits, next_offset })
    }
}

/// Up to three lines of `body` from line `idx`, dedented, with the needles marked.
fn line_snippet(body: &str, idx: usize, needles: &[String]) -> String {
    let lines: Vec<&str> = body.lines().skip(idx).take(3).map(str::trim_end).collect();
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    lines
        .iter()
        .map(|l| highlight(l.get(indent..).unwrap_or(l.trim_start()), needles))
        .collect::<Vec<_>>()
        .join("\n")
        .trim_end()
        .to_string()
}

/// Marks case-insensitive occurrences of the needles with « ».
fn highlight(line: &str, needles: &[String]) -> String {
    let lower = line.to_lowercase();
    // Byte ranges to mark, from the lowercase copy; only used when lowercasing kept the lengths.
    if lower.len() != line.len() {
        return line.to_string();
    }
    let mut marks = vec![false; line.len()];
    for n in needles {
        let mut from = 0;
        while let Some(pos) = lower[from..].find(n.as_str()) {
            let start = from + pos;
            for m in &mut marks[start..start + n.len()] {
                *m = true;
            }
            from = start + n.len();
        }
    }
    let mut out = String::with_capacity(line.len() + 8);
    let mut inside = false;
    for (i, c) in line.char_indices() {
        if marks[i] && !inside {
            out.push('«');
            inside = true;
        } else if !marks[i] && inside {
            out.push('»');
            inside = false;
        }
        out.push(c);
    }
    if inside {
        out.push('»');
    }
    out
}

fn collapse_whitespace(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Index (0-based) of the first line of `body` that contains one of `needles`
/// (case-insensitive), or 0.
fn first_matching_line(body: &str, needles: &[String]) -> usize {
    for needle in needles {
        for (i, line) in body.lines().enumerate() {
            if line.to_lowercase().contains(needle.as_str()) {
                return i;
            }
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_become_safe_fts_expressions() {
        assert_eq!(
            fts_expression("parse_args").unwrap(),
            r#"("parse args" OR "parseargs")"#
        );
        assert_eq!(
            fts_expression("How does ParseArgs handle -x?").unwrap(),
            r#"("parse args" OR "parseargs") OR "handle" OR "x""#
        );
        // Query syntax in the input stays text.
        assert_eq!(
            fts_expression("a\" OR NOT (b*)").unwrap(),
            r#""not" OR "b""#
        );
        assert_eq!(fts_expression("the of ..."), None);
    }

    #[test]
    fn snippets_mark_the_words() {
        let body = "x\n    // Reuse the KV cache\n        here();\n    done\n    more";
        let n = needles("kv cache");
        assert_eq!(
            line_snippet(body, 1, &n),
            "// Reuse the «KV» «cache»\n    here();\ndone"
        );
        assert_eq!(collapse_whitespace(" a\r\n b  c "), "a b c");
    }

    #[test]
    fn the_matching_line_is_found() {
        let body = "fn main() {\n    let a = 1;\n    parse_args(a);\n}";
        assert_eq!(first_matching_line(body, &needles("parse_args")), 2);
        assert_eq!(first_matching_line(body, &needles("nothing")), 0);
    }
}
