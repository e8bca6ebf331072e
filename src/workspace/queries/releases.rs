//! Releases: the tags whose history holds a commit, the first of each series first, and a tag
//! as a point in time for the commit filters.

use std::collections::{HashMap, HashSet};

use rusqlite::params;
use serde::Serialize;

use crate::workspace::{db_err, Workspace, WorkspaceError};

/// The first tag of one series (`14.0.0` of the plain versions, `ignore-0.4.21` of the
/// `ignore-` ones) whose history holds a commit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Release {
    pub tag: String,
    /// The time of the commit the tag names.
    pub time: i64,
    /// How many tags of the same series hold the commit, this one included.
    pub tags_in_series: usize,
}

/// A tag and the commit it names.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tagged {
    pub repo: String,
    pub tag: String,
    /// The time of the commit the tag names.
    pub time: i64,
    pub hash: String,
}

/// What a tag name is a version of: its text before the first digit that starts a version
/// (`ignore-0.4.21` → `ignore-`, `v1.2` → `v`, `14.0.0` → ``).
pub fn series(tag: &str) -> &str {
    let at = tag
        .char_indices()
        .find(|&(i, c)| {
            c.is_ascii_digit()
                && (i == 0
                    || !tag.as_bytes()[i - 1].is_ascii_alphanumeric()
                    || tag[..i].ends_with('v'))
        })
        .map_or(tag.len(), |(i, _)| i);
    &tag[..at]
}

impl Workspace {
    /// The releases that contain commit `hash` (a full hash or a prefix of it): of each series
    /// of tags, the first, by the time of the commit it names; the project's own series first,
    /// then the others in that order.
    pub fn releases_containing(
        &self,
        repo: Option<&str>,
        hash: &str,
    ) -> Result<Vec<Release>, WorkspaceError> {
        let hash = hash.trim().to_lowercase();
        let repo = self.resolve_repo_holding(
            repo,
            "SELECT 1 FROM commits WHERE repo_id = ?1 AND substr(hash, 1, length(?2)) = ?2",
            &hash,
        )?;
        let conn = self.conn();
        let mut st = conn
            .prepare_cached("SELECT hash, parents, time FROM commits WHERE repo_id = ?1")
            .map_err(db_err("reading the history"))?;
        let rows: Vec<(String, String, i64)> = st
            .query_map([repo.id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(db_err("reading the history"))?
            .collect::<Result<_, _>>()
            .map_err(db_err("reading the history"))?;
        let matching: Vec<&str> = rows
            .iter()
            .map(|(h, _, _)| h.as_str())
            .filter(|h| h.starts_with(&hash))
            .collect();
        let start = match matching.as_slice() {
            [one] => one.to_string(),
            [] => {
                return Err(WorkspaceError::NotFound(format!(
                    "commit {hash} in {}",
                    repo.name
                )))
            }
            _ => {
                return Err(WorkspaceError::BadQuery(format!(
                    "{hash} names {} commits in {}: give more of the hash",
                    matching.len(),
                    repo.name
                )))
            }
        };
        // The commits that descend from it: a tag naming one of them holds it.
        let mut children: HashMap<&str, Vec<&str>> = HashMap::new();
        let mut time: HashMap<&str, i64> = HashMap::new();
        for (h, parents, t) in &rows {
            time.insert(h.as_str(), *t);
            for p in parents.split_whitespace() {
                children.entry(p).or_default().push(h.as_str());
            }
        }
        let mut holding: HashSet<&str> = HashSet::new();
        let mut todo = vec![start.as_str()];
        while let Some(h) = todo.pop() {
            if holding.insert(h) {
                todo.extend(children.get(h).into_iter().flatten().copied());
            }
        }
        let mut st = conn
            .prepare_cached("SELECT name, target FROM refs WHERE repo_id = ?1 AND kind = 'tag'")
            .map_err(db_err("reading tags"))?;
        let tags: Vec<(String, String)> = st
            .query_map(params![repo.id], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(db_err("reading tags"))?
            .collect::<Result<_, _>>()
            .map_err(db_err("reading tags"))?;
        let mut first: HashMap<String, Release> = HashMap::new();
        for (tag, target) in tags {
            if !holding.contains(target.as_str()) {
                continue;
            }
            let Some(&t) = time.get(target.as_str()) else {
                continue;
            };
            let entry = first.entry(series(&tag).to_string()).or_insert(Release {
                tag: tag.clone(),
                time: t,
                tags_in_series: 0,
            });
            entry.tags_in_series += 1;
            if (t, tag.as_str()) < (entry.time, entry.tag.as_str()) {
                entry.tag = tag;
                entry.time = t;
            }
        }
        let mut out: Vec<Release> = first.into_values().collect();
        // The project's own releases (`14.0.0`, `v1.2`) before those of its parts
        // (`ignore-0.4.21`), which a repository of several crates tags on the same day.
        out.sort_by(|a, b| {
            let own = |r: &Release| !matches!(series(&r.tag), "" | "v");
            (own(a), a.time, &a.tag).cmp(&(own(b), b.time, &b.tag))
        });
        Ok(out)
    }

    /// The tags of one repository (any, without one named) whose commits fall from `since` up
    /// to `until` (exclusive), newest first; of one series only when `of_series` is given (""
    /// for the project's own versions, which takes `v1.2` too).
    pub fn tags(
        &self,
        repo: Option<&str>,
        of_series: Option<&str>,
        since: Option<i64>,
        until: Option<i64>,
    ) -> Result<Vec<Tagged>, WorkspaceError> {
        let repo_id = match repo {
            Some(r) => Some(self.resolve_repo(Some(r))?.id),
            None => None,
        };
        let conn = self.conn();
        let mut st = conn
            .prepare_cached(
                "SELECT p.name, r.name, c.time, c.hash FROM refs r
                 JOIN commits c ON c.repo_id = r.repo_id AND c.hash = r.target
                 JOIN repos p ON p.id = r.repo_id
                 WHERE r.kind = 'tag' AND (?1 IS NULL OR r.repo_id = ?1)
                   AND (?2 IS NULL OR c.time >= ?2) AND (?3 IS NULL OR c.time < ?3)
                 ORDER BY c.time DESC, r.name DESC",
            )
            .map_err(db_err("reading tags"))?;
        let rows: Vec<Tagged> = st
            .query_map(params![repo_id, since, until], |r| {
                Ok(Tagged {
                    repo: r.get(0)?,
                    tag: r.get(1)?,
                    time: r.get(2)?,
                    hash: r.get(3)?,
                })
            })
            .map_err(db_err("reading tags"))?
            .collect::<Result<_, _>>()
            .map_err(db_err("reading tags"))?;
        let own = |s: &str| matches!(s, "" | "v");
        Ok(rows
            .into_iter()
            .filter(|t| match of_series {
                None => true,
                Some(want) if own(want) => own(series(&t.tag)),
                Some(want) => series(&t.tag) == want,
            })
            .collect())
    }

    /// The time of the commit tag `name` names, when the repository (without one named: any
    /// repository) has that tag.
    pub fn tag_time(&self, repo: Option<&str>, name: &str) -> Result<Option<i64>, WorkspaceError> {
        let repo_id = match repo {
            Some(r) => Some(self.resolve_repo(Some(r))?.id),
            None => None,
        };
        let conn = self.conn();
        conn.query_row(
            "SELECT c.time FROM refs r JOIN commits c ON c.repo_id = r.repo_id AND c.hash = r.target
             WHERE (?1 IS NULL OR r.repo_id = ?1) AND r.kind = 'tag' AND r.name = ?2
             ORDER BY c.time LIMIT 1",
            params![repo_id, name.trim()],
            |r| r.get(0),
        )
        .map(Some)
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            e => Err(e),
        })
        .map_err(db_err("reading a tag"))
    }
}

#[cfg(test)]
mod tests {
    use super::series;

    #[test]
    fn a_tag_series_is_the_name_before_its_version() {
        assert_eq!(series("14.0.0"), "");
        assert_eq!(series("ignore-0.4.21"), "ignore-");
        assert_eq!(series("grep-cli-0.1.9"), "grep-cli-");
        assert_eq!(series("v1.2.3"), "v");
        assert_eq!(series("0.0.1"), "");
        assert_eq!(series("nightly"), "nightly");
    }
}
