//! BM25 for FTS5 with the document frequencies supplied by the caller.
//!
//! FTS5's own `bm25()` finds each phrase's document frequency by visiting every row that holds
//! the phrase, once per query: for a word in 90% of 100,000 issues that alone took about 8 ms,
//! more than ranking the rows did. `burrow_rank()` computes the same score (the formula and
//! constants of `fts5_aux.c`, so the two agree to rounding) from frequencies that search reads
//! from the index's vocabulary, where they cost a fraction of that; and it lets a phrase that
//! only narrows the matches (present twice in the expression) be weighed once.
//!
//! This module also runs the index's own tokenizer over query text, so that words can be looked
//! up in the vocabulary as the index spells them (porter stems).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr;

use rusqlite::ffi;
use rusqlite::Connection;

use super::WorkspaceError;

/// The SQL name of the ranking function.
pub const RANK_FUNCTION: &str = "burrow_rank";

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// The FTS5 API of a connection, from `SELECT fts5(?1)` as the FTS5 documentation prescribes.
///
/// # Safety
/// `db` must be an open connection; the pointer is valid while it stays open.
unsafe fn fts5_api(db: *mut ffi::sqlite3) -> Option<*mut ffi::fts5_api> {
    let mut api: *mut ffi::fts5_api = ptr::null_mut();
    let mut stmt: *mut ffi::sqlite3_stmt = ptr::null_mut();
    let sql = c"SELECT fts5(?1)";
    if ffi::sqlite3_prepare_v2(db, sql.as_ptr(), -1, &mut stmt, ptr::null_mut()) != ffi::SQLITE_OK {
        return None;
    }
    ffi::sqlite3_bind_pointer(
        stmt,
        1,
        (&mut api as *mut *mut ffi::fts5_api).cast::<c_void>(),
        c"fts5_api_ptr".as_ptr(),
        None,
    );
    ffi::sqlite3_step(stmt);
    ffi::sqlite3_finalize(stmt);
    // Version 2 has xCreateFunction and xFindTokenizer as used here.
    (!api.is_null() && (*api).iVersion >= 2).then_some(api)
}

fn no_fts5() -> WorkspaceError {
    WorkspaceError::Fts("this SQLite has no FTS5 API".into())
}

/// Makes `burrow_rank()` available on `conn`.
pub fn register(conn: &Connection) -> Result<(), WorkspaceError> {
    // SAFETY: the handle belongs to `conn`, open for the duration of this call; FTS5 keeps the
    // function (a plain fn with no user data) for the connection's life.
    unsafe {
        let api = fts5_api(conn.handle()).ok_or_else(no_fts5)?;
        let create = (*api).xCreateFunction.ok_or_else(no_fts5)?;
        let rc = create(
            api,
            c"burrow_rank".as_ptr(),
            ptr::null_mut(),
            Some(burrow_rank),
            None,
        );
        if rc != ffi::SQLITE_OK {
            return Err(WorkspaceError::Fts(format!(
                "registering {RANK_FUNCTION}: SQLite error {rc}"
            )));
        }
    }
    Ok(())
}

/// What one query computes once: the average row length and each phrase's IDF.
struct QueryStats {
    avgdl: f64,
    idf: Vec<f64>,
}

unsafe extern "C" fn drop_stats(p: *mut c_void) {
    if !p.is_null() {
        drop(Box::from_raw(p.cast::<QueryStats>()));
    }
}

/// `burrow_rank(fts, weight for each column..., document frequency for each phrase...)`:
/// BM25, negated like `bm25()` so that better matches sort first.
unsafe extern "C" fn burrow_rank(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    n: c_int,
    args: *mut *mut ffi::sqlite3_value,
) {
    match rank_row(api, fts, n, args) {
        Ok(score) => ffi::sqlite3_result_double(ctx, score),
        Err(message) => {
            ffi::sqlite3_result_error(ctx, message.as_ptr(), -1);
        }
    }
}

/// # Safety
/// Called by FTS5 with valid pointers for the row being ranked.
unsafe fn rank_row(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    n: c_int,
    args: *mut *mut ffi::sqlite3_value,
) -> Result<f64, &'static CStr> {
    let api = api.as_ref().ok_or(c"burrow_rank: no FTS5 context")?;
    let (Some(column_count), Some(phrase_count), Some(first), Some(next), Some(column_size)) = (
        api.xColumnCount,
        api.xPhraseCount,
        api.xPhraseFirst,
        api.xPhraseNext,
        api.xColumnSize,
    ) else {
        return Err(c"burrow_rank: FTS5 API too old");
    };
    let columns = column_count(fts).max(0) as usize;
    let phrases = phrase_count(fts).max(0) as usize;
    if n < 0 || (n as usize) != columns + phrases || args.is_null() {
        return Err(
            c"burrow_rank: needs a weight for each column and a document frequency for each phrase",
        );
    }
    let arg = |i: usize| ffi::sqlite3_value_double(*args.add(i));

    let stats = match query_stats(api, fts, phrases, |i| arg(columns + i)) {
        Some(s) => s,
        None => return Err(c"burrow_rank: could not read the index totals"),
    };

    // Term frequency of each phrase in this row, each occurrence weighted by its column. Each
    // phrase's own matches are walked: `xInst` first merges every phrase's matches into one
    // list in position order, a scan of all the phrases for each match (a 50-word question:
    // a tenth of the words' ranking time).
    let mut freq = vec![0.0f64; phrases];
    for (phrase, f) in freq.iter_mut().enumerate() {
        let mut iter = ffi::Fts5PhraseIter {
            a: ptr::null(),
            b: ptr::null(),
        };
        let (mut column, mut offset) = (0, 0);
        if first(fts, phrase as c_int, &mut iter, &mut column, &mut offset) != ffi::SQLITE_OK {
            return Err(c"burrow_rank: could not read the matches");
        }
        // A negative column ends the phrase's matches.
        while column >= 0 {
            if (column as usize) < columns {
                *f += arg(column as usize);
            }
            next(fts, &mut iter, &mut column, &mut offset);
        }
    }
    let mut tokens: c_int = 0;
    if column_size(fts, -1, &mut tokens) != ffi::SQLITE_OK {
        return Err(c"burrow_rank: could not read the row's length");
    }
    let d = f64::from(tokens);
    let mut score = 0.0;
    for (f, idf) in freq.iter().zip(&stats.idf) {
        score += idf * (f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * d / stats.avgdl));
    }
    Ok(-score)
}

/// The query's totals, computed on its first row and kept as FTS5 auxiliary data.
///
/// # Safety
/// As for `rank_row`.
unsafe fn query_stats<'a>(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    phrases: usize,
    df: impl Fn(usize) -> f64,
) -> Option<&'a QueryStats> {
    let (get, set, row_count, total_size) = (
        api.xGetAuxdata?,
        api.xSetAuxdata?,
        api.xRowCount?,
        api.xColumnTotalSize?,
    );
    let existing = get(fts, 0).cast::<QueryStats>();
    if !existing.is_null() {
        return existing.as_ref();
    }
    let (mut rows, mut tokens) = (0i64, 0i64);
    if row_count(fts, &mut rows) != ffi::SQLITE_OK
        || total_size(fts, -1, &mut tokens) != ffi::SQLITE_OK
    {
        return None;
    }
    let n = rows.max(1) as f64;
    let idf = (0..phrases)
        .map(|i| {
            let hits = df(i).clamp(0.0, n);
            let idf = ((0.5 + n - hits) / (0.5 + hits)).ln();
            // As fts5_aux.c: a phrase in more than half the rows still counts, a little.
            if idf <= 0.0 {
                1e-6
            } else {
                idf
            }
        })
        .collect();
    let stats = Box::into_raw(Box::new(QueryStats {
        avgdl: (tokens as f64 / n).max(1.0),
        idf,
    }));
    if set(fts, stats.cast::<c_void>(), Some(drop_stats)) != ffi::SQLITE_OK {
        // FTS5 has already called drop_stats on failure.
        return None;
    }
    stats.as_ref()
}

struct Tokens(Vec<String>);

unsafe extern "C" fn push_token(
    ctx: *mut c_void,
    _flags: c_int,
    token: *const c_char,
    len: c_int,
    _start: c_int,
    _end: c_int,
) -> c_int {
    let Some(out) = ctx.cast::<Tokens>().as_mut() else {
        return ffi::SQLITE_ERROR;
    };
    if !token.is_null() && len > 0 {
        let bytes = std::slice::from_raw_parts(token.cast::<u8>(), len as usize);
        out.0.push(String::from_utf8_lossy(bytes).into_owned());
    }
    ffi::SQLITE_OK
}

/// The tokens the index's tokenizer (`porter unicode61 remove_diacritics 2`, as migration 1
/// declares it) makes of query text: what the vocabulary holds for those words.
pub fn query_tokens(conn: &Connection, text: &str) -> Result<Vec<String>, WorkspaceError> {
    let failed = |what: &str| WorkspaceError::Fts(format!("tokenizing a query: {what}"));
    let len = c_int::try_from(text.len()).map_err(|_| failed("text too long"))?;
    // SAFETY: the handle belongs to `conn`, open for this call; the tokenizer instance is created
    // and deleted here; `push_token` only writes to `out`, which outlives the call.
    unsafe {
        let api = fts5_api(conn.handle()).ok_or_else(no_fts5)?;
        let find = (*api).xFindTokenizer.ok_or_else(no_fts5)?;
        let mut user: *mut c_void = ptr::null_mut();
        let mut porter = ffi::fts5_tokenizer {
            xCreate: None,
            xDelete: None,
            xTokenize: None,
        };
        if find(api, c"porter".as_ptr(), &mut user, &mut porter) != ffi::SQLITE_OK {
            return Err(failed("no porter tokenizer"));
        }
        let (Some(create), Some(delete), Some(tokenize)) =
            (porter.xCreate, porter.xDelete, porter.xTokenize)
        else {
            return Err(failed("incomplete tokenizer"));
        };
        let mut argv = [
            c"unicode61".as_ptr(),
            c"remove_diacritics".as_ptr(),
            c"2".as_ptr(),
        ];
        let mut tokenizer: *mut ffi::Fts5Tokenizer = ptr::null_mut();
        if create(user, argv.as_mut_ptr(), argv.len() as c_int, &mut tokenizer) != ffi::SQLITE_OK
            || tokenizer.is_null()
        {
            return Err(failed("could not create the tokenizer"));
        }
        let mut out = Tokens(Vec::new());
        let rc = tokenize(
            tokenizer,
            (&mut out as *mut Tokens).cast::<c_void>(),
            ffi::FTS5_TOKENIZE_QUERY,
            text.as_ptr().cast::<c_char>(),
            len,
            Some(push_token),
        );
        delete(tokenizer);
        if rc != ffi::SQLITE_OK {
            return Err(failed("the tokenizer failed"));
        }
        Ok(out.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::db;

    #[test]
    fn query_text_is_tokenized_as_the_index_does() {
        let conn = db::open_in_memory().unwrap();
        assert_eq!(
            query_tokens(&conn, "Crashes in Wallets, connected; naïve").unwrap(),
            ["crash", "in", "wallet", "connect", "naiv"]
        );
        assert!(query_tokens(&conn, "").unwrap().is_empty());
    }

    #[test]
    fn burrow_rank_equals_bm25_given_the_true_frequencies() {
        let conn = db::open_in_memory().unwrap();
        conn.execute("INSERT INTO repos (name, added_at) VALUES ('r', 0)", [])
            .unwrap();
        let texts = [
            (
                "Wallet crash",
                "the wallet crashes on startup when the disk is full",
            ),
            ("Startup slow", "startup takes minutes; the wallet rescans"),
            ("Dark theme", "icons are unreadable with a dark theme"),
            ("Crash on exit", "crash crash crash, every time on exit"),
            ("Fee dialog", "the fee dialog has no wallet selector"),
        ];
        for (i, (title, body)) in texts.iter().enumerate() {
            conn.execute(
                "INSERT INTO docs (repo_id, kind, source, source_id, title, body, terms, state)
                 VALUES (1, 'issue', 'issue', ?1, ?2, ?3, '', 'open')",
                rusqlite::params![i as i64, title, body],
            )
            .unwrap();
        }
        let df = |phrase: &str| -> f64 {
            conn.query_row(
                "SELECT count(*) FROM docs_fts WHERE docs_fts MATCH ?1",
                [phrase],
                |r| r.get::<_, i64>(0),
            )
            .unwrap() as f64
        };
        let expr = r#""wallet" OR "crash" OR "startup""#;
        let (w, c, s) = (df("\"wallet\""), df("\"crash\""), df("\"startup\""));
        let rows: Vec<(i64, f64, f64)> = conn
            .prepare(
                "SELECT rowid, bm25(docs_fts, 8.0, 1.0, 2.0, 0.0),
                        burrow_rank(docs_fts, 8.0, 1.0, 2.0, 0.0, ?2, ?3, ?4)
                 FROM docs_fts WHERE docs_fts MATCH ?1",
            )
            .unwrap()
            .query_map(rusqlite::params![expr, w, c, s], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows.len(), 4);
        for (id, theirs, ours) in rows {
            assert!(
                (theirs - ours).abs() < 1e-9,
                "row {id}: bm25 {theirs} vs {ours}"
            );
            assert!(ours < 0.0);
        }
        // The score follows the frequencies given: a rare word weighs, one in every row does not.
        let n = texts.len() as f64;
        let only_crash: f64 = conn
            .query_row(
                "SELECT burrow_rank(docs_fts, 8.0, 1.0, 2.0, 0.0, ?2, ?3)
                 FROM docs_fts WHERE docs_fts MATCH ?1 AND rowid = 1",
                rusqlite::params![r#""wallet" OR "crash""#, n, c],
                |r| r.get(0),
            )
            .unwrap();
        let both: f64 = conn
            .query_row(
                "SELECT burrow_rank(docs_fts, 8.0, 1.0, 2.0, 0.0, ?2, ?3)
                 FROM docs_fts WHERE docs_fts MATCH ?1 AND rowid = 1",
                rusqlite::params![r#""wallet" OR "crash""#, 1.0, c],
                |r| r.get(0),
            )
            .unwrap();
        assert!(both < only_crash && only_crash < 0.0);
        // The wrong number of arguments is an SQL error, not a crash.
        let e = conn
            .query_row(
                "SELECT burrow_rank(docs_fts, 1.0) FROM docs_fts WHERE docs_fts MATCH 'wallet'",
                [],
                |r| r.get::<_, f64>(0),
            )
            .unwrap_err();
        assert!(e.to_string().contains("burrow_rank"), "{e}");
    }
}
