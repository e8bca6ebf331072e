//! The history: commits not yet indexed, with their changed files, and their search entries.

use std::collections::{HashMap, HashSet};

use rusqlite::{params, Connection, Transaction};

use super::{begin_write, delete_docs, exec, IndexEvent, IndexPhase, IndexReport};
use crate::workspace::git::{CommitRecord, GitRepo};
use crate::workspace::text::{identifier_parts, identifier_terms};
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
    let known: HashMap<String, String> = {
        let mut stmt = conn
            .prepare("SELECT hash, parents FROM commits WHERE repo_id = ?1")
            .map_err(db_err("reading indexed commits"))?;
        let rows = stmt
            .query_map([repo.id], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(db_err("reading indexed commits"))?;
        rows.collect::<Result<_, _>>()
            .map_err(db_err("reading indexed commits"))?
    };
    let complete = with_whole_history(&known);
    let ids: Vec<gix::ObjectId> = git
        .new_commit_ids(&complete)?
        .into_iter()
        .filter(|id| !known.contains_key(&id.to_string()))
        .collect();
    let total = ids.len() as u64;
    let mut tx = begin_write(conn, &repo.name, on_event)?;
    for (i, id) in ids.iter().enumerate() {
        let record = git.commit_record(*id)?;
        insert_commit(&tx, repo.id, &record)?;
        report.commits_added += 1;
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
            "INSERT INTO commits (repo_id, hash, author_name, author_email, time, summary, message, parents)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
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
    Ok(())
}
