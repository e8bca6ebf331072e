//! `list_releases`: a repository's tags, counted and listed by series and dates ("how many
//! releases of the ignore crate were tagged in 2026", "the latest release before June").

use std::fmt::Write as _;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use super::format::{date, limit, parse_date};
use crate::tools::{Tool, ToolError, ToolOutput};
use crate::workspace::queries::series;
use crate::workspace::Workspace;

/// List a repository's releases (its tags), newest first, counted: of one series (the
/// project's own versions, or one part's, like ignore for its ignore-0.4.21 tags), within
/// dates.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListReleasesInput {
    #[serde(default)]
    pub repo: Option<String>,
    /// Only one series: "versions" for the project's own tags (14.0.0, v1.2), or a part's name
    /// for its tags (ignore for ignore-0.4.21). Omit for every tag.
    #[serde(default)]
    #[schemars(length(max = 60))]
    pub series: Option<String>,
    /// Only releases from this date on, like 2024-01-31.
    #[serde(default)]
    pub since: Option<String>,
    /// Only releases before this date.
    #[serde(default)]
    pub until: Option<String>,
    /// How many to list (default 10, at most 50); the count covers them all.
    #[serde(default)]
    pub limit: Option<usize>,
}

pub struct ListReleases(pub Arc<Workspace>);

/// The series prefix a `series` argument means: `""` for the project's own versions (named
/// "versions" or by the repository's name), else the part's name with its dash.
fn series_prefix(ws: &Workspace, asked: &str) -> Result<String, ToolError> {
    let name = asked.trim().trim_end_matches(['-', '*']).trim();
    let repo_named = ws.repos()?.iter().any(|r| {
        r.name.eq_ignore_ascii_case(name)
            || r.name
                .rsplit('/')
                .next()
                .is_some_and(|short| short.eq_ignore_ascii_case(name))
    });
    if name.is_empty() || name.eq_ignore_ascii_case("versions") || repo_named {
        Ok(String::new())
    } else {
        Ok(format!("{name}-"))
    }
}

impl Tool for ListReleases {
    const NAME: &'static str = "list_releases";
    type Input = ListReleasesInput;

    fn run(&self, i: ListReleasesInput) -> Result<ToolOutput, ToolError> {
        let since = parse_date("since", &i.since)?;
        let until = parse_date("until", &i.until)?;
        let prefix = match i.series.as_deref().filter(|s| !s.trim().is_empty()) {
            Some(s) => Some(series_prefix(&self.0, s)?),
            None => None,
        };
        let tags = self
            .0
            .tags(i.repo.as_deref(), prefix.as_deref(), since, until)?;
        let mut what = format!("release{}", if tags.len() == 1 { "" } else { "s" });
        match prefix.as_deref() {
            Some("") => what.push_str(" (the project's own versions)"),
            Some(p) => {
                let _ = write!(what, " of {} ({p}* tags)", p.trim_end_matches('-'));
            }
            None => {}
        }
        match (since, until) {
            (Some(a), Some(b)) => {
                let _ = write!(
                    what,
                    " from {} to {}",
                    date(Some(a)),
                    date(Some(b - 86_400))
                );
            }
            (Some(a), None) => {
                let _ = write!(what, " on or after {}", date(Some(a)));
            }
            (None, Some(b)) => {
                let _ = write!(what, " before {}", date(Some(b)));
            }
            (None, None) => {}
        }
        let Some(latest) = tags.first() else {
            // What there is to choose from, for a series that was misspelt.
            let mut known: Vec<String> = self
                .0
                .tags(i.repo.as_deref(), None, None, None)?
                .iter()
                .map(|t| match series(&t.tag) {
                    "" | "v" => "versions".to_string(),
                    s => s.trim_end_matches('-').to_string(),
                })
                .collect();
            known.sort();
            known.dedup();
            return Ok(ToolOutput::new(
                format!("No {what}. The series of tags: {}.", known.join(", ")),
                &tags,
            ));
        };
        let several_repos = tags.iter().any(|t| t.repo != latest.repo);
        let line = |t: &crate::workspace::queries::Tagged| {
            let repo = if several_repos {
                format!(" (repo {})", t.repo)
            } else {
                String::new()
            };
            format!("{} {}{repo}", t.tag, date(Some(t.time)))
        };
        let mut out = String::new();
        // The count and the latest in the first line, which small models copy into their
        // answer.
        let _ = writeln!(
            out,
            "{} {what}; the latest is {}.",
            tags.len(),
            line(latest)
        );
        let shown = limit(i.limit, 10);
        if tags.len() > 1 {
            let _ = writeln!(out, "\nNewest first:");
            for t in tags.iter().take(shown) {
                let _ = writeln!(out, "{}", line(t));
            }
            if tags.len() > shown {
                let _ = writeln!(out, "… and {} older.", tags.len() - shown);
            }
        }
        Ok(ToolOutput::new(out, &tags))
    }
}
