//! Locators: what a tool's result names that can be opened. Each tool returns one per item it
//! shows, beside its text, so a shell links an observation's items without reading its text,
//! and a run knows exactly which items it has seen.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::workspace::{Kind, SearchHit};

/// Which lines of a file `Locator::open_call` reads around the file's line: from `before`
/// lines ahead of it, `lines` in all (to the end where `None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineWindow {
    pub before: usize,
    pub lines: Option<usize>,
}

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

    /// The repository the item is in, where it says.
    pub fn repo(&self) -> Option<&str> {
        match self {
            Locator::File { repo, .. }
            | Locator::Issue { repo, .. }
            | Locator::PullRequest { repo, .. }
            | Locator::Commit { repo, .. } => repo.as_deref(),
        }
    }

    /// The call that opens the item with the tool made for its kind: `read_file` (a file, the
    /// lines `window` says around its line), `get_issue`, `get_pull_request` or `show_commit`.
    pub fn open_call(&self, window: LineWindow) -> (&'static str, Map<String, Value>) {
        // The repository follows the item's own key, as the model is shown calls written.
        let mut args = Map::new();
        let with_repo = |mut args: Map<String, Value>| {
            if let Some(r) = self.repo() {
                args.insert("repo".into(), json!(r));
            }
            args
        };
        match self {
            Locator::Issue { number, .. } | Locator::PullRequest { number, .. } => {
                args.insert("number".into(), json!(number));
                let tool = if matches!(self, Locator::Issue { .. }) {
                    "get_issue"
                } else {
                    "get_pull_request"
                };
                (tool, with_repo(args))
            }
            Locator::File { path, line, .. } => {
                args.insert("path".into(), json!(path));
                let mut args = with_repo(args);
                if let Some(l) = line {
                    let start = l.saturating_sub(window.before).max(1);
                    args.insert("start_line".into(), json!(start));
                    if let Some(lines) = window.lines {
                        args.insert("end_line".into(), json!(start + lines - 1));
                    }
                }
                ("read_file", args)
            }
            Locator::Commit { hash, .. } => {
                args.insert("hash".into(), json!(hash));
                ("show_commit", with_repo(args))
            }
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

    /// How an answer cites the item: `repo#12` (an issue or a pull request), `repo:path:line`
    /// (a file, at a line where the item has one), `repo@0123456789` (a commit, its hash cut
    /// to ten digits as the tools show it). The step grammar offers these as a final answer's
    /// citations.
    pub fn cite(&self) -> String {
        let repo = |r: &Option<String>| r.clone().unwrap_or_default();
        match self {
            Locator::File {
                path,
                line,
                repo: r,
            } => match line {
                Some(l) => format!("{}:{path}:{l}", repo(r)),
                None => format!("{}:{path}", repo(r)),
            },
            Locator::Issue { number, repo: r } | Locator::PullRequest { number, repo: r } => {
                format!("{}#{number}", repo(r))
            }
            Locator::Commit { hash, repo: r } => {
                let short: String = hash.chars().take(COMMIT_CITE_DIGITS).collect();
                format!("{}@{short}", repo(r))
            }
        }
    }

    /// Whether `mention`, something an answer's text names (`#12`, a commit hash or a prefix
    /// of one, a path or its end), is this item.
    pub fn is_named_by(&self, mention: &Mention) -> bool {
        match (self, mention) {
            (
                Locator::Issue { number, .. } | Locator::PullRequest { number, .. },
                Mention::Number(n),
            ) => number == n,
            (
                Locator::Issue { number, repo } | Locator::PullRequest { number, repo },
                Mention::RepoNumber { repo: r, number: n },
            ) => number == n && repo.as_deref().is_none_or(|x| same_repo(x, r)),
            (Locator::Commit { hash, .. }, Mention::Hash(h)) => {
                let h = h.to_ascii_lowercase();
                hash.starts_with(&h) || h.starts_with(hash.as_str())
            }
            // The mention is the path or its end; a longer path names another file (the
            // text's `crates/core/README.md` is not the `README.md` cited).
            (Locator::File { path, .. }, Mention::Path(p)) => {
                let p = p.trim_start_matches("./");
                path == p || path.ends_with(&format!("/{p}"))
            }
            _ => false,
        }
    }
}

/// Digits of a commit hash in a citation (as the tools print hashes).
pub const COMMIT_CITE_DIGITS: usize = 10;

/// An item named in free text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Mention {
    /// `#12` (or `issue 12`, `PR 12`): an issue or a pull request.
    Number(i64),
    /// `owner/repo#12`, as the tools write an issue or a pull request of a repository.
    RepoNumber { repo: String, number: i64 },
    /// Seven to forty hex digits with a digit and a letter among them: a commit.
    Hash(String),
    /// A path with a folder (`src/main.rs`), a file name with a known extension, or a path of
    /// two folders or more to a file without one (`benchsuite/runs/2016-12-30/summary`).
    Path(String),
}

/// Whether two names are one repository's: the same, or one its owner's `owner/name` of the
/// other (`gui` and `bitcoin-core/gui`).
pub fn same_repo(a: &str, b: &str) -> bool {
    let (a, b) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
    a == b || a.ends_with(&format!("/{b}")) || b.ends_with(&format!("/{a}"))
}

impl Mention {
    /// Whether `named`, found in an answer, names what this mention, found in what the run
    /// was shown, names: a hash by a prefix of it, a path by its end (a longer path names
    /// another file: the text's `crates/core/README.md` is not the `README.md` shown), and
    /// `owner/repo#12` the `#12` shown only in one of `repos`, those of the items the run saw
    /// (the `#12` an issue of acme/app mentions is acme/app's, not bitcoin/bitcoin's).
    pub fn names_same(&self, named: &Mention, repos: &[&str]) -> bool {
        match (self, named) {
            (Mention::Number(a), Mention::Number(b)) => a == b,
            (Mention::RepoNumber { number: a, .. }, Mention::Number(b)) => a == b,
            (Mention::Number(a), Mention::RepoNumber { repo, number: b }) => {
                a == b && repos.iter().any(|r| same_repo(r, repo))
            }
            (
                Mention::RepoNumber {
                    repo: ra,
                    number: a,
                },
                Mention::RepoNumber {
                    repo: rb,
                    number: b,
                },
            ) => a == b && same_repo(ra, rb),
            (Mention::Hash(a), Mention::Hash(b)) => {
                let (a, b) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
                a.starts_with(&b) || b.starts_with(&a)
            }
            (Mention::Path(shown), Mention::Path(named)) => {
                let named = named.trim_start_matches("./");
                shown == named || shown.ends_with(&format!("/{named}"))
            }
            _ => false,
        }
    }

    pub fn text(&self) -> String {
        match self {
            Mention::Number(n) => format!("#{n}"),
            Mention::RepoNumber { repo, number } => format!("{repo}#{number}"),
            Mention::Hash(h) | Mention::Path(h) => h.clone(),
        }
    }
}

/// What `mentions` finds: a GitHub issue's or pull request's URL; `#12` (not `&#12;`) or
/// `issue 12`, `PR 12`, `pull request 12`,
/// `issue#12`; `owner/repo#12` and `repo#12` (as Burrow cites an issue of a repository named
/// without its owner: `ripgrep#2690`, which was no mention, so an invented one passed); a
/// commit hash; a path, also as the tools write one with its repository (`ripgrep:a/b/summary`,
/// which without an extension was no path).
const MENTIONS: &str = r#"(?x)
    https?://github\.com/(?P<url_repo>[\w.-]+/[\w.-]+)/(?:pull|issues)/(?P<url_num>[0-9]{1,9})\b
    | \b(?P<repo>[\w.-]+/[\w.-]+)\#(?P<repo_num>[0-9]{1,9})\b
    | (?:^|[^\w&/])\#(?P<num>[0-9]{1,9})\b
    | (?:^|[\s(\[{,;:"'`])(?P<short>[A-Za-z][\w.-]+)\#(?P<short_num>[0-9]{1,9})\b
    | \b(?i:issue|pr|pull\s+request)\s+\#?(?P<named>[0-9]{1,9})\b
    | \b(?P<hash>[0-9a-fA-F]{7,40})\b
    | (?P<path>(?:[\w.-]+/)+[\w.-]*\w\.[A-Za-z0-9]{1,8}
        | [\w-]+\.(?:rs|md|toml|json|ya?ml|txt|cpp|cc|h|hpp|c|py|ts|js|sh|ui|qrc|in|ac|am))\b
    | (?:^|[^\w/:.-])(?P<bare>(?:[\w.-]+/){2,}[\w.-]*[A-Za-z][\w-]*)\b
    | (?:^|[\s(\[{,;"'`])[A-Za-z][\w.-]*:(?P<repo_path>[A-Za-z_.][\w.-]*/(?:[\w.-]+/)+[\w.-]*[A-Za-z][\w-]*)\b"#;

/// The issues, commits and files a text names, in order, each once. What a model writes in
/// an answer is read with this to flag what the run never saw.
pub fn mentions(text: &str) -> Vec<Mention> {
    static RE: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(MENTIONS)
            .map_err(|e| tracing::error!("the mentions pattern is invalid: {e}"))
            .ok()
    });
    let Some(re) = re else {
        return Vec::new();
    };
    let mut out: Vec<Mention> = Vec::new();
    for c in re.captures_iter(text) {
        let m = if let (Some(r), Some(n)) = (
            c.name("url_repo").or_else(|| c.name("repo")),
            c.name("url_num").or_else(|| c.name("repo_num")),
        ) {
            n.as_str().parse().ok().map(|number| Mention::RepoNumber {
                repo: r.as_str().to_string(),
                number,
            })
        } else if let Some(n) = c.name("num").or_else(|| c.name("named")) {
            n.as_str().parse().ok().map(Mention::Number)
        } else if let (Some(r), Some(n)) = (c.name("short"), c.name("short_num")) {
            let r = r.as_str();
            let kind = ["issue", "issues", "pr", "prs", "pull", "bug"]
                .iter()
                .any(|k| r.eq_ignore_ascii_case(k));
            n.as_str().parse().ok().map(|number| {
                if kind {
                    Mention::Number(number)
                } else {
                    Mention::RepoNumber {
                        repo: r.to_string(),
                        number,
                    }
                }
            })
        } else if let Some(h) = c.name("hash") {
            let h = h.as_str();
            let digits = h.chars().any(|c| c.is_ascii_digit());
            let letters = h.chars().any(|c| c.is_ascii_alphabetic());
            (digits && letters).then(|| Mention::Hash(h.to_string()))
        } else {
            c.name("path")
                .or_else(|| c.name("bare"))
                .or_else(|| c.name("repo_path"))
                .map(|p| Mention::Path(p.as_str().to_string()))
        };
        if let Some(m) = m {
            if !out.contains(&m) {
                out.push(m);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_open_call_reads_the_window_it_is_given_around_a_files_line() {
        let file = Locator::file("r", "src/a.rs", Some(120));
        let to_end = LineWindow {
            before: 20,
            lines: None,
        };
        let (tool, args) = file.open_call(to_end);
        assert_eq!(tool, "read_file");
        assert_eq!(
            Value::Object(args),
            json!({"path": "src/a.rs", "repo": "r", "start_line": 100})
        );
        let (_, args) = Locator::file("r", "a.rs", None).open_call(to_end);
        assert_eq!(Value::Object(args), json!({"path": "a.rs", "repo": "r"}));
        let no_repo = Locator::Issue {
            number: 7,
            repo: None,
        };
        let (tool, args) = no_repo.open_call(to_end);
        assert_eq!(
            (tool, Value::Object(args)),
            ("get_issue", json!({"number": 7}))
        );
    }

    #[test]
    fn citations_and_mentions_name_the_same_items() {
        regex::Regex::new(MENTIONS).unwrap();
        let f = Locator::file("ripgrep", "crates/ignore/src/walk.rs", Some(873));
        let i = Locator::issue_or_pr("bitcoin-core/gui", 809, false);
        let c = Locator::commit("ripgrep", "ed94aedf27aa11bb22cc33dd44ee55ff66778899");
        assert_eq!(f.cite(), "ripgrep:crates/ignore/src/walk.rs:873");
        assert_eq!(i.cite(), "bitcoin-core/gui#809");
        assert_eq!(c.cite(), "ripgrep@ed94aedf27");
        let text = "Fixed in ed94aedf27 (see #809 and crates/ignore/src/walk.rs, walk.rs, \
                    README.md); not abc&#12; 1234567 is a number, deadbee a word";
        let m = mentions(text);
        assert_eq!(
            m,
            vec![
                Mention::Hash("ed94aedf27".into()),
                Mention::Number(809),
                Mention::Path("crates/ignore/src/walk.rs".into()),
                Mention::Path("walk.rs".into()),
                Mention::Path("README.md".into()),
            ]
        );
        assert!(c.is_named_by(&m[0]));
        assert!(i.is_named_by(&m[1]));
        assert!(f.is_named_by(&m[2]) && f.is_named_by(&m[3]));
        assert!(!f.is_named_by(&m[4]) && !i.is_named_by(&Mention::Number(80)));
        // Numbers named in words, as a user asks about them.
        assert_eq!(
            mentions("What did Issue 431 ask, and did pull request #77 or PR 5 fix it in 2021?"),
            [431, 77, 5].map(Mention::Number)
        );
    }

    #[test]
    fn a_url_with_a_port_or_a_time_names_no_path() {
        let m =
            mentions("It is served at http://localhost:8080/api/v1/users, and ran at 10:30/am/pm.");
        assert!(m.iter().all(|m| !matches!(m, Mention::Path(_))), "{m:?}");
    }
}
