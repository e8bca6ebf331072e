//! The history: commits not yet indexed, with their changed files, and their search entries.

use std::collections::HashSet;

use rusqlite::{params, Connection, Transaction};

use super::{delete_docs, exec, IndexEvent, IndexPhase, IndexReport};
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
    let known: HashSet<String> = {
        let mut stmt = conn
            .prepare("SELECT hash FROM commits WHERE repo_id = ?1")
            .map_err(db_err("reading indexed commits"))?;
        let rows = stmt
            .query_map([repo.id], |r| r.get(0))
            .map_err(db_err("reading indexed commits"))?;
        rows.collect::<Result<_, _>>()
            .map_err(db_err("reading indexed commits"))?
    };
    let ids = git.new_commit_ids(&known)?;
    let total = ids.len() as u64;
    let mut tx = conn
        .transaction()
        .map_err(db_err("starting a transaction"))?;
    for (i, id) in ids.iter().enumerate() {
        let record = git.commit_record(*id)?;
        insert_commit(&tx, repo.id, &record)?;
        report.commits_added += 1;
        if (i + 1) % COMMITS_PER_TRANSACTION == 0 {
            tx.commit().map_err(db_err("saving commits"))?;
            tx = conn
                .transaction()
                .map_err(db_err("starting a transaction"))?;
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
