//! The values the workspace's fields take (labels, people, paths, tags): what a filter the
//! agent writes may name, so a grammar can hold it to them rather than to what a small model
//! makes up.

use serde::{Deserialize, Serialize};

use crate::workspace::{db_err, Workspace, WorkspaceError};

/// Values taken at most of each field: a grammar of thousands of alternatives still decodes
/// fast, but a workspace of a hundred thousand files or people is held to its most frequent.
const MAX_VALUES: usize = 5_000;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FieldValues {
    /// Labels of issues and pull requests.
    pub labels: Vec<String>,
    /// Logins that opened issues or pull requests.
    pub openers: Vec<String>,
    /// Logins that merged pull requests.
    pub mergers: Vec<String>,
    /// Names of commit authors.
    pub committers: Vec<String>,
    /// Paths of indexed files, and the folders that hold them.
    pub paths: Vec<String>,
    /// Tag names.
    pub tags: Vec<String>,
}

impl Workspace {
    /// The values of each field across the workspace, most frequent first.
    pub fn field_values(&self) -> Result<FieldValues, WorkspaceError> {
        let conn = self.conn();
        let column = |sql: &str| -> Result<Vec<String>, WorkspaceError> {
            let mut st = conn.prepare(sql).map_err(db_err("reading field values"))?;
            let rows = st
                .query_map([MAX_VALUES as i64], |r| r.get::<_, String>(0))
                .map_err(db_err("reading field values"))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(db_err("reading field values"));
            rows
        };
        let mut paths =
            column("SELECT path FROM files GROUP BY path ORDER BY count(*) DESC, path LIMIT ?1")?;
        // The folders too: a history is asked of a folder as often as of a file.
        let mut seen: std::collections::HashSet<String> = paths.iter().cloned().collect();
        let mut folders: Vec<String> = Vec::new();
        for p in &paths {
            let mut at = p.as_str();
            while let Some((dir, _)) = at.rsplit_once('/') {
                if seen.insert(dir.to_string()) {
                    folders.push(dir.to_string());
                }
                at = dir;
            }
        }
        paths.extend(folders);
        paths.truncate(MAX_VALUES);
        Ok(FieldValues {
            labels: column(
                "SELECT value FROM issues, json_each(issues.labels)
                 WHERE json_valid(issues.labels) AND type = 'text'
                 GROUP BY value ORDER BY count(*) DESC, value LIMIT ?1",
            )?,
            openers: column(
                "SELECT author FROM issues GROUP BY author ORDER BY count(*) DESC, author LIMIT ?1",
            )?,
            mergers: column(
                "SELECT merged_by FROM issues WHERE merged_by IS NOT NULL
                 GROUP BY merged_by ORDER BY count(*) DESC, merged_by LIMIT ?1",
            )?,
            committers: column(
                "SELECT author_name FROM commits GROUP BY author_name
                 ORDER BY count(*) DESC, author_name LIMIT ?1",
            )?,
            paths,
            tags: column(
                "SELECT name FROM refs WHERE kind = 'tag' GROUP BY name ORDER BY name LIMIT ?1",
            )?,
        })
    }
}
