//! The statements a search runs over the FTS index: the filters FTS5 cannot apply, counting
//! matches, and ranking a page of them with `burrow_rank`.

use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;

use super::plan::Expr;
use super::SearchQuery;
use crate::workspace::rank;
use crate::workspace::text::Role;
use crate::workspace::{db_err, WorkspaceError};

/// The filters FTS5 cannot apply (path glob, dates), as SQL over `docs`.
#[derive(Default)]
pub(super) struct PostFilter {
    sql: String,
    args: Vec<SqlValue>,
}

impl PostFilter {
    pub(super) fn from_query(q: &SearchQuery) -> Self {
        let mut f = PostFilter::default();
        if let Some(glob) = &q.path {
            // A glob with no slash matches the file name anywhere in the tree (`path_globs`).
            let [a, b] = crate::workspace::grep::path_globs(glob);
            f.sql
                .push_str(" AND (docs.path GLOB ? OR docs.path GLOB ?)");
            f.args.push(SqlValue::Text(a));
            f.args.push(SqlValue::Text(b));
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

    pub(super) fn is_empty(&self) -> bool {
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
pub(super) fn count_upto(
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

/// A unit as read from the database for a page of hits, before its snippet.
pub(super) struct RawHit {
    pub id: i64,
    pub kind: String,
    pub repo_id: i64,
    pub repo: String,
    pub title: String,
    pub path: Option<String>,
    pub line: Option<i64>,
    pub number: Option<i64>,
    pub comment_id: Option<i64>,
    pub hash: Option<String>,
    pub state: Option<String>,
    pub author: Option<String>,
    pub time: Option<i64>,
    /// What the unit is of its file, for code.
    pub role: Role,
    /// BM25 for words (lower is better); set by the caller for the other modes.
    pub score: f64,
    pub body: String,
    /// Units of the same item ranked below this one and folded into it (`fold_items`).
    pub also: usize,
}

/// The columns `RawHit::read` reads, over `docs` joined to `repos`, then a score.
const HIT_COLUMNS: &str =
    "docs.id, docs.kind, docs.repo_id, repos.name, docs.title, docs.path, docs.line, \
     docs.number, docs.comment_id, docs.hash, docs.state, docs.author, docs.time, docs.role";

impl RawHit {
    fn read(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawHit> {
        Ok(RawHit {
            id: r.get(0)?,
            kind: r.get(1)?,
            repo_id: r.get(2)?,
            repo: r.get(3)?,
            title: r.get(4)?,
            path: r.get(5)?,
            line: r.get(6)?,
            number: r.get(7)?,
            comment_id: r.get(8)?,
            hash: r.get(9)?,
            state: r.get(10)?,
            author: r.get(11)?,
            time: r.get(12)?,
            role: Role::from_db(r.get(13)?),
            score: r.get(14)?,
            body: r.get(15)?,
            also: 0,
        })
    }
}

/// The units of `ids` that pass the query's filters (those the vector scan could not apply:
/// state, label, author, path, dates), by id.
pub(super) fn rows_by_ids(
    conn: &Connection,
    ids: &[i64],
    q: &SearchQuery,
) -> Result<std::collections::HashMap<i64, RawHit>, WorkspaceError> {
    let post = PostFilter::from_query(q);
    let mut sql = format!(
        "SELECT {HIT_COLUMNS}, 0.0, docs.body FROM docs JOIN repos ON repos.id = docs.repo_id
         WHERE docs.id IN (SELECT value FROM json_each(?)){}",
        post.sql
    );
    let mut args = vec![SqlValue::Text(
        serde_json::to_string(ids).unwrap_or_else(|_| "[]".into()),
    )];
    args.extend(post.args.iter().cloned());
    if let Some(state) = &q.state {
        sql.push_str(" AND lower(docs.state) = lower(?)");
        args.push(SqlValue::Text(state.clone()));
    }
    if let Some(author) = &q.author {
        sql.push_str(" AND lower(docs.author) = lower(?)");
        args.push(SqlValue::Text(author.clone()));
    }
    if let Some(label) = &q.label {
        sql.push_str(
            " AND json_valid(docs.labels) AND EXISTS (SELECT 1 FROM json_each(docs.labels)
               WHERE type = 'text' AND lower(value) = lower(?))",
        );
        args.push(SqlValue::Text(label.clone()));
    }
    let mut stmt = conn
        .prepare_cached(&sql)
        .map_err(db_err("reading units found by meaning"))?;
    let rows = stmt
        .query_map(rusqlite::params_from_iter(args.iter()), RawHit::read)
        .map_err(db_err("reading units found by meaning"))?
        .collect::<Result<Vec<RawHit>, _>>()
        .map_err(db_err("reading units found by meaning"))?;
    Ok(rows.into_iter().map(|r| (r.id, r)).collect())
}

/// The score of a match of `expr` (`burrow_rank` with the columns' weights and a `?` for
/// each phrase's row count), and the arguments of a statement ranking them: those counts,
/// then the matches' own (`PostFilter::args`).
fn score_and_args(expr: &Expr, post: &PostFilter) -> (String, Vec<SqlValue>) {
    let row_args = vec!["?"; expr.rows.len()].join(", ");
    let score = format!(
        "{}(docs_fts, 8.0, 1.0, 2.0, 0.0, {row_args})",
        rank::RANK_FUNCTION
    );
    let mut args: Vec<SqlValue> = expr.rows.iter().map(|&r| SqlValue::Real(r)).collect();
    args.extend(post.args(&expr.text));
    (score, args)
}

/// The matches of `expr` with their BM25, in no order, no more than `upto`: counted and
/// scored in one walk of the index.
pub(super) fn score_upto(
    conn: &Connection,
    expr: &Expr,
    post: &PostFilter,
    upto: usize,
) -> Result<Vec<(i64, f64)>, WorkspaceError> {
    let (score, mut args) = score_and_args(expr, post);
    let sql = format!(
        "SELECT docs_fts.rowid, {score} {} LIMIT ?",
        post.tables_and_conditions()
    );
    args.push(SqlValue::Integer(upto as i64));
    scored_rows(conn, &sql, &args)
}

/// The (rowid, BM25) rows of a ranking statement.
fn scored_rows(
    conn: &Connection,
    sql: &str,
    args: &[SqlValue],
) -> Result<Vec<(i64, f64)>, WorkspaceError> {
    let mut stmt = conn
        .prepare_cached(sql)
        .map_err(db_err("preparing a search"))?;
    let rows = stmt
        .query_map(rusqlite::params_from_iter(args.iter()), |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .map_err(db_err("searching"))?
        .collect::<Result<Vec<(i64, f64)>, _>>()
        .map_err(db_err("searching"))?;
    Ok(rows)
}

/// Scored matches best first, as `rank_all` and `rank_page` order them: BM25 (lower is
/// better), then the newest row.
pub(super) fn sort_ranked(rows: &mut [(i64, f64)]) {
    // SQLite orders -0.0 and 0.0 as equal; `total_cmp` would not.
    let key = |x: f64| if x == 0.0 { 0.0 } else { x };
    rows.sort_unstable_by(|a, b| key(a.1).total_cmp(&key(b.1)).then(b.0.cmp(&a.0)));
}

/// The rows of `ranked` (best first, with BM25) from the `offset`th, `limit` of them, in
/// that order: a page of `rank_page`'s from matches already scored.
pub(super) fn page_of_ranked(
    conn: &Connection,
    ranked: &[(i64, f64)],
    q: &SearchQuery,
    limit: usize,
    offset: usize,
) -> Result<Vec<RawHit>, WorkspaceError> {
    let part: Vec<(i64, f64)> = ranked.iter().skip(offset).take(limit).copied().collect();
    let ids: Vec<i64> = part.iter().map(|(id, _)| *id).collect();
    let mut rows = rows_by_ids(conn, &ids, q)?;
    Ok(part
        .into_iter()
        .filter_map(|(id, bm25)| {
            rows.remove(&id).map(|mut r| {
                r.score = bm25;
                r
            })
        })
        .collect())
}

/// Every match of `expr`, best first, with its BM25 (lower is better): rowids and scores only.
/// Equal scores go newest row first, here and in `rank_page`: the two must list ties alike.
pub(super) fn rank_all(
    conn: &Connection,
    expr: &Expr,
    post: &PostFilter,
) -> Result<Vec<(i64, f64)>, WorkspaceError> {
    let (score, args) = score_and_args(expr, post);
    let sql = format!(
        "SELECT docs_fts.rowid, {score} AS score {} ORDER BY score, docs_fts.rowid DESC",
        post.tables_and_conditions()
    );
    scored_rows(conn, &sql, &args)
}

/// The rows that hold the facet `token` (a kind, a repository): FTS5's list of them, read
/// without ranking.
pub(super) fn facet_rows(
    conn: &Connection,
    token: &str,
) -> Result<std::collections::HashSet<i64>, WorkspaceError> {
    let mut stmt = conn
        .prepare_cached("SELECT rowid FROM docs_fts WHERE docs_fts MATCH ?1")
        .map_err(db_err("reading a facet"))?;
    let rows = stmt
        .query_map([format!("facets : \"{token}\"")], |r| r.get(0))
        .map_err(db_err("reading a facet"))?
        .collect::<Result<_, _>>()
        .map_err(db_err("reading a facet"))?;
    Ok(rows)
}

/// Ranks the matches of `expr` and reads the page's rows. With a window: only the newest
/// that many matches, in one pass (FTS5 walks them newest first and stops there), and says how
/// many were ranked (when the page is not empty). Ranking happens on rowids alone: SQLite's
/// sorter would otherwise carry every match's text.
pub(super) fn rank_page(
    conn: &Connection,
    expr: &Expr,
    post: &PostFilter,
    window: Option<usize>,
    limit: usize,
    offset: usize,
) -> Result<(Vec<RawHit>, Option<usize>), WorkspaceError> {
    let (score, mut args) = score_and_args(expr, post);
    let matches = post.tables_and_conditions();
    // Unwindowed, SQLite keeps only the best `limit` while scanning; windowed, the window is
    // kept to be counted as well.
    let top = if window.is_some() {
        format!(
            "m AS MATERIALIZED (SELECT docs_fts.rowid AS id, {score} AS score {matches}
                                ORDER BY docs_fts.rowid DESC LIMIT ?),
             top AS (SELECT id, score FROM m ORDER BY score, id DESC LIMIT ? OFFSET ?)"
        )
    } else {
        format!(
            "top AS (SELECT docs_fts.rowid AS id, {score} AS score {matches}
                     ORDER BY score, docs_fts.rowid DESC LIMIT ? OFFSET ?)"
        )
    };
    let ranked_sql = if window.is_some() {
        "(SELECT count(*) FROM m)"
    } else {
        "-1"
    };
    let sql = format!(
        "WITH {top}
         SELECT {HIT_COLUMNS}, top.score, docs.body, {ranked_sql}
         FROM top JOIN docs ON docs.id = top.id JOIN repos ON repos.id = docs.repo_id
         ORDER BY top.score, top.id DESC"
    );
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
            // After the hit's columns, its score and its body.
            ranked = usize::try_from(r.get::<_, i64>(16)?).ok();
            RawHit::read(r)
        })
        .map_err(db_err("searching"))?
        .collect::<Result<Vec<RawHit>, _>>()
        .map_err(db_err("searching"))?;
    Ok((rows, ranked))
}
