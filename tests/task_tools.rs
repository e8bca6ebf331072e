//! The tools multi-part tasks need, over a small workspace built here: issues and pull
//! requests listed and counted by their fields, who merged and approved a fix, commits counted
//! between releases, the first release holding a commit, and where a name is defined and used.

mod common;

use std::sync::Arc;

use burrow::tools::{all_tools, ToolRegistry};
use burrow::workspace::Workspace;
use common::git;
use serde_json::json;

struct Fixture {
    _dir: tempfile::TempDir,
    tools: ToolRegistry,
    ws: Arc<Workspace>,
}

/// A repository of three commits, tagged 1.0.0 after the first and 1.1.0 after the third (with
/// lib-0.2.0 of a part of it on the second), and a tracker of issues and pull requests.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("app");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    let ann = ("Ann Lee", "ann@x.org");
    let bob = ("Bob Stone", "bob@x.org");
    git(
        &repo,
        &["init", "-q", "-b", "main"],
        "2024-01-01T00:00:00Z",
        ann,
    );
    std::fs::write(
        repo.join("src/parse.rs"),
        "pub fn parse_header(s: &str) -> usize {\n    s.len()\n}\n",
    )
    .unwrap();
    git(&repo, &["add", "-A"], "2024-01-01T00:00:00Z", ann);
    git(
        &repo,
        &["commit", "-q", "-m", "Add the header parser"],
        "2024-01-01T00:00:00Z",
        ann,
    );
    git(&repo, &["tag", "1.0.0"], "2024-01-01T00:00:00Z", ann);
    std::fs::write(
        repo.join("src/main.rs"),
        "fn main() {\n    let n = parse::parse_header(\"x\");\n    println!(\"{n}\");\n}\n",
    )
    .unwrap();
    git(&repo, &["add", "-A"], "2024-03-01T00:00:00Z", bob);
    git(
        &repo,
        &["commit", "-q", "-m", "Add a json flag"],
        "2024-03-01T00:00:00Z",
        bob,
    );
    git(&repo, &["tag", "lib-0.2.0"], "2024-03-01T00:00:00Z", bob);
    std::fs::write(
        repo.join("src/parse.rs"),
        "pub fn parse_header(s: &str) -> usize {\n    s.trim().len()\n}\n",
    )
    .unwrap();
    git(
        &repo,
        &["commit", "-q", "-am", "Trim headers"],
        "2024-05-01T00:00:00Z",
        ann,
    );
    git(&repo, &["tag", "1.1.0"], "2024-05-01T00:00:00Z", ann);

    let ws = Arc::new(Workspace::open_at(&dir.path().join("home/workspace.db")).unwrap());
    ws.add_repo(&repo, None).unwrap();
    ws.index_repo("app", &mut |_| {}).unwrap();
    let issues = dir.path().join("issues.json");
    std::fs::write(
        &issues,
        r#"[{"number": 1, "title": "Crash on empty header", "state": "closed", "state_reason": "completed", "body": "It panics.", "user": {"login": "carol"}, "labels": [{"name": "Bug"}], "created_at": "2022-03-05T00:00:00Z", "closed_at": "2022-04-01T00:00:00Z"},
            {"number": 2, "title": "Dark mode", "state": "closed", "state_reason": "not_planned", "body": "Please.", "user": {"login": "dave"}, "labels": [{"name": "Feature"}], "created_at": "2022-06-01T00:00:00Z"},
            {"number": 3, "title": "Slow start", "state": "open", "body": "Takes long.", "user": {"login": "carol"}, "labels": [{"name": "Bug"}], "created_at": "2023-02-01T00:00:00Z"},
            {"number": 4, "title": "Handle empty headers", "state": "closed", "body": "Fixes #1", "user": {"login": "bob"}, "labels": [], "created_at": "2022-03-20T00:00:00Z", "merged_at": "2022-04-01T00:00:00Z", "merged_by": {"login": "ann"}, "merge_commit_sha": "abc", "head": {"ref": "fix"}, "base": {"ref": "main"}},
            {"number": 5, "title": "Faster start", "state": "open", "body": "For #3.", "user": {"login": "erin"}, "labels": [{"name": "Needs rebase"}], "created_at": "2023-03-01T00:00:00Z", "head": {"ref": "fast"}, "base": {"ref": "main"}}]
           [{"id": 12, "pull_request_url": "https://api.github.com/repos/acme/app/pulls/4", "state": "APPROVED", "body": "ACK", "user": {"login": "frank"}, "submitted_at": "2022-03-25T00:00:00Z"},
            {"id": 13, "pull_request_url": "https://api.github.com/repos/acme/app/pulls/4", "state": "COMMENTED", "body": "nit", "user": {"login": "gus"}, "submitted_at": "2022-03-26T00:00:00Z"},
            {"id": 14, "pull_request_url": "https://api.github.com/repos/acme/app/pulls/4", "state": "COMMENTED", "body": "one more thought", "user": {"login": "frank"}, "submitted_at": "2022-03-27T00:00:00Z"}]"#,
    )
    .unwrap();
    ws.import(&issues, "acme/app", &mut |_| {}).unwrap();
    let tools = all_tools(ws.clone()).unwrap();
    Fixture {
        _dir: dir,
        tools,
        ws,
    }
}

fn text(f: &Fixture, tool: &str, args: serde_json::Value) -> String {
    f.tools
        .call(tool, args.clone())
        .unwrap_or_else(|e| panic!("{tool} {args}: {e}"))
        .text
}

#[test]
fn issues_are_listed_and_counted_by_their_fields_without_words() {
    let f = fixture();
    let out = text(
        &f,
        "search_issues",
        json!({"label": "bug", "author": "carol"}),
    );
    assert!(
        out.starts_with("2 issues labelled bug, opened by carol: acme/app#3, acme/app#1.\n"),
        "{out}"
    );
    assert!(out.contains("acme/app#3 [open] Slow start"), "{out}");
    assert!(out.contains("acme/app#1 [closed as completed]"), "{out}");
    let out = text(
        &f,
        "search_issues",
        json!({"label": "Bug", "since": "2022-01-01", "until": "2023-01-01"}),
    );
    assert!(
        out.starts_with("1 issue labelled Bug, opened in 2022: acme/app#1.\n"),
        "{out}"
    );
    let out = text(
        &f,
        "search_issues",
        json!({"label": "Bug", "since": "2022-01-01", "until": "2022-06-01"}),
    );
    assert!(
        out.starts_with(
            "1 issue labelled Bug, opened from 2022-01-01 to 2022-05-31: acme/app#1.\n"
        ),
        "{out}"
    );
    let out = text(&f, "search_issues", json!({"state": "not_planned"}));
    assert!(
        out.starts_with("1 issue closed as not planned: acme/app#2.\n"),
        "{out}"
    );
    assert!(
        out.contains("#2 [closed as not planned] Dark mode"),
        "{out}"
    );
    // A page shorter than the count says which part of it is shown.
    let out = text(&f, "search_issues", json!({"limit": 1}));
    assert!(
        out.starts_with("3 issues in all.\n\nNumbers 1 to 1 of them, latest first:\n"),
        "{out}"
    );
    let err = f
        .tools
        .call("search_issues", json!({"state": "sideways"}))
        .expect_err("an unknown state");
    assert!(err.to_string().contains("sideways"), "{err}");
}

#[test]
fn pull_requests_are_found_by_who_merged_them_and_when() {
    let f = fixture();
    let out = text(
        &f,
        "search_pull_requests",
        json!({"merged_by": "ann", "since": "2022-01-01", "until": "2023-01-01"}),
    );
    assert!(
        out.starts_with("1 pull request merged by ann, merged in 2022: acme/app#4.\n"),
        "{out}"
    );
    assert!(out.contains("#4 [merged] Handle empty headers — by bob, opened 2022-03-20, merged by ann 2022-04-01"), "{out}");
    // The dates of a merger's list are those of the merges.
    let out = text(
        &f,
        "search_pull_requests",
        json!({"merged_by": "ann", "until": "2022-03-31"}),
    );
    assert!(out.starts_with("0 pull requests"), "{out}");
    let out = text(
        &f,
        "search_pull_requests",
        json!({"state": "open", "label": "Needs rebase"}),
    );
    assert!(out.contains("#5 [open] Faster start"), "{out}");
    // Words and a merger together keep the merger's.
    let out = text(
        &f,
        "search_pull_requests",
        json!({"query": "headers", "merged_by": "ann"}),
    );
    assert!(out.contains("#4"), "{out}");
    let out = text(
        &f,
        "search_pull_requests",
        json!({"query": "headers", "merged_by": "zed"}),
    );
    assert!(!out.contains("#4"), "{out}");
}

#[test]
fn a_fix_says_who_merged_and_who_approved_it() {
    let f = fixture();
    let pr = text(&f, "get_pull_request", json!({"number": 4}));
    assert!(
        pr.starts_with(
            "Pull request #4 in acme/app: Handle empty headers (merged 2022-04-01 by ann; approved by frank)\n"
        ),
        "{pr}"
    );
    assert!(pr.contains("State: merged (2022-04-01, by ann)"), "{pr}");
    // A comment after an approval does not take it back; the author is not a reviewer.
    assert!(pr.contains("Approved by: frank\n"), "{pr}");
    assert!(pr.contains("Reviewed (comments) by: gus\n"), "{pr}");
    let issue = text(&f, "get_issue", json!({"number": 1}));
    assert!(
        issue.starts_with(
            "Issue #1 in acme/app: Crash on empty header (fixed by #4: merged 2022-04-01 by ann; approved by frank)\n"
        ),
        "{issue}"
    );
    assert!(issue.contains("State: closed as completed"), "{issue}");
    assert!(
        issue.contains("Fixed by: #4 (merged 2022-04-01 by ann; approved by frank)"),
        "{issue}"
    );
}

#[test]
fn commits_are_counted_between_releases_and_the_latest_is_said_first() {
    let f = fixture();
    let out = text(
        &f,
        "search_commits",
        json!({"repo": "app", "since": "1.0.0", "until": "1.1.0"}),
    );
    let first = out.lines().next().unwrap();
    assert!(
        first.starts_with("2 commits after 1.0.0 up to 1.1.0; the latest is "),
        "{out}"
    );
    assert!(
        first.ends_with(" by Ann Lee, on 2024-05-01: Trim headers"),
        "{out}"
    );
    let out = text(
        &f,
        "search_commits",
        json!({"path": "src/parse.rs", "until": "2024-04-01"}),
    );
    assert!(
        out.starts_with("1 commit touching src/parse.rs up to 2024-04-01; the latest is "),
        "{out}"
    );
    assert!(
        out.contains(" by Ann Lee, on 2024-01-01: Add the header parser\n"),
        "{out}"
    );
    let err = f
        .tools
        .call("search_commits", json!({"until": "2.0.0"}))
        .expect_err("no such tag");
    assert!(err.to_string().contains("neither a date"), "{err}");
}

#[test]
fn a_commit_says_the_first_release_of_each_series_that_holds_it() {
    let f = fixture();
    let hash =
        f.ws.commits(Some("app"), Some("Bob Stone"), None, None, None, 1)
            .unwrap()[0]
            .hash
            .clone();
    let out = text(&f, "show_commit", json!({"hash": hash}));
    // In the commit's head, which an opening shows, not after its diff.
    let head: String = out.lines().take(4).collect::<Vec<_>>().join("\n");
    assert!(
        head.contains("First released in: 1.1.0 (2024-05-01), lib-0.2.0 (2024-03-01)"),
        "{out}"
    );
    // Its first line says what the commit is and the first release of its own series.
    assert_eq!(
        out.lines().next().unwrap(),
        format!("commit {hash} (Add a json flag; first released in 1.1.0 (2024-05-01))")
    );
    let first =
        f.ws.commits(
            Some("app"),
            Some("Ann Lee"),
            None,
            None,
            Some(1_704_153_600),
            1,
        )
        .unwrap();
    let releases =
        f.ws.releases_containing(Some("app"), &first[0].hash)
            .unwrap();
    let tags: Vec<&str> = releases.iter().map(|r| r.tag.as_str()).collect();
    assert_eq!(tags, ["1.0.0", "lib-0.2.0"]);
    assert_eq!(releases[0].tags_in_series, 2);
}

#[test]
fn releases_are_counted_by_series_and_dates_newest_first() {
    let f = fixture();
    let out = text(&f, "list_releases", json!({}));
    assert!(
        out.starts_with("3 releases; the latest is 1.1.0 2024-05-01.\n"),
        "{out}"
    );
    let order: Vec<&str> = out.lines().skip(3).collect();
    assert_eq!(
        order,
        [
            "1.1.0 2024-05-01",
            "lib-0.2.0 2024-03-01",
            "1.0.0 2024-01-01"
        ]
    );
    // The project's own versions, by that word or by the repository's name.
    for own in ["versions", "app"] {
        let out = text(&f, "list_releases", json!({"series": own}));
        assert!(
            out.starts_with("2 releases (the project's own versions); the latest is 1.1.0"),
            "{own}: {out}"
        );
    }
    let out = text(
        &f,
        "list_releases",
        json!({"series": "lib", "since": "2024-01-01", "until": "2025-01-01"}),
    );
    assert!(
        out.starts_with(
            "1 release of lib (lib-* tags) from 2024-01-01 to 2024-12-31; the latest is lib-0.2.0"
        ),
        "{out}"
    );
    let out = text(
        &f,
        "list_releases",
        json!({"series": "versions", "until": "2024-03-01"}),
    );
    assert!(
        out.starts_with("1 release (the project's own versions) before 2024-03-01"),
        "{out}"
    );
    // A series the repository does not tag says which it does.
    let out = text(&f, "list_releases", json!({"series": "core"}));
    assert_eq!(
        out,
        "No releases of core (core-* tags). The series of tags: lib, versions."
    );
    let e = f
        .tools
        .call("list_releases", json!({"since": "May 2024"}))
        .expect_err("not a date");
    assert!(e.to_string().contains("since \"May 2024\""), "{e}");
}

#[test]
fn a_file_is_read_as_it_was_at_a_tag_or_commit() {
    let f = fixture();
    let now = text(&f, "read_file", json!({"path": "src/parse.rs"}));
    assert!(now.contains("s.trim().len()"), "{now}");
    let then = text(
        &f,
        "read_file",
        json!({"path": "src/parse.rs", "at": "1.0.0"}),
    );
    assert!(then.starts_with("src/parse.rs at 1.0.0 (commit "), "{then}");
    assert!(then.contains("2024-01-01"), "{then}");
    assert!(
        then.contains("    s.len()") && !then.contains("trim"),
        "{then}"
    );
    // By a commit's hash prefix; a file that did not exist yet is not found there.
    let first =
        f.ws.commits(Some("app"), None, None, None, None, 10)
            .unwrap();
    let oldest = &first.last().unwrap().hash;
    let by_hash = text(
        &f,
        "read_file",
        json!({"path": "src/parse.rs", "at": &oldest[..8], "start_line": 2, "end_line": 2}),
    );
    assert!(by_hash.contains("2      s.len()"), "{by_hash}");
    let err = f
        .tools
        .call("read_file", json!({"path": "src/main.rs", "at": "1.0.0"}))
        .expect_err("src/main.rs came later");
    assert!(err.to_string().contains("src/main.rs at 1.0.0"), "{err}");
    let err = f
        .tools
        .call("read_file", json!({"path": "src/parse.rs", "at": "9.9.9"}))
        .expect_err("no such tag");
    assert!(err.to_string().contains("9.9.9"), "{err}");
    // Confined like the rest: no path out of the repository, at any revision.
    assert!(f
        .tools
        .call("read_file", json!({"path": "../x", "at": "1.0.0"}))
        .is_err());
}

#[test]
fn a_name_is_found_where_it_is_defined_and_where_it_is_used() {
    let f = fixture();
    let out = text(&f, "find_symbol", json!({"name": "parse_header"}));
    assert!(
        out.starts_with(
            "`parse_header` is defined in app:src/parse.rs (line 1) as \
             `pub fn parse_header(s: &str) -> usize {`, and used in app:src/main.rs.\n\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("`parse_header` is defined in:\n  app:src/parse.rs:1:"),
        "{out}"
    );
    assert!(
        out.contains("Used in 1 other file:\n  app:src/main.rs (1 line), line 2:"),
        "{out}"
    );
    let out = text(&f, "find_symbol", json!({"name": "no_such_name"}));
    assert!(out.contains("No definition of `no_such_name`"), "{out}");
    assert!(f.tools.call("find_symbol", json!({"name": "a b"})).is_err());
}

/// A question about a default asks where a field is given its value: a literal in a `Default`
/// impl, which no definer names, before a test's literal; a builder's method of the same name
/// is where the name is defined.
#[test]
fn a_fields_literal_value_is_where_its_default_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("lib");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::create_dir_all(repo.join("tests")).unwrap();
    std::fs::write(
        repo.join("tests/limits.rs"),
        "fn small() -> Config {\n    Config {\n        size_limit: 1,\n    }\n}\n",
    )
    .unwrap();
    std::fs::write(
        repo.join("src/config.rs"),
        "pub struct Config {\n    size_limit: usize,\n}\n\nimpl Default for Config {\n    \
         fn default() -> Config {\n        Config {\n            size_limit: 10 * (1 << 20), \
         // 10 MB\n        }\n    }\n}\n",
    )
    .unwrap();
    std::fs::write(
        repo.join("src/builder.rs"),
        "impl Builder {\n    pub fn size_limit(&mut self, limit: usize) -> &mut Builder {\n        \
         self.config.size_limit = limit;\n        self\n    }\n}\n",
    )
    .unwrap();
    let ws = Arc::new(Workspace::open_at(&dir.path().join("home/workspace.db")).unwrap());
    ws.add_repo(&repo, None).unwrap();
    ws.index_repo("lib", &mut |_| {}).unwrap();
    let tools = all_tools(ws).unwrap();
    let out = tools
        .call("find_symbol", json!({"name": "size_limit"}))
        .unwrap()
        .text;
    assert!(
        out.starts_with(
            "`size_limit` is set to `10 * (1 << 20)` in lib:src/config.rs (line 8); defined in \
             lib:src/builder.rs (line 2).\n\n"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "`size_limit` is given a value in:\n  lib:src/config.rs:8: size_limit: 10 * (1 << 20), \
             // 10 MB\n  lib:tests/limits.rs:3: size_limit: 1,\n"
        ),
        "{out}"
    );
}

#[test]
fn the_workspaces_field_values_are_what_it_holds() {
    let f = fixture();
    let v = f.ws.field_values().unwrap();
    assert_eq!(v.labels, ["Bug", "Feature", "Needs rebase"]);
    assert_eq!(v.openers[0], "carol");
    assert_eq!(v.mergers, ["ann"]);
    assert_eq!(v.committers, ["Ann Lee", "Bob Stone"]);
    assert!(
        v.paths.contains(&"src/parse.rs".to_string()),
        "{:?}",
        v.paths
    );
    assert!(v.paths.contains(&"src".to_string()), "{:?}", v.paths);
    assert_eq!(v.tags, ["1.0.0", "1.1.0", "lib-0.2.0"]);
}
