//! The history: commits not yet indexed, with their changed files, and their search entries.

use std::collections::{HashMap, HashSet};

use rusqlite::types::FromSql;
use rusqlite::{params, Connection, Transaction};

use super::{begin_write, delete_docs, exec, IndexEvent, IndexPhase, IndexReport};
use crate::workspace::git::{CommitRecord, GitRepo};
use crate::workspace::text::{identifier_parts, identifier_terms, Role};
use crate::workspace::{db_err, Repo, WorkspaceError};

const COMMITS_PER_TRANSACTION: usize = 500;

pub(super) fn index_commits(
    conn: &mut Connection,
    repo: &Repo,
    git: &GitRepo,
    report: &mut IndexReport,
    on_event: &mut dyn FnMut(IndexEvent),
) -> Result<(), WorkspaceError> {
    // What a killed run left is trusted only as far as it is whole: a commit counts as indexed
    // with its history when its parents do too (databases written before parents came first
    // can hold newer commits without their history: issue 17).
    let known: HashMap<String, String> = commit_pairs(
        conn,
        "SELECT hash, parents FROM commits WHERE repo_id = ?1",
        repo.id,
    )?
    .into_iter()
    .collect();
    let complete = with_whole_history(&known);
    // One reading of the branches for the pass: read again for the cleanup, a commit made
    // meanwhile was a tip that reached nothing stored, and the branch's whole history was
    // removed as unreachable.
    let tips = git.tips()?;
    let ids: Vec<gix::ObjectId> = git
        .new_commit_ids(&tips, &complete)?
        .into_iter()
        .filter(|id| !known.contains_key(&id.to_string()))
        .collect();
    in_batches(conn, repo, on_event, &ids, |tx, id| {
        let record = git.commit_record(*id)?;
        insert_commit(tx, repo.id, &record)?;
        report.commits_added += 1;
        Ok(())
    })?;
    report.commits_removed += remove_unreachable(conn, repo, &tips, on_event)?;
    read_missing_changes(conn, repo, git, on_event)
}

/// Removes the commits no branch, tag or HEAD reaches any more (amended, rebased, dropped by
/// a force-push, on a deleted branch), with their files and search entries: kept, an amended
/// commit was listed and found beside its new version, and opening it failed once git had
/// pruned it. How many.
fn remove_unreachable(
    conn: &mut Connection,
    repo: &Repo,
    tips: &[gix::ObjectId],
    on_event: &mut dyn FnMut(IndexEvent),
) -> Result<u64, WorkspaceError> {
    let stored: Vec<(i64, String, String)> = {
        let mut stmt = conn
            .prepare("SELECT id, hash, parents FROM commits WHERE repo_id = ?1")
            .map_err(db_err("reading indexed commits"))?;
        let rows = stmt
            .query_map([repo.id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(db_err("reading indexed commits"))?;
        rows.collect::<Result<_, _>>()
            .map_err(db_err("reading indexed commits"))?
    };
    let parents: HashMap<&str, &str> = stored
        .iter()
        .map(|(_, h, p)| (h.as_str(), p.as_str()))
        .collect();
    let tips: Vec<String> = tips.iter().map(|t| t.to_string()).collect();
    let mut reached: HashSet<&str> = HashSet::new();
    let mut todo: Vec<&str> = tips.iter().map(String::as_str).collect();
    while let Some(h) = todo.pop() {
        if let Some((hash, ps)) = parents.get_key_value(h) {
            if reached.insert(hash) {
                todo.extend(ps.split_whitespace());
            }
        }
    }
    let gone: Vec<i64> = stored
        .iter()
        .filter(|(_, h, _)| !reached.contains(h.as_str()))
        .map(|(id, _, _)| *id)
        .collect();
    if gone.is_empty() {
        return Ok(0);
    }
    in_batches(conn, repo, on_event, &gone, |tx, id| {
        delete_docs(tx, "commit", *id)?;
        exec(tx, "DELETE FROM commit_files WHERE commit_id = ?1", [id])
            .map_err(db_err("removing a commit no branch reaches"))?;
        exec(tx, "DELETE FROM commits WHERE id = ?1", [id])
            .map_err(db_err("removing a commit no branch reaches"))?;
        Ok(())
    })?;
    Ok(gone.len() as u64)
}

/// Gives the commits indexed before their changed lines were (migration 13) those lines, so a
/// workspace gains them at its next index without losing its commits meanwhile; a commit the
/// repository does not hold keeps its message's entry alone.
fn read_missing_changes(
    conn: &mut Connection,
    repo: &Repo,
    git: &GitRepo,
    on_event: &mut dyn FnMut(IndexEvent),
) -> Result<(), WorkspaceError> {
    let pending: Vec<(i64, String)> = commit_pairs(
        conn,
        "SELECT id, hash FROM commits WHERE repo_id = ?1 AND changes_read = 0",
        repo.id,
    )?;
    if pending.is_empty() {
        return Ok(());
    }
    in_batches(conn, repo, on_event, &pending, |tx, (id, hash)| {
        match gix::ObjectId::from_hex(hash.as_bytes())
            .ok()
            .filter(|oid| git.has_commit(*oid))
        {
            Some(oid) => {
                let record = git.commit_record(oid)?;
                delete_changes(tx, *id)?;
                insert_changes(tx, repo.id, *id, &record)
            }
            // Gone from the repository (its history rewritten): nothing to read, and not
            // asked for again.
            None => mark_changes_read(tx, *id),
        }
    })
}

/// Runs `each` over `items` in transactions of `COMMITS_PER_TRANSACTION`, saying how far it
/// is after each.
fn in_batches<T>(
    conn: &mut Connection,
    repo: &Repo,
    on_event: &mut dyn FnMut(IndexEvent),
    items: &[T],
    mut each: impl FnMut(&Transaction<'_>, &T) -> Result<(), WorkspaceError>,
) -> Result<(), WorkspaceError> {
    let total = items.len() as u64;
    let mut tx = begin_write(conn, &repo.name, on_event)?;
    for (i, item) in items.iter().enumerate() {
        each(&tx, item)?;
        if (i + 1) % COMMITS_PER_TRANSACTION == 0 {
            tx.commit().map_err(db_err("saving commits"))?;
            tx = begin_write(conn, &repo.name, on_event)?;
            on_event(IndexEvent::Progress {
                repo: repo.name.clone(),
                phase: IndexPhase::Commits,
                done: i as u64 + 1,
                total,
            });
        }
    }
    tx.commit().map_err(db_err("saving commits"))?;
    on_event(IndexEvent::Progress {
        repo: repo.name.clone(),
        phase: IndexPhase::Commits,
        done: total,
        total,
    });
    Ok(())
}

/// The two columns `sql` selects of repository `repo_id`'s commits (its `?1`).
fn commit_pairs<A: FromSql, B: FromSql>(
    conn: &Connection,
    sql: &str,
    repo_id: i64,
) -> Result<Vec<(A, B)>, WorkspaceError> {
    let mut stmt = conn
        .prepare(sql)
        .map_err(db_err("reading indexed commits"))?;
    let rows = stmt
        .query_map([repo_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(db_err("reading indexed commits"))?;
    rows.collect::<Result<_, _>>()
        .map_err(db_err("reading indexed commits"))
}

/// Removes the entry of commit `id`'s changed lines, if it has one.
fn delete_changes(tx: &Transaction<'_>, id: i64) -> Result<(), WorkspaceError> {
    exec(
        tx,
        "DELETE FROM docs WHERE source = 'commit' AND source_id = ?1 AND role = ?2",
        params![id, Role::Changes.to_db()],
    )
    .map_err(db_err("indexing a commit's changes"))
    .map(|_| ())
}

/// The commits of `known` (hash to space-separated parents) whose every ancestor is in it.
fn with_whole_history(known: &HashMap<String, String>) -> HashSet<String> {
    // 0: not looked at, 1: being looked at, 2: whole, 3: missing some history.
    let mut state: HashMap<&str, u8> = HashMap::with_capacity(known.len());
    for (start, parents) in known {
        if state.contains_key(start.as_str()) {
            continue;
        }
        state.insert(start, 1);
        let mut stack: Vec<(&str, std::str::SplitWhitespace<'_>)> =
            vec![(start, parents.split_whitespace())];
        while let Some((node, parents)) = stack.last_mut() {
            let node = *node;
            match parents.next() {
                Some(parent) => match (state.get(parent), known.get_key_value(parent)) {
                    (Some(3), _) | (None, None) => {
                        state.insert(node, 3);
                    }
                    (Some(_), _) => {}
                    (None, Some((key, theirs))) => {
                        state.insert(key, 1);
                        stack.push((key, theirs.split_whitespace()));
                    }
                },
                None => {
                    stack.pop();
                    let whole = state.get(node) != Some(&3);
                    if whole {
                        state.insert(node, 2);
                    } else if let Some((child, _)) = stack.last() {
                        state.insert(child, 3);
                    }
                }
            }
        }
    }
    state
        .into_iter()
        .filter(|(_, s)| *s == 2)
        .map(|(h, _)| h.to_string())
        .collect()
}

fn insert_commit(
    tx: &Transaction<'_>,
    repo_id: i64,
    c: &CommitRecord,
) -> Result<(), WorkspaceError> {
    let id: i64 = tx
        .query_row(
            "INSERT INTO commits (repo_id, hash, author_name, author_email, time, summary, message, parents, changes_read)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1)
             ON CONFLICT (repo_id, hash) DO UPDATE SET summary = excluded.summary
             RETURNING id",
            params![
                repo_id,
                c.hash,
                c.author_name,
                c.author_email,
                c.time,
                c.summary,
                c.message,
                c.parents.join(" ")
            ],
            |r| r.get(0),
        )
        .map_err(db_err("saving a commit"))?;
    exec(tx, "DELETE FROM commit_files WHERE commit_id = ?1", [id])
        .map_err(db_err("saving a commit"))?;
    for f in &c.files {
        exec(tx,
            "INSERT INTO commit_files (commit_id, path, change, additions, deletions) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![id, f.path, f.change, f.additions, f.deletions],
        )
        .map_err(db_err("saving a commit's files"))?;
    }
    delete_docs(tx, "commit", id)?;
    let paths: Vec<&str> = c.files.iter().map(|f| f.path.as_str()).collect();
    let body = format!("{}\n\n{}", c.message.trim(), paths.join("\n"));
    let terms = format!(
        "{}\n{}",
        identifier_terms(&c.message),
        paths
            .iter()
            .map(|p| identifier_parts(p).join(" "))
            .collect::<Vec<_>>()
            .join("\n")
    );
    exec(tx,
        "INSERT INTO docs (repo_id, kind, source, source_id, hash, author, time, title, body, terms)
         VALUES (?1, 'commit', 'commit', ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![repo_id, id, c.hash, c.author_name, c.time, c.summary, body, terms],
    )
    .map_err(db_err("indexing a commit"))?;
    insert_changes(tx, repo_id, id, c)
}

/// The search entry of the lines commit `id` changed (`Role::Changes`), beside its message's,
/// and the mark that they were read.
fn insert_changes(
    tx: &Transaction<'_>,
    repo_id: i64,
    id: i64,
    c: &CommitRecord,
) -> Result<(), WorkspaceError> {
    if !c.changes.is_empty() {
        exec(tx,
            "INSERT INTO docs (repo_id, kind, source, source_id, hash, author, time, title, body, terms, role)
             VALUES (?1, 'commit', 'commit', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                repo_id,
                id,
                c.hash,
                c.author_name,
                c.time,
                c.summary,
                c.changes,
                identifier_terms(&c.changes),
                Role::Changes.to_db()
            ],
        )
        .map_err(db_err("indexing a commit's changes"))?;
    }
    mark_changes_read(tx, id)
}

fn mark_changes_read(tx: &Transaction<'_>, id: i64) -> Result<(), WorkspaceError> {
    exec(
        tx,
        "UPDATE commits SET changes_read = 1 WHERE id = ?1",
        [id],
    )
    .map_err(db_err("indexing a commit's changes"))
    .map(|_| ())
}
