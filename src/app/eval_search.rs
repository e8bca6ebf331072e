//! `burrow eval --search`: search alone measured on the question set, in each mode (words,
//! meaning, hybrid) beside a naive floor (SQLite FTS5 with its default tokenizer and BM25 over
//! one row per item, the question's words joined by OR): recall@1, recall@5 and MRR@10 over
//! distinct items, per kind, and the latency of each search.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use rusqlite::Connection;
use serde::Serialize;

use super::eval::{without_line, Accepted, Question};
use super::AppError;
use crate::tools::Locator;
use crate::workspace::{db_err, Kind, SearchMode, SearchQuery, Workspace, WorkspaceError};

/// How deep a ranking is read: MRR@10 needs ten distinct items, and a page lists each item
/// once (a file's other chunks, an issue's other comments folded into its best).
const HITS_READ: usize = 10;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Scores {
    pub questions: usize,
    pub recall_at_1: f64,
    pub recall_at_5: f64,
    pub mrr_at_10: f64,
}

impl Scores {
    fn add(&mut self, rank: Option<usize>) {
        self.questions += 1;
        if let Some(r) = rank {
            self.recall_at_1 += f64::from(u8::from(r == 1));
            self.recall_at_5 += f64::from(u8::from(r <= 5));
            if r <= 10 {
                self.mrr_at_10 += 1.0 / r as f64;
            }
        }
    }

    fn mean(mut self) -> Self {
        let n = self.questions.max(1) as f64;
        self.recall_at_1 /= n;
        self.recall_at_5 /= n;
        self.mrr_at_10 /= n;
        self
    }
}

/// One way of searching, measured.
#[derive(Debug, Clone, Serialize)]
pub struct ModeScores {
    pub mode: String,
    pub all: Scores,
    pub by_kind: BTreeMap<String, Scores>,
    /// Per search, query embedding included (milliseconds).
    pub latency_p50_ms: f64,
    pub latency_p95_ms: f64,
    /// Per question: the rank of the first accepted item (None: not in the first ten).
    pub ranks: Vec<(String, Option<usize>)>,
    /// Per question: the first ten items, in order (the trace of a poor rank; `--out`).
    #[serde(skip)]
    pub firsts: Vec<(String, Vec<Locator>)>,
}

/// Measures each of `modes` ("words", "meaning", "hybrid", "naive") on `questions`. Meaning
/// and hybrid use the query embedder `ws` has (`Workspace::set_query_embedder`).
pub fn search_eval(
    ws: &Workspace,
    questions: &[Question],
    modes: &[&str],
    fusion_k: Option<f64>,
) -> Result<Vec<ModeScores>, AppError> {
    let mut out = Vec::new();
    let naive = if modes.contains(&"naive") {
        Some(NaiveIndex::build(ws)?)
    } else {
        None
    };
    for &mode in modes {
        let mut ranks = Vec::new();
        let mut firsts = Vec::new();
        let mut times = Vec::new();
        for q in questions {
            let started = Instant::now();
            let items = match (mode, &naive) {
                ("naive", Some(n)) => n.search(&q.question)?,
                _ => {
                    let query = SearchQuery {
                        text: q.question.clone(),
                        limit: HITS_READ,
                        mode: SearchMode::parse(mode)?,
                        fusion_k,
                        ..Default::default()
                    };
                    let page = ws.search(&query)?;
                    let mut items: Vec<Locator> = Vec::new();
                    for l in page.hits.iter().filter_map(Locator::of_hit) {
                        let l = without_line(l);
                        if !items.contains(&l) {
                            items.push(l);
                        }
                    }
                    items
                }
            };
            times.push(started.elapsed().as_secs_f64() * 1000.0);
            let accepted: Vec<Accepted> =
                q.accept.iter().filter_map(|a| Accepted::parse(a)).collect();
            let rank = items
                .iter()
                .take(10)
                .position(|l| accepted.iter().any(|a| a.is(l)))
                .map(|i| i + 1);
            ranks.push((q.id.clone(), rank));
            firsts.push((q.id.clone(), items.into_iter().take(HITS_READ).collect()));
        }
        let mut all = Scores::default();
        let mut by_kind: BTreeMap<String, Scores> = BTreeMap::new();
        for (q, (_, rank)) in questions.iter().zip(&ranks) {
            all.add(*rank);
            by_kind.entry(q.kind.clone()).or_default().add(*rank);
        }
        times.sort_by(|a, b| a.total_cmp(b));
        let at = |p: f64| times[((times.len() as f64 - 1.0) * p).round() as usize];
        out.push(ModeScores {
            mode: mode.to_string(),
            all: all.mean(),
            by_kind: by_kind.into_iter().map(|(k, s)| (k, s.mean())).collect(),
            latency_p50_ms: at(0.5),
            latency_p95_ms: at(0.95),
            ranks,
            firsts,
        });
    }
    Ok(out)
}

/// The floor: one FTS5 row per item (an issue or pull request with its comments, a file with
/// all its chunks, a commit), SQLite's default tokenizer, BM25, the question's words ORed.
struct NaiveIndex {
    conn: Connection,
    items: Vec<Locator>,
}

impl NaiveIndex {
    fn build(ws: &Workspace) -> Result<Self, AppError> {
        let src = crate::workspace::db::open(ws.db_path())?;
        let mut by_item: HashMap<Locator, (String, String)> = HashMap::new();
        let mut order: Vec<Locator> = Vec::new();
        {
            let mut st = src
                .prepare(
                    "SELECT docs.kind, repos.name, docs.path, docs.number, docs.hash,
                            docs.title, docs.body
                     FROM docs JOIN repos ON repos.id = docs.repo_id
                     -- A file's outline (`text::Role`: 1) repeats the file's own words: the
                     -- floor is the file as written; and a commit as `git log --stat` shows
                     -- it, without the lines it changed (3), which Burrow adds.
                     WHERE docs.role NOT IN (1, 3)
                     ORDER BY docs.id",
                )
                .map_err(db_err("reading units"))?;
            let mut rows = st.query([]).map_err(db_err("reading units"))?;
            while let Some(r) = rows.next().map_err(db_err("reading units"))? {
                let get = |i| -> Result<Option<String>, WorkspaceError> {
                    r.get(i).map_err(db_err("reading units"))
                };
                let kind = Kind::parse(&get(0)?.unwrap_or_default())?;
                let repo = get(1)?.unwrap_or_default();
                let number: Option<i64> = r.get(3).map_err(db_err("reading units"))?;
                let loc = match kind {
                    Kind::Code | Kind::Doc => get(2)?.map(|p| Locator::file(&repo, &p, None)),
                    Kind::Commit => get(4)?.map(|h| Locator::commit(&repo, &h)),
                    Kind::Issue | Kind::Pr => {
                        number.map(|n| Locator::issue_or_pr(&repo, n, kind == Kind::Pr))
                    }
                };
                let Some(loc) = loc else { continue };
                let (title, body) = (get(5)?.unwrap_or_default(), get(6)?.unwrap_or_default());
                let entry = by_item.entry(loc.clone()).or_insert_with(|| {
                    order.push(loc);
                    (title, String::new())
                });
                entry.1.push_str(&body);
                entry.1.push('\n');
            }
        }
        let conn = Connection::open_in_memory().map_err(db_err("opening the naive index"))?;
        conn.execute_batch("CREATE VIRTUAL TABLE items USING fts5(title, body);")
            .map_err(db_err("creating the naive index"))?;
        {
            let mut st = conn
                .prepare("INSERT INTO items (rowid, title, body) VALUES (?1, ?2, ?3)")
                .map_err(db_err("filling the naive index"))?;
            for (i, loc) in order.iter().enumerate() {
                let (title, body) = &by_item[loc];
                st.execute(rusqlite::params![i as i64, title, body])
                    .map_err(db_err("filling the naive index"))?;
            }
        }
        Ok(NaiveIndex { conn, items: order })
    }

    fn search(&self, question: &str) -> Result<Vec<Locator>, AppError> {
        let words: Vec<String> = question
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(|w| format!("\"{w}\""))
            .collect();
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT rowid FROM items WHERE items MATCH ?1 ORDER BY bm25(items) LIMIT 10",
            )
            .map_err(db_err("naive search"))?;
        let ids = st
            .query_map([words.join(" OR ")], |r| r.get::<_, i64>(0))
            .map_err(db_err("naive search"))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err("naive search"))?;
        Ok(ids
            .into_iter()
            .filter_map(|i| self.items.get(i as usize).cloned())
            .collect())
    }
}
