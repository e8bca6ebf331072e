//! The search tools: `search` over everything indexed, and `search_code`, ranked or by exact text
//! or regular expression.

use std::fmt::Write as _;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use super::format::{limit, parse_date, run_search};
use crate::tools::{Locator, Tool, ToolError, ToolOutput};
use crate::workspace::grep::GrepQuery;
use crate::workspace::{Kind, SearchQuery, Workspace};

/// Search everything in the workspace (code, documents, commits, issues, pull requests and their
/// comments) by words, best matches first.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchInput {
    /// A few words to look for (keywords, not a whole question). Identifiers match in any
    /// spelling: parse_args, ParseArgs, parse.
    // Bounded: small models wrote the whole question as a query, then changed a letter of it
    // at each step (Qwen2.5-Coder-1.5B: "theWindows", "the_windows", "the-windows").
    #[schemars(length(max = 80))]
    pub query: String,
    /// Only these kinds: code, doc, commit, issue, pr.
    #[serde(default)]
    pub kinds: Option<Vec<Kind>>,
    /// Only this repository (name or owner/name).
    #[serde(default)]
    pub repo: Option<String>,
    /// Only issues or pull requests in this state: open, closed or merged.
    #[serde(default)]
    pub state: Option<String>,
    /// Only items with this label.
    #[serde(default)]
    pub label: Option<String>,
    /// Only items by this author (login or name).
    #[serde(default)]
    pub author: Option<String>,
    /// Only files matching this glob, like src/**/*.rs or *.md.
    #[serde(default)]
    pub path: Option<String>,
    /// Only items from this date on, like 2024-01-31.
    #[serde(default)]
    pub since: Option<String>,
    /// Only items before this date, like 2024-12-31.
    #[serde(default)]
    pub until: Option<String>,
    /// How many results (default 8, at most 50).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Skip this many results (for the next page).
    #[serde(default)]
    pub offset: Option<usize>,
}

pub struct Search(pub Arc<Workspace>);

impl Tool for Search {
    const NAME: &'static str = "search";
    type Input = SearchInput;

    fn run(&self, i: SearchInput) -> Result<ToolOutput, ToolError> {
        let q = SearchQuery {
            since: parse_date("since", &i.since)?,
            until: parse_date("until", &i.until)?,
            text: i.query,
            kinds: i.kinds.unwrap_or_default(),
            repo: i.repo,
            state: i.state,
            label: i.label,
            author: i.author,
            path: i.path,
            limit: limit(i.limit, 8),
            offset: i.offset.unwrap_or(0),
            ..Default::default()
        };
        run_search(&self.0, q)
    }
}

/// Search source code. "ranked" (the default) finds code about the words; "exact" finds every
/// line containing the text as written (identifiers, error messages); "regex" matches a
/// regular expression per line.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchCodeInput {
    /// The words, exact text, or regular expression to find.
    pub query: String,
    /// ranked, exact or regex.
    #[serde(default)]
    pub mode: Option<CodeSearchMode>,
    /// Only this repository.
    #[serde(default)]
    pub repo: Option<String>,
    /// Only files matching this glob, like src/**/*.rs or *.toml.
    #[serde(default)]
    pub path: Option<String>,
    /// For exact and regex: match case exactly (default: ignore case).
    #[serde(default)]
    pub case_sensitive: Option<bool>,
    /// How many results (default 10, at most 50).
    #[serde(default)]
    pub limit: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CodeSearchMode {
    Ranked,
    Exact,
    Regex,
}

pub struct SearchCode(pub Arc<Workspace>);

impl Tool for SearchCode {
    const NAME: &'static str = "search_code";
    type Input = SearchCodeInput;

    fn run(&self, i: SearchCodeInput) -> Result<ToolOutput, ToolError> {
        let mode = i.mode.unwrap_or(CodeSearchMode::Ranked);
        if mode == CodeSearchMode::Ranked {
            return run_search(
                &self.0,
                SearchQuery {
                    text: i.query,
                    kinds: vec![Kind::Code],
                    repo: i.repo,
                    path: i.path,
                    limit: limit(i.limit, 10),
                    ..Default::default()
                },
            );
        }
        let q = GrepQuery {
            pattern: i.query.clone(),
            regex: mode == CodeSearchMode::Regex,
            case_sensitive: i.case_sensitive.unwrap_or(false),
            repo: i.repo.clone(),
            path: i.path.clone(),
            limit: limit(i.limit, 10),
        };
        let result = self.0.grep(&q)?;
        let what = format!(
            "{} {:?}{}{}",
            if q.regex { "regex" } else { "text" },
            i.query,
            i.repo.map(|r| format!(" in {r}")).unwrap_or_default(),
            i.path.map(|p| format!(" under {p}")).unwrap_or_default()
        );
        // Files changed since indexing beyond reading are not searched: said, not counted.
        let unread = match result.files_unread {
            0 => String::new(),
            1 => " 1 indexed file could not be read now (changed since indexing; index again)."
                .to_string(),
            n => format!(
                " {n} indexed files could not be read now (changed since indexing; index again)."
            ),
        };
        if result.hits.is_empty() {
            return Ok(ToolOutput::new(
                format!(
                    "No line matches {what} ({} files searched).{unread}",
                    result.files_searched
                ),
                &result,
            ));
        }
        let mut out = format!("{} matching lines for {what}:\n", result.hits.len());
        for h in &result.hits {
            let _ = writeln!(out, "{}:{}: {}", h.path, h.line, h.text.trim());
        }
        if result.truncated {
            out.push_str(
                "More matches exist: narrow with path, or search for something more specific.\n",
            );
        }
        if !unread.is_empty() {
            out.push_str(unread.trim_start());
            out.push('\n');
        }
        let items = result.hits.iter().map(|h| {
            let line = usize::try_from(h.line).ok();
            Locator::file(&h.repo, &h.path, line)
        });
        Ok(ToolOutput::new(out, &result).with_items(items))
    }
}
