//! Which set of vectors a pass writes and searches read: the workspace's own, or another
//! model's made beside them that takes their place once whole, and the rows naming their models.

use rusqlite::{params, Connection, OptionalExtension};

use crate::workspace::{db_err, WorkspaceError};

/// Where a pass writes its vectors: over the workspace's own (its model is theirs, or there
/// are none to keep), or beside them until it is complete (`Target::Next`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Target {
    Main,
    Next,
}

impl Target {
    pub(super) fn model(self) -> &'static str {
        match self {
            Target::Main => "embedding_model",
            Target::Next => "next_embedding_model",
        }
    }
    pub(super) fn vectors(self) -> &'static str {
        match self {
            Target::Main => "vectors",
            Target::Next => "next_vectors",
        }
    }
    pub(super) fn doc_vectors(self) -> &'static str {
        match self {
            Target::Main => "doc_vectors",
            Target::Next => "next_doc_vectors",
        }
    }
}

/// How many units have a vector of the workspace's model (`usable`), or the empty one that
/// records the model gives their text none.
pub(super) fn units_with_vectors(conn: &Connection, usable: bool) -> Result<usize, WorkspaceError> {
    conn.query_row(
        "SELECT count(*) FROM doc_vectors dv JOIN vectors v ON v.hash = dv.hash
         WHERE (length(v.vec) > 0) = ?1",
        [usable],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n as usize)
    .map_err(db_err("counting vectors"))
}

type ModelRow = (String, i64, Option<String>);

pub(super) fn model_row(
    conn: &Connection,
    table: &str,
) -> Result<Option<ModelRow>, WorkspaceError> {
    conn.query_row(
        &format!("SELECT name, dimension, fingerprint FROM {table} WHERE id = 1"),
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
    .optional()
    .map_err(db_err("reading the embedding model"))
}

/// Whether `row` is the model named `name` of `dim` dimensions whose file holds
/// `fingerprint` (a row or a model that cannot say is taken at its name).
pub(super) fn is_model(row: &ModelRow, name: &str, dim: usize, fingerprint: Option<&str>) -> bool {
    let (n, d, f) = row;
    n == name && *d as usize == dim && same_file(f.as_deref(), fingerprint)
}

/// Whether two fingerprints are of one file's content; one that is not known (vectors from
/// before fingerprints, a model that cannot say) is taken as the same.
pub(super) fn same_file(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

fn put_model(
    tx: &rusqlite::Transaction<'_>,
    table: &str,
    name: &str,
    dim: usize,
    fingerprint: Option<&str>,
) -> Result<(), WorkspaceError> {
    tx.execute(
        &format!(
            "INSERT INTO {table} (id, name, dimension, fingerprint) VALUES (1, ?1, ?2, ?3)
             ON CONFLICT (id) DO UPDATE SET name = ?1, dimension = ?2, fingerprint = ?3"
        ),
        params![name, dim as i64, fingerprint],
    )
    .map_err(db_err("recording the embedding model"))?;
    Ok(())
}

/// Where a pass of the model `name` writes (`Target`), and the model whose vectors it will
/// replace, if any.
pub(super) fn choose_target(
    conn: &mut Connection,
    name: &str,
    dim: usize,
    fingerprint: Option<&str>,
) -> Result<(Target, Option<String>), WorkspaceError> {
    let tx = crate::workspace::index::begin_write(conn, "embeddings", &mut |_| {})?;
    let old = model_row(&tx, "embedding_model")?;
    let target = match &old {
        Some(row) if is_model(row, name, dim, fingerprint) => {
            // The same model's vectors kept from before fingerprints: it records its own.
            if row.2.is_none() && fingerprint.is_some() {
                tx.execute(
                    "UPDATE embedding_model SET fingerprint = ?1 WHERE id = 1",
                    params![fingerprint],
                )
                .map_err(db_err("recording the embedding model"))?;
            }
            (Target::Main, None)
        }
        _ => {
            let replaced = old.as_ref().map(|(n, d, _)| {
                if n == name && *d as usize == dim {
                    format!("{n} (another file of that name)")
                } else {
                    format!("{n} ({d} dimensions)")
                }
            });
            let kept: bool = tx
                .query_row("SELECT EXISTS (SELECT 1 FROM doc_vectors)", [], |r| {
                    r.get(0)
                })
                .map_err(db_err("counting vectors"))?;
            if kept {
                // Vectors to keep: searched as they are until this model's set is whole. A
                // set begun by this model before (a pass stopped half way) goes on.
                let next = model_row(&tx, "next_embedding_model")?;
                if !next.is_some_and(|row| is_model(&row, name, dim, fingerprint)) {
                    tx.execute_batch("DELETE FROM next_doc_vectors; DELETE FROM next_vectors;")
                        .map_err(db_err("clearing another model's vectors"))?;
                    put_model(&tx, "next_embedding_model", name, dim, fingerprint)?;
                }
                (Target::Next, replaced)
            } else {
                // Nothing to keep (a new workspace, or a model recorded before any vector):
                // this model's vectors go in place at once.
                tx.execute_batch("DELETE FROM doc_vectors; DELETE FROM vectors;")
                    .map_err(db_err("clearing another model's vectors"))?;
                // `generation` (migration 4) is no longer read: the triggers of migration 5
                // count the changes searches look for.
                put_model(&tx, "embedding_model", name, dim, fingerprint)?;
                (Target::Main, replaced)
            }
        }
    };
    if target.0 == Target::Main {
        // A set another model began and never finished is of no use now.
        tx.execute_batch(
            "DELETE FROM next_doc_vectors; DELETE FROM next_vectors;
             DELETE FROM next_embedding_model;",
        )
        .map_err(db_err("clearing another model's vectors"))?;
    }
    tx.commit()
        .map_err(db_err("recording the embedding model"))?;
    Ok(target)
}

/// Puts the set a pass of `name` completed in place of the workspace's vectors, in one
/// transaction.
pub(super) fn swap_in(
    conn: &mut Connection,
    name: &str,
    dim: usize,
    fingerprint: Option<&str>,
) -> Result<(), WorkspaceError> {
    let tx = crate::workspace::index::begin_write(conn, "embeddings", &mut |_| {})?;
    let next = model_row(&tx, "next_embedding_model")?;
    if !next
        .as_ref()
        .is_some_and(|row| is_model(row, name, dim, fingerprint))
    {
        // Another pass of this very model put the set in place first.
        if model_row(&tx, "embedding_model")?
            .is_some_and(|row| is_model(&row, name, dim, fingerprint))
        {
            return Ok(());
        }
        let other = next.map_or_else(|| "none".to_string(), |(n, _, _)| n);
        return Err(WorkspaceError::Embed(format!(
            "another embedding pass switched the workspace's vectors to {other} while this \
             one embedded with {name}; this one stopped"
        )));
    }
    tx.execute_batch(
        "DELETE FROM doc_vectors; DELETE FROM vectors;
         INSERT INTO vectors (hash, vec)
             SELECT hash, vec FROM next_vectors
             WHERE hash IN (SELECT hash FROM next_doc_vectors);
         INSERT INTO doc_vectors (doc_id, hash) SELECT doc_id, hash FROM next_doc_vectors;
         DELETE FROM next_doc_vectors; DELETE FROM next_vectors;
         DELETE FROM next_embedding_model;",
    )
    .map_err(db_err("putting the new model's vectors in place"))?;
    put_model(&tx, "embedding_model", name, dim, fingerprint)?;
    tx.commit()
        .map_err(db_err("putting the new model's vectors in place"))?;
    Ok(())
}
