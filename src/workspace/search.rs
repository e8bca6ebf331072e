//! Search: BM25-ranked full-text search over every kind of unit (code, documents, commits,
//! issues, pull requests and their comments), with filters, highlighted snippets and precise
//! locations.

use std::collections::HashMap;
use std::fmt;

use rusqlite::types::Value as SqlValue;
use serde::{Deserialize, Serialize};

use rusqlite::{Connection, OptionalExtension};

use super::rank;
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
    /// Set when the ranking was narrowed because the words match too much to rank it all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "how", "i", "in",
    "is", "it", "of", "on", "or", "that", "the", "this", "to", "was", "what", "when", "where",
    "which", "who", "why", "with", "can", "there", "any", "we", "you", "my", "our",
];

/// A phrase of the FTS5 expression (quoted, so nothing in it is query syntax) and how many
/// rows hold it.
#[derive(Debug, Clone, PartialEq)]
struct Phrase {
    quoted: String,
    rows: f64,
}

/// One word of a query: a compound identifier is two phrases, its words (`"parse args"`) and
/// joined (`"parseargs"`).
#[derive(Debug, Clone, PartialEq)]
struct Clause {
    word: String,
    phrases: Vec<Phrase>,
}

impl Clause {
    /// Rows holding the word: at most the sum over its phrases.
    fn rows(&self) -> f64 {
        self.phrases.iter().map(|p| p.rows).sum()
    }
}

/// The words of what the user typed, common words dropped, each spelled as phrases.
fn words(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-' || c == '.')) {
        let word = word.trim_matches(|c: char| c == '.' || c == '-');
        if word.is_empty() {
            continue;
        }
        let parts = identifier_parts(word);
        let phrases = match parts.as_slice() {
            [] => continue,
            [p] if STOP_WORDS.contains(&p.as_str()) => continue,
            [p] => vec![p.clone()],
            _ => vec![parts.join(" "), parts.concat()],
        };
        if !out.iter().any(|(_, p)| *p == phrases) {
            out.push((word.to_string(), phrases));
        }
    }
    out
}

/// What the user typed as an FTS5 expression: its words OR-ed, so that BM25 ranks the units
/// that match more of them first.
pub fn fts_expression(text: &str) -> Option<String> {
    let w = words(text);
    (!w.is_empty()).then(|| {
        w.iter()
            .map(|(_, phrases)| group(phrases.iter().map(|p| format!("\"{p}\""))))
            .collect::<Vec<_>>()
            .join(" OR ")
    })
}

/// Phrases OR-ed, in parentheses when there are several.
fn group(quoted: impl Iterator<Item = String>) -> String {
    let parts: Vec<String> = quoted.collect();
    if parts.len() == 1 {
        parts.into_iter().next().unwrap_or_default()
    } else {
        format!("({})", parts.join(" OR "))
    }
}

/// A filter value as the token the index's `facets` column holds for it: the hex of its
/// lowercase bytes, A and E written Q and Z, after a one-letter prefix naming the filter.
/// Migration 2 in db.rs spells the same tokens in SQL; SQLite's `lower()` folds ASCII only, and
/// so does this.
pub(crate) fn facet_token(prefix: char, value: &str) -> String {
    let mut s = String::with_capacity(1 + 2 * value.len());
    s.push(prefix);
    for b in value.to_ascii_lowercase().bytes() {
        for nibble in [b >> 4, b & 15] {
            s.push(match nibble {
                10 => 'q',
                14 => 'z',
                n => char::from_digit(u32::from(n), 16).unwrap_or('0'),
            });
        }
    }
    s
}

/// How many matching rows one search ranks at most. Ranking costs about a microsecond and a
/// half per row here, so a search stays within a few tens of milliseconds however common its
/// words are; most searches match fewer rows and rank them all.
pub(crate) const RANK_ROWS: usize = 12_000;

/// Given to `burrow_rank` for a phrase that only narrows the matches: it weighs nothing.
const WEIGHS_NOTHING: f64 = 1e18;

/// An FTS5 expression with the row count of each of its phrases, in order, for `burrow_rank`.
#[derive(Debug, Clone)]
struct Expr {
    text: String,
    rows: Vec<f64>,
}

impl Expr {
    /// The words joined by `op`, looked for in the text columns only (never among the facets),
    /// and every facet group required.
    fn new(clauses: &[&Clause], op: &str, facets: &[Vec<Phrase>]) -> Self {
        let mut rows = Vec::new();
        let words: Vec<String> = clauses
            .iter()
            .map(|c| {
                rows.extend(c.phrases.iter().map(|p| p.rows));
                group(c.phrases.iter().map(|p| p.quoted.clone()))
            })
            .collect();
        let mut text = format!("{{title body terms}} : ({})", words.join(op));
        for f in facets {
            rows.extend(f.iter().map(|p| p.rows));
            text.push_str(" AND ");
            text.push_str(&group(f.iter().map(|p| format!("facets : {}", p.quoted))));
        }
        Expr { text, rows }
    }

    /// Only the rows with at least one of `narrow`, ranked by all of `clauses` (the narrowing
    /// phrases weigh nothing, so each word counts once).
    fn narrowed(narrow: &[&Clause], clauses: &[&Clause], facets: &[Vec<Phrase>]) -> Self {
        let inner = Expr::new(clauses, " OR ", &[]);
        let mut rows: Vec<f64> = narrow
            .iter()
            .flat_map(|c| c.phrases.iter().map(|_| WEIGHS_NOTHING))
            .collect();
        rows.extend(inner.rows);
        let narrow_words: Vec<String> = narrow
            .iter()
            .map(|c| group(c.phrases.iter().map(|p| p.quoted.clone())))
            .collect();
        let mut text = format!(
            "{{title body terms}} : (({}) AND ({}))",
            narrow_words.join(" OR "),
            clauses
                .iter()
                .map(|c| group(c.phrases.iter().map(|p| p.quoted.clone())))
                .collect::<Vec<_>>()
                .join(" OR ")
        );
        for f in facets {
            rows.extend(f.iter().map(|p| p.rows));
            text.push_str(" AND ");
            text.push_str(&group(f.iter().map(|p| format!("facets : {}", p.quoted))));
        }
        Expr { text, rows }
    }
}

/// Which matches a search ranks, and so what the page tells the user.
#[derive(Debug, Clone, PartialEq)]
enum Scope {
    /// All of them (fewer than `RANK_ROWS`).
    Whole,
    /// Those with at least one of the rarer words (`rare`); a match with only the very common
    /// ones cannot rank high.
    Narrowed {
        rare: Vec<String>,
        common: Vec<String>,
    },
    /// Those with every word, all of which are very common (`common` names them).
    Every { common: Vec<String> },
    /// The newest `RANK_ROWS`.
    Newest { common: Vec<String> },
}

impl Scope {
    /// What to tell the user, given how many matches were ranked, the window, and whether
    /// this is the last page.
    fn note(&self, ranked: usize, window: usize, last_page: bool) -> Option<String> {
        match self {
            Scope::Whole => None,
            // Said once the results with the rarer words run out, where the user would
            // otherwise expect the rest.
            Scope::Narrowed { rare, common } => last_page.then(|| {
                format!(
                    "only results with {} are ranked: {} alone match too many to rank",
                    rare.join(" or "),
                    common.join(", ")
                )
            }),
            Scope::Every { common } => Some(format!(
                "every word is very common ({}): ranked only {}results that have all of them",
                common.join(", "),
                if ranked >= window {
                    format!("the newest {window} ")
                } else {
                    String::new()
                }
            )),
            Scope::Newest { common } => Some(format!(
                "the words are very common ({}): ranked only the newest {window} matches; \
                 add rarer words or filters to reach older ones",
                common.join(", ")
            )),
        }
    }
}

/// The filters FTS5 cannot apply (path glob, dates), as SQL over `docs`.
#[derive(Default)]
struct PostFilter {
    sql: String,
    args: Vec<SqlValue>,
}

impl PostFilter {
    fn from_query(q: &SearchQuery) -> Self {
        let mut f = PostFilter::default();
        if let Some(glob) = &q.path {
            // A glob with no slash matches the file name anywhere in the tree.
            let glob = if glob.contains('/') {
                glob.clone()
            } else {
                format!("*{glob}")
            };
            f.sql.push_str(" AND docs.path GLOB ?");
            f.args.push(SqlValue::Text(glob));
        }
        if let Some(since) = q.since {
            f.sql.push_str(" AND docs.time >= ?");
            f.args.push(SqlValue::Integer(since));
        }
        if let Some(until) = q.until {
            f.sql.push_str(" AND docs.time < ?");
            f.args.push(SqlValue::Integer(until));
        }
        f
    }

    fn is_empty(&self) -> bool {
        self.sql.is_empty()
    }

    /// `FROM` and `WHERE` for the matches of one expression: its `?` first, then the filter's.
    fn tables_and_conditions(&self) -> String {
        let join = if self.sql.is_empty() {
            ""
        } else {
            " JOIN docs ON docs.id = docs_fts.rowid"
        };
        format!("FROM docs_fts{join} WHERE docs_fts MATCH ?{}", self.sql)
    }

    fn args(&self, expr: &str) -> Vec<SqlValue> {
        let mut args = vec![SqlValue::Text(expr.to_string())];
        args.extend(self.args.iter().cloned());
        args
    }
}

/// How many rows match, counting no further than `upto` (cheap: no ranking).
fn count_upto(
    conn: &Connection,
    expr: &Expr,
    post: &PostFilter,
    upto: usize,
) -> Result<usize, WorkspaceError> {
    let sql = format!(
        "SELECT count(*) FROM (SELECT 1 {} LIMIT ?)",
        post.tables_and_conditions()
    );
    let mut args = post.args(&expr.text);
    args.push(SqlValue::Integer(upto as i64));
    let n: i64 = conn
        .prepare_cached(&sql)
        .and_then(|mut st| st.query_row(rusqlite::params_from_iter(args.iter()), |r| r.get(0)))
        .map_err(db_err("counting matches"))?;
    Ok(n as usize)
}

/// Row counts of phrases, kept while the database is unchanged. FTS5 stores no document
/// frequencies: the vocabulary table counts a word's rows by walking its whole list, several
/// milliseconds for a word in most of 100,000 issues, and the words people search for repeat.
#[derive(Debug, Default)]
pub(crate) struct PhraseRows {
    /// The database state the counts hold for: `PRAGMA data_version` (moves when another
    /// connection commits) and this connection's total changes.
    stamp: (i64, u64),
    rows: HashMap<String, f64>,
}

/// Phrases remembered at most; past that the cache starts again.
const PHRASE_CACHE: usize = 4096;

impl PhraseRows {
    fn get(&mut self, conn: &Connection, phrase: &str) -> Result<f64, WorkspaceError> {
        let version: i64 = conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))
            .map_err(db_err("reading the data version"))?;
        let stamp = (version, conn.total_changes());
        if stamp != self.stamp || self.rows.len() >= PHRASE_CACHE {
            self.rows.clear();
            self.stamp = stamp;
        }
        if let Some(&n) = self.rows.get(phrase) {
            return Ok(n);
        }
        let n = phrase_rows(conn, phrase)?;
        self.rows.insert(phrase.to_string(), n);
        Ok(n)
    }
}

/// How many rows hold each phrase, from the index's vocabulary. A phrase of several words is
/// counted when its rarest word is rare enough to make that cheap, and otherwise taken to be
/// as common as that word (an upper bound).
fn phrase_rows(conn: &Connection, phrase: &str) -> Result<f64, WorkspaceError> {
    let mut rarest: Option<i64> = None;
    for token in rank::query_tokens(conn, phrase)? {
        let n: i64 = conn
            .prepare_cached("SELECT doc FROM docs_vocab WHERE term = ?1")
            .and_then(|mut st| st.query_row([&token], |r| r.get(0)).optional())
            .map_err(db_err("reading the vocabulary"))?
            .unwrap_or(0);
        rarest = Some(rarest.map_or(n, |r| r.min(n)));
    }
    let rarest = rarest.unwrap_or(0);
    if phrase.contains(' ') && (rarest as usize) <= RANK_ROWS {
        let expr = Expr {
            text: format!("{{title body terms}} : \"{phrase}\""),
            rows: Vec::new(),
        };
        return Ok(count_upto(conn, &expr, &PostFilter::default(), RANK_ROWS + 1)? as f64);
    }
    Ok(rarest as f64)
}

/// Chooses what to rank so that no query, however common its words, ranks more than
/// `RANK_ROWS` rows. Most queries match fewer and are ranked whole. Otherwise, as Lucene's
/// common-terms query does: the rows with at least one of the rarer words are ranked by all the
/// words (a row with only very common words cannot score high); when every word is common, the
/// rows with all of them; and when even those are too many, the newest matches, which the page
/// says.
fn plan(
    conn: &Connection,
    clauses: &[Clause],
    facets: &[Vec<Phrase>],
    post: &PostFilter,
    window: usize,
) -> Result<(Expr, Scope), WorkspaceError> {
    let all: Vec<&Clause> = clauses.iter().collect();
    let any = Expr::new(&all, " OR ", facets);
    // Bounds from the vocabulary first: no query at all for most searches.
    let words_bound: f64 = clauses.iter().map(Clause::rows).sum();
    let facet_bound = facets
        .iter()
        .map(|f| f.iter().map(|p| p.rows).sum::<f64>())
        .fold(f64::INFINITY, f64::min);
    if words_bound.min(facet_bound) <= window as f64 {
        return Ok((any, Scope::Whole));
    }
    // Unfiltered, one word alone in too many rows settles it (a one-word phrase's count is
    // exact); filtered, count.
    let surely_many = facets.is_empty()
        && post.is_empty()
        && clauses.iter().any(|c| {
            c.phrases
                .iter()
                .any(|p| !p.quoted.contains(' ') && p.rows >= window as f64)
        });
    if !surely_many && count_upto(conn, &any, post, window)? < window {
        return Ok((any, Scope::Whole));
    }

    let mut by_rows = all.clone();
    by_rows.sort_by(|a, b| a.rows().total_cmp(&b.rows()));
    let mut rare: Vec<&Clause> = Vec::new();
    let mut total = 0.0;
    for c in &by_rows {
        if total + c.rows() > window as f64 {
            break;
        }
        total += c.rows();
        rare.push(c);
    }
    let common: Vec<String> = by_rows
        .iter()
        .filter(|c| !rare.contains(c))
        .map(|c| c.word.clone())
        .collect();
    if !rare.is_empty() {
        return Ok((
            Expr::narrowed(&rare, &all, facets),
            Scope::Narrowed {
                rare: rare.iter().map(|c| c.word.clone()).collect(),
                common,
            },
        ));
    }
    if all.len() > 1 {
        return Ok((Expr::new(&all, " AND ", facets), Scope::Every { common }));
    }
    Ok((any, Scope::Newest { common }))
}

/// A page of ranked matches as read from the database, before snippets.
type RawHit = (
    String,
    String,
    String,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
    f64,
    String,
);

/// Ranks the matches of `expr` and reads the page's rows. With a window: only the newest
/// that many matches, in one pass (FTS5 walks them newest first and stops there), and says how
/// many were ranked (when the page is not empty). Ranking happens on rowids alone: SQLite's
/// sorter would otherwise carry every match's text.
fn rank_page(
    conn: &Connection,
    expr: &Expr,
    post: &PostFilter,
    window: Option<usize>,
    limit: usize,
    offset: usize,
) -> Result<(Vec<RawHit>, Option<usize>), WorkspaceError> {
    let row_args = vec!["?"; expr.rows.len()].join(", ");
    let score = format!(
        "{}(docs_fts, 8.0, 1.0, 2.0, 0.0, {row_args})",
        rank::RANK_FUNCTION
    );
    let matches = post.tables_and_conditions();
    // Unwindowed, SQLite keeps only the best `limit` while scanning; windowed, the window is
    // kept to be counted as well.
    let top = if window.is_some() {
        format!(
            "m AS MATERIALIZED (SELECT docs_fts.rowid AS id, {score} AS score {matches}
                                ORDER BY docs_fts.rowid DESC LIMIT ?),
             top AS (SELECT id, score FROM m ORDER BY score LIMIT ? OFFSET ?)"
        )
    } else {
        format!(
            "top AS (SELECT docs_fts.rowid AS id, {score} AS score {matches}
                     ORDER BY score LIMIT ? OFFSET ?)"
        )
    };
    let ranked_sql = if window.is_some() {
        "(SELECT count(*) FROM m)"
    } else {
        "-1"
    };
    let sql = format!(
        "WITH {top}
         SELECT docs.kind, repos.name, docs.title, docs.path, docs.line, docs.number,
                docs.comment_id, docs.hash, docs.state, docs.author, docs.time, top.score,
                docs.body, {ranked_sql}
         FROM top JOIN docs ON docs.id = top.id JOIN repos ON repos.id = docs.repo_id
         ORDER BY top.score"
    );
    let mut args: Vec<SqlValue> = expr.rows.iter().map(|&r| SqlValue::Real(r)).collect();
    args.extend(post.args(&expr.text));
    if let Some(w) = window {
        args.push(SqlValue::Integer(w as i64));
    }
    args.push(SqlValue::Integer(limit as i64));
    args.push(SqlValue::Integer(offset as i64));
    let mut stmt = conn
        .prepare_cached(&sql)
        .map_err(db_err("preparing a search"))?;
    let mut ranked = None;
    let rows = stmt
        .query_map(rusqlite::params_from_iter(args.iter()), |r| {
            ranked = usize::try_from(r.get::<_, i64>(13)?).ok();
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
                r.get(8)?,
                r.get(9)?,
                r.get(10)?,
                r.get(11)?,
                r.get(12)?,
            ))
        })
        .map_err(db_err("searching"))?
        .collect::<Result<Vec<RawHit>, _>>()
        .map_err(db_err("searching"))?;
    Ok((rows, ranked))
}

/// The words of a query, lowercased, to locate and mark the matches in a unit's text; with
/// crude stems, so `crashes` also marks `crashed` (the index matches on porter stems).
fn needles(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        if word.len() < 2 || STOP_WORDS.contains(&word.to_lowercase().as_str()) {
            continue;
        }
        let lower = word.to_lowercase();
        if let Some(stem) = ["ing", "ed", "es", "s"]
            .iter()
            .find_map(|s| lower.strip_suffix(s))
            .filter(|stem| stem.chars().count() >= 4)
        {
            out.push(stem.to_string());
        }
        out.push(lower);
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
        let words = words(&q.text);
        if words.is_empty() {
            return Err(WorkspaceError::BadQuery(
                "the query has no words to search for".into(),
            ));
        }
        let limit = q.limit.clamp(1, MAX_LIMIT);
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
            note: scope.note(ranked.unwrap_or(0), window, next_offset.is_none()),
        })
    }
}

const SNIPPET_WORDS: usize = 24;

/// About `n` words of `body` around the first needle (a few words of context before it), on one
/// line, with the needles marked and elisions shown as `…`. From the start when no needle is in
/// the body (the match was in the title).
fn words_snippet(body: &str, needles: &[String], n: usize) -> String {
    let words: Vec<&str> = body.split_whitespace().collect();
    let first = words
        .iter()
        .position(|w| {
            let w = w.to_lowercase();
            needles.iter().any(|n| find_word(&w, n, 0).is_some())
        })
        .unwrap_or(0);
    let start = first.saturating_sub(4);
    let end = (start + n).min(words.len());
    let mut out = String::new();
    if start > 0 {
        out.push_str("… ");
    }
    out.push_str(&highlight(&words[start..end].join(" "), needles));
    if end < words.len() {
        out.push_str(" …");
    }
    out
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
        while let Some(start) = find_word(&lower, n, from) {
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

/// The next place from `from` in `lower` where `needle` starts a word (`args` in `parse_args`,
/// `crash` in `crashed`); a needle shorter than four characters must be the whole word, so
/// that `no` does not mark `not`.
fn find_word(lower: &str, needle: &str, from: usize) -> Option<usize> {
    let is_word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let mut at = from;
    while let Some(pos) = lower.get(at..)?.find(needle) {
        let start = at + pos;
        let end = start + needle.len();
        let starts_word = !is_word(lower[..start].chars().next_back());
        let ends_word = needle.chars().count() >= 4 || !is_word(lower[end..].chars().next());
        if starts_word && ends_word {
            return Some(start);
        }
        at = start + needle.chars().next().map_or(1, char::len_utf8);
    }
    None
}

/// Index (0-based) of the first line of `body` that contains one of `needles`
/// (case-insensitive), or 0.
fn first_matching_line(body: &str, needles: &[String]) -> usize {
    for needle in needles {
        for (i, line) in body.lines().enumerate() {
            if find_word(&line.to_lowercase(), needle, 0).is_some() {
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
        let body = "One two three four five six seven crashed eight\nnine ten eleven";
        assert_eq!(
            words_snippet(body, &needles("crashes"), 5),
            "… four five six seven «crash»ed …"
        );
        assert_eq!(words_snippet("a b c", &needles("zzz"), 2), "a b …");
        assert_eq!(
            highlight("no, not now: parse_args(NoArgs)", &needles("no args")),
            "«no», not now: parse_«args»(NoArgs)"
        );
    }

    #[test]
    fn facet_tokens_match_the_sql_spelling_and_survive_stemming() {
        assert_eq!(facet_token('k', "Issue"), "k6973737565");
        // Every A and E nibble is spelled Q and Z: no vowel for the stemmer to act on.
        assert_eq!(facet_token('h', "ed"), "h6564");
        assert_eq!(facet_token('g', "j"), "g6q");
        assert_eq!(facet_token('t', "n"), "t6z");
        let conn = crate::workspace::db::open_in_memory().unwrap();
        for v in [
            "Issue",
            "jo",
            "joed",
            "jos",
            "bug fix",
            "ÄÖ–ü",
            "ed",
            "e",
            "a-b_c",
        ] {
            let sql: String = conn
                .query_row(
                    "SELECT 'x' || replace(replace(hex(lower(?1)), 'A', 'Q'), 'E', 'Z')",
                    [v],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(sql.to_lowercase(), facet_token('x', v), "{v}");
        }
    }

    #[test]
    fn the_matching_line_is_found() {
        let body = "fn main() {\n    let a = 1;\n    parse_args(a);\n}";
        assert_eq!(first_matching_line(body, &needles("parse_args")), 2);
        assert_eq!(first_matching_line(body, &needles("nothing")), 0);
    }

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
