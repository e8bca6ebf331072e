//! What a page lists: units folded into items (a file's sections, an issue's comments), and
//! the page of hits made from them, with their lines, snippets and links.

use std::collections::HashMap;

use super::snippet::{first_matching_line, line_snippet, needles, words_snippet, SNIPPET_WORDS};
use super::sql::RawHit;
use super::{Kind, SearchHit, SearchMode, SearchPage, SearchQuery};
use crate::workspace::text::Role;
use crate::workspace::{Workspace, WorkspaceError};

/// Units read per item a page lists, before they are folded into items. On the question sets
/// five units held 3.55 items (about 1.4 units an item); three leaves room for a long file or
/// thread, and a read that still folds short is read again deeper.
pub(super) const UNITS_PER_ITEM: usize = 3;

/// What a unit is part of: a file (its sections), an issue or pull request (its comments), a
/// commit.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) enum ItemKey {
    Thread(i64, i64),
    File(i64, String),
    Commit(i64, String),
    Unit(i64),
}

impl ItemKey {
    pub(super) fn of(r: &RawHit) -> ItemKey {
        match (r.number, &r.path, &r.hash) {
            (Some(n), _, _) => ItemKey::Thread(r.repo_id, n),
            (None, Some(p), _) => ItemKey::File(r.repo_id, p.clone()),
            (None, None, Some(h)) => ItemKey::Commit(r.repo_id, h.clone()),
            (None, None, None) => ItemKey::Unit(r.id),
        }
    }
}

/// Units, best first, folded into items: each item at the place of its best unit, counting
/// the others in `also`. A page of five results repeated an item in 69 of 98 questions. A
/// file is shown by its best part rather than its outline, whose lines are not the file's:
/// the line a hit gives is where the agent reads and what an answer cites. An outline repeats
/// its file's words, so it is not counted as one more match in it.
pub(super) fn fold_items(units: impl IntoIterator<Item = RawHit>) -> Vec<RawHit> {
    let mut at: HashMap<ItemKey, usize> = HashMap::new();
    let mut items: Vec<RawHit> = Vec::new();
    for u in units {
        let key = ItemKey::of(&u);
        match at.get(&key) {
            Some(&i) if is_outline(&items[i]) => {
                let (score, also) = (items[i].score, items[i].also);
                items[i] = RawHit { score, also, ..u };
            }
            Some(_) if is_outline(&u) => {}
            Some(&i) => items[i].also += 1,
            None => {
                at.insert(key, items.len());
                items.push(u);
            }
        }
    }
    items
}

/// A file's outline (`text::outline_unit`).
fn is_outline(r: &RawHit) -> bool {
    r.kind == "code" && r.role == Role::Outline
}

impl Workspace {
    /// A page of hits from rows read for it (up to `limit + 1`: one more says there is a next
    /// page).
    pub(super) fn page(
        &self,
        q: &SearchQuery,
        rows: Vec<RawHit>,
        limit: usize,
        note: Option<String>,
    ) -> Result<SearchPage, WorkspaceError> {
        // What the query also searched for is shown where it matched, as the words typed are.
        // A search by meaning alone searched for nothing more.
        let (added, joined) = if q.mode == SearchMode::Meaning {
            (Vec::new(), std::sync::Arc::new(Vec::new()))
        } else {
            let conn = self.conn();
            let mut cache = self.phrase_rows.lock().unwrap_or_else(|e| e.into_inner());
            (
                Self::abbreviations_for(&conn, &mut cache, &q.text)?,
                Self::compounds_for(&conn, &mut cache, &q.text)?,
            )
        };
        let needles = needles(
            &std::iter::once(q.text.as_str())
                .chain(added.iter().map(|a| a.added.as_str()))
                .chain(joined.iter().map(|c| c.joined.as_str()))
                .collect::<Vec<_>>()
                .join(" "),
        );
        let mut hits = Vec::new();
        for row in rows {
            let Ok(kind) = Kind::parse(&row.kind) else {
                continue;
            };
            // For code and documents: the line of the first match within the unit, and the
            // snippet is that line and the two after it. Elsewhere words around the first
            // match, on one line.
            let (line, snippet) = match (kind, row.line) {
                (Kind::Code | Kind::Doc, Some(start)) => {
                    let idx = first_matching_line(&row.body, &needles);
                    // An outline's lines are not consecutive lines of the file: it is cited at
                    // its first, the file's first documentation or declaration.
                    let offset = if is_outline(&row) { 0 } else { idx as i64 };
                    (Some(start + offset), line_snippet(&row.body, idx, &needles))
                }
                // A commit's changed lines are lines of code and text, as a file's are.
                _ if row.role == Role::Changes => {
                    let idx = first_matching_line(&row.body, &needles);
                    (None, line_snippet(&row.body, idx, &needles))
                }
                _ => (row.line, words_snippet(&row.body, &needles, SNIPPET_WORDS)),
            };
            let linked = match (kind, row.number) {
                (Kind::Issue | Kind::Pr, Some(n)) => crate::workspace::queries::linked(
                    &self.conn(),
                    row.repo_id,
                    n,
                    kind == Kind::Pr,
                )?,
                _ => Vec::new(),
            };
            hits.push(SearchHit {
                kind,
                repo: row.repo,
                title: row.title,
                snippet: snippet.trim().to_string(),
                path: row.path,
                line,
                number: row.number,
                comment_id: row.comment_id,
                hash: row.hash,
                in_changes: row.role == Role::Changes,
                state: row.state,
                author: row.author,
                time: row.time,
                // Lower is better for the rank function; report higher-is-better.
                score: -row.score,
                linked,
                also: row.also,
            });
        }
        let next_offset = (hits.len() > limit).then(|| q.offset + limit);
        hits.truncate(limit);
        Ok(SearchPage {
            hits,
            next_offset,
            note,
        })
    }
}
