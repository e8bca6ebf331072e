//! The working tree's files: the walk (what is indexed, what is skipped and why), each file's
//! search entries, and forgetting the files that are gone.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension, Transaction};

use super::{begin_write, delete_docs, exec, IndexEvent, IndexPhase, IndexReport};
use crate::workspace::text::{
    code_units, document_units, identifier_parts, identifier_terms, is_document, language_of,
    looks_binary, outline_unit, Role,
};
use crate::workspace::{db_err, Repo, WorkspaceError};

/// Files larger than this are not indexed (generated code, data, vendored bundles).
pub const MAX_FILE_BYTES: u64 = 1 << 20;
const FILES_PER_TRANSACTION: usize = 256;

struct KnownFile {
    id: i64,
    size: i64,
    mtime_ns: i64,
    hash: String,
}

enum Walked {
    File { rel: String, abs: PathBuf },
    Skip { rel: String, reason: String },
}

pub(super) fn index_files(
    conn: &mut Connection,
    repo: &Repo,
    root: &Path,
    report: &mut IndexReport,
    on_event: &mut dyn FnMut(IndexEvent),
) -> Result<(), WorkspaceError> {
    let known: HashMap<String, KnownFile> = {
        let mut stmt = conn
            .prepare("SELECT path, id, size, mtime_ns, hash FROM files WHERE repo_id = ?1")
            .map_err(db_err("reading indexed files"))?;
        let rows = stmt
            .query_map([repo.id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    KnownFile {
                        id: r.get(1)?,
                        size: r.get(2)?,
                        mtime_ns: r.get(3)?,
                        hash: r.get(4)?,
                    },
                ))
            })
            .map_err(db_err("reading indexed files"))?;
        rows.collect::<Result<_, _>>()
            .map_err(db_err("reading indexed files"))?
    };

    // The walk honours .gitignore (and .ignore) files, keeps hidden files (.github/ and the
    // like are part of a project) but not .git itself, and does not follow symbolic links: a
    // link may point anywhere on the disk. Only the ignore files within the root count: with
    // `require_git(false)` the walker no longer stops at the repository's root when it reads
    // the parents' ignore files, so a `*` in a .gitignore above it (a home folder kept under
    // git for its dotfiles) left the index empty.
    let mut walked = Vec::new();
    for entry in ignore::WalkBuilder::new(root)
        .follow_links(false)
        .hidden(false)
        .parents(false)
        .require_git(false)
        .git_global(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build()
    {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                report
                    .warnings
                    .push(format!("cannot read part of the tree: {e}"));
                continue;
            }
        };
        let Some(ft) = entry.file_type() else {
            continue;
        };
        if ft.is_dir() {
            continue;
        }
        let rel_path = entry.path().strip_prefix(root).unwrap_or(entry.path());
        let rel = match rel_path.to_str() {
            Some(s) => s.replace(std::path::MAIN_SEPARATOR, "/"),
            None => {
                walked.push(Walked::Skip {
                    rel: rel_path
                        .to_string_lossy()
                        .replace(std::path::MAIN_SEPARATOR, "/"),
                    reason: "file name is not UTF-8".into(),
                });
                continue;
            }
        };
        if ft.is_symlink() {
            walked.push(Walked::Skip {
                rel,
                reason: "symbolic link".into(),
            });
            continue;
        }
        if ft.is_file() {
            walked.push(Walked::File {
                rel,
                abs: entry.path().to_path_buf(),
            });
        } else {
            // FIFOs, sockets, devices: reading one could block or never end.
            walked.push(Walked::Skip {
                rel,
                reason: "not a regular file".into(),
            });
        }
    }

    let total = walked.len() as u64;
    let mut seen: HashSet<String> = HashSet::with_capacity(walked.len());
    let mut tx = begin_write(conn, &repo.name, on_event)?;
    let mut in_tx = 0usize;
    for (i, w) in walked.into_iter().enumerate() {
        let done = i as u64 + 1;
        match w {
            Walked::Skip { rel, reason } => {
                record_skip(&tx, repo.id, &rel, &reason, report)?;
                seen.insert(rel);
            }
            Walked::File { rel, abs } => {
                seen.insert(rel.clone());
                index_one_file(&tx, repo.id, &rel, &abs, known.get(&rel), report)?;
            }
        }
        in_tx += 1;
        if in_tx >= FILES_PER_TRANSACTION {
            tx.commit().map_err(db_err("saving indexed files"))?;
            tx = begin_write(conn, &repo.name, on_event)?;
            in_tx = 0;
            on_event(IndexEvent::Progress {
                repo: repo.name.clone(),
                phase: IndexPhase::Files,
                done,
                total,
            });
        }
    }
    // Files gone since the last run (only now that the walk is known to be complete).
    for (path, k) in &known {
        if !seen.contains(path) {
            delete_docs(&tx, "file", k.id)?;
            exec(&tx, "DELETE FROM files WHERE id = ?1", [k.id])
                .map_err(db_err("removing a deleted file"))?;
            report.files_removed += 1;
        }
    }
    {
        let mut stmt = tx
            .prepare("SELECT path FROM skipped_files WHERE repo_id = ?1")
            .map_err(db_err("reading skipped files"))?;
        let stale: Vec<String> = stmt
            .query_map([repo.id], |r| r.get(0))
            .map_err(db_err("reading skipped files"))?
            .filter_map(Result::ok)
            .filter(|p: &String| !seen.contains(p))
            .collect();
        for p in stale {
            exec(
                &tx,
                "DELETE FROM skipped_files WHERE repo_id = ?1 AND path = ?2",
                params![repo.id, p],
            )
            .map_err(db_err("forgetting a skipped file"))?;
        }
    }
    tx.commit().map_err(db_err("saving indexed files"))?;
    on_event(IndexEvent::Progress {
        repo: repo.name.clone(),
        phase: IndexPhase::Files,
        done: total,
        total,
    });
    Ok(())
}

fn record_skip(
    tx: &Transaction<'_>,
    repo_id: i64,
    rel: &str,
    reason: &str,
    report: &mut IndexReport,
) -> Result<(), WorkspaceError> {
    // A file that was indexed and is now skipped (grew too large, became binary) leaves the index.
    if let Some(id) = tx
        .query_row(
            "SELECT id FROM files WHERE repo_id = ?1 AND path = ?2",
            params![repo_id, rel],
            |r| r.get::<_, i64>(0),
        )
        .optional()
        .map_err(db_err("reading a file"))?
    {
        delete_docs(tx, "file", id)?;
        exec(tx, "DELETE FROM files WHERE id = ?1", [id]).map_err(db_err("removing a file"))?;
    }
    exec(
        tx,
        "INSERT OR REPLACE INTO skipped_files (repo_id, path, reason) VALUES (?1, ?2, ?3)",
        params![repo_id, rel, reason],
    )
    .map_err(db_err("recording a skipped file"))?;
    let key = reason.split(':').next().unwrap_or(reason).to_string();
    *report.files_skipped.entry(key).or_default() += 1;
    Ok(())
}

fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// How close to its reading a file's time may be for an edit after the reading to leave the
/// same time: file times tick coarsely (a few ms on Linux, a second or two elsewhere).
const RACY_NS: i64 = 2_000_000_000;

/// The time to keep for a file read now: its own, unless it was changed so shortly before
/// that an edit of the same size could still come with the same time (a save, an index,
/// then a formatter's save), which the next pass would take for no change; such a file is
/// read again then (git's "racily clean" entries).
fn kept_mtime(mtime: i64) -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(i64::MAX);
    // A time in the future (clock skew, an unpacked archive) says nothing of ticks: kept, it
    // is not read again at every pass.
    if (0..RACY_NS).contains(&now.saturating_sub(mtime)) {
        RACY_MTIME
    } else {
        mtime
    }
}

/// A kept time no file has: the file is read again at the next pass.
const RACY_MTIME: i64 = -1;

fn index_one_file(
    tx: &Transaction<'_>,
    repo_id: i64,
    rel: &str,
    abs: &Path,
    known: Option<&KnownFile>,
    report: &mut IndexReport,
) -> Result<(), WorkspaceError> {
    let meta = match std::fs::symlink_metadata(abs) {
        Ok(m) => m,
        Err(e) => return record_skip(tx, repo_id, rel, &format!("unreadable: {e}"), report),
    };
    let size = meta.len();
    let mtime = mtime_ns(&meta);
    if size > MAX_FILE_BYTES {
        return record_skip(tx, repo_id, rel, "larger than 1 MiB", report);
    }
    if let Some(k) = known {
        if k.size == size as i64 && k.mtime_ns == mtime {
            report.files_unchanged += 1;
            return Ok(());
        }
    }
    let bytes = match crate::safe_open::read_regular(
        abs,
        crate::safe_open::Links::Refuse,
        MAX_FILE_BYTES,
    ) {
        Ok(b) => b,
        Err(e) => return record_skip(tx, repo_id, rel, &format!("unreadable: {e}"), report),
    };
    if looks_binary(&bytes) {
        return record_skip(tx, repo_id, rel, "binary", report);
    }
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(_) => return record_skip(tx, repo_id, rel, "not UTF-8 text", report),
    };
    let hash = format!("{:016x}", twox_hash::XxHash3_64::oneshot(text.as_bytes()));
    exec(
        tx,
        "DELETE FROM skipped_files WHERE repo_id = ?1 AND path = ?2",
        params![repo_id, rel],
    )
    .map_err(db_err("updating a file"))?;
    if let Some(k) = known {
        if k.hash == hash {
            // Touched, not changed.
            exec(
                tx,
                "UPDATE files SET mtime_ns = ?1 WHERE id = ?2",
                params![kept_mtime(mtime), k.id],
            )
            .map_err(db_err("updating a file"))?;
            report.files_unchanged += 1;
            return Ok(());
        }
    }
    let language = language_of(rel);
    let lines = text.lines().count() as i64;
    let file_id: i64 = tx
        .query_row(
            "INSERT INTO files (repo_id, path, language, size, mtime_ns, hash, lines)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (repo_id, path) DO UPDATE SET
                language = excluded.language, size = excluded.size, mtime_ns = excluded.mtime_ns,
                hash = excluded.hash, lines = excluded.lines
             RETURNING id",
            params![
                repo_id,
                rel,
                language,
                size as i64,
                kept_mtime(mtime),
                hash,
                lines
            ],
            |r| r.get(0),
        )
        .map_err(db_err("saving a file"))?;
    delete_docs(tx, "file", file_id)?;
    let path_terms = identifier_parts(rel).join(" ");
    let doc = is_document(rel);
    let (units, parts) = if doc {
        let units = document_units(&text);
        let parts = units.len();
        (units, parts)
    } else {
        let mut units = code_units(&text);
        let parts = units.len();
        // A file of one unit is its own outline.
        if parts > 1 {
            units.extend(outline_unit(&text));
        }
        (units, parts)
    };
    for (i, u) in units.into_iter().enumerate() {
        let role = if doc {
            Role::Part
        } else {
            Role::of_unit(i, parts)
        };
        let (kind, title, terms) = if doc {
            let title = if u.title.is_empty() {
                rel.to_string()
            } else {
                u.title.clone()
            };
            (
                "doc",
                title,
                format!("{path_terms}\n{}", identifier_terms(&u.text)),
            )
        } else {
            let title = if u.title.is_empty() {
                rel.to_string()
            } else {
                format!("{rel} ({})", u.title)
            };
            (
                "code",
                title,
                format!("{path_terms}\n{}", identifier_terms(&u.text)),
            )
        };
        exec(tx,
            "INSERT INTO docs (repo_id, kind, source, source_id, path, line, time, title, body, terms, role)
             VALUES (?1, ?2, 'file', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![repo_id, kind, file_id, rel, u.line as i64, mtime / 1_000_000_000, title, u.text, terms, role.to_db()],
        )
        .map_err(db_err("indexing a file"))?;
    }
    report.files_indexed += 1;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file time in the future (clock skew, an unpacked archive) is kept: taken for racy,
    /// the file was read again at every pass (found in review). One just now is racy; one of
    /// ten seconds ago is kept.
    #[test]
    fn only_a_time_just_past_is_racy() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i64;
        let hour = 3_600_000_000_000;
        assert_eq!(kept_mtime(now + hour), now + hour);
        assert_eq!(kept_mtime(now), RACY_MTIME);
        assert_eq!(kept_mtime(now - hour), now - hour);
    }
}
