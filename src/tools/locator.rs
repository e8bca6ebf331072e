//! Locators: what a tool's result names that can be opened. Each tool returns one per item it
//! shows, beside its text, so a shell links an observation's items without reading its text,
//! and a run knows exactly which items it has seen.

use serde::{Deserialize, Serialize};

use crate::workspace::{Kind, SearchHit};

/// A file (at a line), an issue, a pull request or a commit, in a repository.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Locator {
    File {
        path: String,
        line: Option<usize>,
        repo: Option<String>,
    },
    /// An issue, or a pull request when no issue has the number.
    Issue {
        number: i64,
        repo: Option<String>,
    },
    PullRequest {
        number: i64,
        repo: Option<String>,
    },
    Commit {
        hash: String,
        repo: Option<String>,
    },
}

impl Locator {
    pub fn file(repo: &str, path: &str, line: Option<usize>) -> Self {
        Locator::File {
            path: path.to_string(),
            line,
            repo: Some(repo.to_string()),
        }
    }

    pub fn commit(repo: &str, hash: &str) -> Self {
        Locator::Commit {
            hash: hash.to_string(),
            repo: Some(repo.to_string()),
        }
    }

    pub fn issue_or_pr(repo: &str, number: i64, is_pr: bool) -> Self {
        let repo = Some(repo.to_string());
        if is_pr {
            Locator::PullRequest { number, repo }
        } else {
            Locator::Issue { number, repo }
        }
    }

    /// The item a search hit is, when the hit says enough to open it.
    pub fn of_hit(h: &SearchHit) -> Option<Self> {
        match h.kind {
            Kind::Code | Kind::Doc => h.path.as_deref().map(|p| {
                let line = h.line.and_then(|l| usize::try_from(l).ok());
                Locator::file(&h.repo, p, line)
            }),
            Kind::Commit => h.hash.as_deref().map(|c| Locator::commit(&h.repo, c)),
            Kind::Issue | Kind::Pr => h
                .number
                .map(|n| Locator::issue_or_pr(&h.repo, n, h.kind == Kind::Pr)),
        }
    }
}
