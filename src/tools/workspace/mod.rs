//! The workspace tools: searching and reading the user's repositories, commits, issues and pull
//! requests. Each returns compact text for a small model's context and the same result as data.
//! An empty result says what was searched: that is information for the model, not an error.
//!
//! The tools by family: `search` for searching everything and code; `symbols` for where a name
//! is defined and used; `files` for repositories,
//! folders and files; `history` for commits and the people who made them; `releases` for tags; `issues` for issues and
//! pull requests. `format` holds what they share: dates, limits, clipping and search results as
//! the model reads them.

mod files;
mod format;
mod history;
mod issues;
mod releases;
mod search;
mod symbols;

use std::sync::Arc;

use super::{RegistryError, ToolRegistry};
use crate::workspace::Workspace;

pub use files::{
    ListDirectory, ListDirectoryInput, ListRepositories, ListRepositoriesInput, ReadFile,
    ReadFileInput,
};
pub use format::{is_results_header, without_snippets};
pub use history::{
    ListMembers, ListMembersInput, SearchCommits, SearchCommitsInput, ShowCommit, ShowCommitInput,
    WhoChanged, WhoChangedInput,
};
pub use issues::{
    GetIssue, GetIssueInput, GetPullRequest, GetPullRequestInput, SearchIssues, SearchIssuesInput,
    SearchPullRequests, SearchPullRequestsInput,
};
pub use releases::{ListReleases, ListReleasesInput};
pub use search::{CodeSearchMode, Search, SearchCode, SearchCodeInput, SearchInput};
pub use symbols::{is_definer, FindSymbol, FindSymbolInput};

/// Every workspace tool, over `ws`.
pub fn workspace_tools(ws: Arc<Workspace>) -> Result<ToolRegistry, RegistryError> {
    let mut r = ToolRegistry::new();
    r.register(ListRepositories(ws.clone()))?;
    r.register(Search(ws.clone()))?;
    r.register(SearchCode(ws.clone()))?;
    r.register(FindSymbol(ws.clone()))?;
    r.register(ReadFile(ws.clone()))?;
    r.register(ListDirectory(ws.clone()))?;
    r.register(SearchCommits(ws.clone()))?;
    r.register(ShowCommit(ws.clone()))?;
    r.register(SearchIssues(ws.clone()))?;
    r.register(GetIssue(ws.clone()))?;
    r.register(SearchPullRequests(ws.clone()))?;
    r.register(GetPullRequest(ws.clone()))?;
    r.register(ListMembers(ws.clone()))?;
    r.register(WhoChanged(ws.clone()))?;
    r.register(ListReleases(ws))?;
    Ok(r)
}
