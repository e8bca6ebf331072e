//! The values a task names as filters: of the workspace's labels, people, paths and tags, those
//! the task's words ask to filter by ("wallet-labelled", "opened by Sjors", "still open"), and
//! the years and code names it writes. A route's filters are held to them (`agent/route.rs`),
//! so a filter is one the task asked for and the workspace holds. Qwen2.5-Coder-0.5B, offered
//! every label and login, filtered "who approved the fix" by a label and an author the task
//! never named; offered every label the task's words mention, it answered "which issue
//! reports the wallet name bug" with the list of issues labelled Wallet.

use std::collections::HashSet;

use crate::workspace::queries::{series, FieldValues};

/// What a task names, of what a filter may take.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Named {
    pub values: FieldValues,
    /// Years written in the task (2022), for dates.
    pub years: Vec<String>,
    /// Names of code written in the task (`is_readable_stdin`, `OverrideBuilder`).
    pub symbols: Vec<String>,
    /// Issue and pull request states the task's words ask for (open, closed, merged,
    /// not_planned).
    pub states: Vec<&'static str>,
    /// Of the workspace's openers, those the task names as who opened an issue: the openers,
    /// and those it says reported or filed one.
    pub reporters: Vec<String>,
    /// Months written in the task ("October 2023"), as `2023-10`.
    pub months: Vec<String>,
    /// The task bounds its dates with words ("before", "after", "by the end of"), rather than
    /// naming a whole year or month ("in 2021", "during October 2023").
    pub ranged: bool,
    /// The task asks for a count or for the last of something ("how many", "last changed"):
    /// with its filters, words to match would narrow what is counted or ordered.
    pub tallies: bool,
    /// The task asks for a list or a count ("which pull requests…", "how many…"), not for
    /// the one item it describes ("which pull request fixed…").
    pub lists: bool,
    /// The series of the workspace's tags the task names ("the ignore crate" for its
    /// `ignore-0.4.21` tags), by name without the dash.
    pub series: Vec<String>,
    /// The task asks about releases or tags themselves ("how many releases…").
    pub releases: bool,
    /// The task speaks of commits.
    pub commits: bool,
    /// The task asks how many ("how many", "the number of").
    pub counts: bool,
    /// The task starts a range at what it names ("after 14.1.1", "on top of 15.0.0"): one
    /// release named without such words is where the range ends ("shipped in 14.1.1").
    pub after: bool,
}

/// The lowercased words of `text`: runs of letters, digits and `_-./`, the characters of
/// logins, paths, versions and identifiers, trimmed of the punctuation that ends a sentence.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || "_-./".contains(c)))
        .map(|w| w.trim_matches(|c: char| ".-/".contains(c)).to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Whether `phrase` is in `text` as whole words.
fn says(text_words: &[String], phrase: &str) -> bool {
    let p = words(phrase);
    !p.is_empty() && text_words.windows(p.len()).any(|w| w == p.as_slice())
}

/// Words every tracker's tasks use: a label's word among them does not name the label ("gui
/// issue #1" is not the label "good first issue").
const TRACKER_WORDS: &[&str] = &[
    "issue",
    "issues",
    "request",
    "requests",
    "commit",
    "commits",
    "change",
    "changes",
    "first",
    "label",
    "labels",
    "question",
    "questions",
    "wanted",
    "release",
    "merge",
    "merged",
];

/// Words that, next to a label's, say it is a label: "labelled Bug", "the Bug label",
/// "tagged UX", "marked as needing a rebase".
const LABEL_MARKS: &[&str] = &["label", "labels", "labelled", "labeled", "tagged", "marked"];

/// Words after a person that make them the one who opened the items ("did hebasto open",
/// "furszy's pull requests": the possessive's `s`), those that make them the one who opened
/// an issue ("alice reported", "filed by"), and those that make them the one who merged them
/// ("laanwj merged").
const OPENER_AFTER: &[&str] = &[
    "open",
    "opened",
    "opens",
    "author",
    "authored",
    "wrote",
    "write",
    "writes",
    "create",
    "created",
    "submitted",
    "s",
];
const REPORTER_AFTER: &[&str] = &["file", "filed", "files", "report", "reported", "reports"];
const MERGER_AFTER: &[&str] = &["merge", "merged", "merges"];

/// What a person named in a task did to the items it asks about.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    Opened,
    /// Opened an issue: "laanwj reported that…, which pull request fixed it" does not name
    /// the pull request's author.
    Reported,
    Merged,
    /// A commit's author: any mark names them.
    Any,
}

/// How far (in words) a mark may stand from what it marks.
const NEAR: usize = 4;

/// Whether `phrase` is in `text` as whole words with a word of `marks` at most `NEAR` words
/// before or after it, or joined to it by a hyphen ("wallet-labelled").
fn says_near(text_words: &[String], phrase: &str, marks: &[&str]) -> bool {
    let p = words(phrase);
    if p.is_empty() {
        return false;
    }
    let joined = p.join("-");
    if text_words.iter().any(|w| {
        w.strip_prefix(&joined)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|rest| marks.contains(&rest))
    }) {
        return true;
    }
    (0..text_words.len().saturating_sub(p.len() - 1))
        .filter(|&i| text_words[i..i + p.len()] == p[..])
        .any(|i| {
            let before = &text_words[i.saturating_sub(NEAR)..i];
            let after = &text_words
                [(i + p.len()).min(text_words.len())..(i + p.len() + NEAR).min(text_words.len())];
            before
                .iter()
                .chain(after)
                .any(|w| marks.contains(&w.as_str()))
        })
}

/// Whether the task names `label` as one: all of it, or its one long word ("needing a
/// rebase" names "Needs rebase"), next to a word that marks a label.
fn names_label(task_words: &[String], label: &str) -> bool {
    if says_near(task_words, label, LABEL_MARKS) {
        return true;
    }
    let l = words(label);
    let kind_of_item = !l.is_empty()
        && (0..task_words.len().saturating_sub(l.len())).any(|i| {
            task_words[i..i + l.len()] == l[..]
                && LABEL_KINDS.contains(&task_words[i + l.len()].as_str())
        });
    if kind_of_item {
        return true;
    }
    words(label)
        .iter()
        .filter(|w| w.len() >= 5 && !TRACKER_WORDS.contains(&w.as_str()))
        .max_by_key(|w| w.len())
        .is_some_and(|w| says_near(task_words, w, LABEL_MARKS))
}

/// Whether the task names `person` as a filter in `role`: "opened by X", "from X", "X's", "X
/// merged", "merged by X".
fn names_person(task_words: &[String], person: &str, role: Role) -> bool {
    let p = words(person);
    if p.is_empty() {
        return false;
    }
    (0..task_words.len().saturating_sub(p.len() - 1))
        .filter(|&i| task_words[i..i + p.len()] == p[..])
        .any(|i| {
            let before = i.checked_sub(1).map(|b| task_words[b].as_str());
            let before_by = i.checked_sub(2).map(|b| task_words[b].as_str());
            let after = task_words.get(i + p.len()).map(String::as_str);
            let by_what = |marks: &[&str]| {
                before == Some("by") && before_by.is_some_and(|w| marks.contains(&w))
            };
            let (merged_by, reported_by) = (by_what(MERGER_AFTER), by_what(REPORTER_AFTER));
            let marked_before = match before {
                Some("from") => role != Role::Merged,
                Some("by") => match role {
                    Role::Merged => merged_by,
                    Role::Opened => !merged_by && !reported_by,
                    Role::Reported => !merged_by,
                    Role::Any => true,
                },
                _ => false,
            };
            let marked_after = after.is_some_and(|w| match role {
                Role::Opened => OPENER_AFTER.contains(&w),
                Role::Reported => OPENER_AFTER.contains(&w) || REPORTER_AFTER.contains(&w),
                Role::Merged => MERGER_AFTER.contains(&w),
                Role::Any => {
                    OPENER_AFTER.contains(&w)
                        || REPORTER_AFTER.contains(&w)
                        || MERGER_AFTER.contains(&w)
                }
            });
            marked_before || marked_after
        })
}

/// The states a task asks to filter by, and the phrases that ask: a state said of the items
/// the task lists ("open issues", "are still open", "closed as not planned", "that nobody has
/// closed yet"), not of the one it looks for ("which merged pull request fixed…").
const STATES: &[(&str, &[&str])] = &[
    (
        "open",
        &[
            "still open",
            "are open",
            "currently open",
            "remain open",
            "nobody has closed",
            "no one has closed",
            "not closed",
            "not yet closed",
            "never closed",
            "unresolved",
        ],
    ),
    ("closed", &["are closed", "were closed"]),
    ("merged", &["were merged", "got merged"]),
    ("not_planned", &["not planned", "not_planned"]),
];

/// Words for the items a task lists: a state just before one of them is a filter ("open
/// feature requests", "merged PRs"). Plural: "the merged pull request that fixed it" is the
/// one item looked for.
const LISTED: &[&str] = &["issues", "requests", "prs", "reports", "bugs", "tickets"];

/// How many words may stand between a state and the items it is said of ("open feature
/// requests", "closed pull requests").
const STATE_GAP: usize = 2;

/// Words after a label's that say it is the kind of item a tracker's template files: "bug
/// reports", "feature requests".
const LABEL_KINDS: &[&str] = &["report", "reports", "request", "requests"];

/// Words that bound dates: a task with none of them asks for a whole year or month.
const RANGE_WORDS: &[&str] = &[
    "before", "after", "since", "until", "till", "prior", "between", "through", "end", "up to",
    "earlier", "later", "began", "start",
];

/// Phrases of a task that counts, or asks for the last of something.
const TALLIES: &[&str] = &[
    "how many",
    "number of",
    "count",
    "last",
    "latest",
    "most recent",
    "newest",
];

/// Words of a task that asks for several items.
const LISTS: &[&str] = &[
    "issues",
    "pull requests",
    "prs",
    "commits",
    "releases",
    "tags",
    "reports",
    "requests",
    "list",
];

/// Words of a task that asks about releases.
const RELEASE_WORDS: &[&str] = &[
    "release", "releases", "released", "tag", "tags", "tagged", "version", "versions",
];

/// Words of a task that asks about a file's history: the path it names is a filter of commits
/// only then ("which commit last changed src/x.rs"), not where it describes ("a .gitignore
/// saved by an editor…").
const CHANGE_WORDS: &[&str] = &[
    "change",
    "changed",
    "changes",
    "changing",
    "touch",
    "touched",
    "touches",
    "touching",
    "modify",
    "modified",
    "modifies",
    "modifying",
    "edit",
    "edited",
    "edits",
    "editing",
    "history",
];

/// Words just before a path that make it the subject of commits ("the last commit to
/// src/x.rs", "commits under crates/ignore").
const PATH_MARKS: &[&str] = &["to", "under", "in", "of", "touching"];

/// Whether the task writes `path` just after a word of `PATH_MARKS`.
fn marked_path(task_words: &[String], path: &str) -> bool {
    let path = path.to_lowercase();
    task_words
        .windows(2)
        .any(|w| w[1] == path && PATH_MARKS.contains(&w[0].as_str()))
}

const MONTHS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// The months a task writes with their year ("October 2023", "Oct 2023", "March of 2021"), as
/// `YYYY-MM`.
fn months(task_words: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, w) in task_words.iter().enumerate() {
        let Some(m) = MONTHS
            .iter()
            .position(|name| w == name || w.len() >= 3 && name.starts_with(w.as_str()))
        else {
            continue;
        };
        let year = match task_words.get(i + 1).map(String::as_str) {
            Some("of") => task_words.get(i + 2),
            _ => task_words.get(i + 1),
        };
        if let Some(y) = year.filter(|y| is_year(y)) {
            let month = format!("{y}-{:02}", m + 1);
            if !out.contains(&month) {
                out.push(month);
            }
        }
    }
    out
}

fn is_year(w: &str) -> bool {
    w.len() == 4
        && w.chars().all(|c| c.is_ascii_digit())
        && (w.starts_with("19") || w.starts_with("20"))
}

/// The states `task_words` say of the items the task lists.
fn states(task_words: &[String]) -> Vec<&'static str> {
    let mut states = Vec::new();
    for (state, phrases) in STATES {
        let before_items = (0..task_words.len()).any(|i| {
            task_words[i] == *state
                && task_words[i + 1..(i + 2 + STATE_GAP).min(task_words.len())]
                    .iter()
                    .any(|w| LISTED.contains(&w.as_str()))
        });
        if before_items || phrases.iter().any(|p| says(task_words, p)) {
            states.push(*state);
        }
    }
    // "not closed" is said of open items, not of closed ones.
    if states.contains(&"open") {
        states.retain(|s| *s != "closed");
    }
    states
}

/// What `task` names of `values`.
pub fn named(values: &FieldValues, task: &str) -> Named {
    let task_words = words(task);
    let lower = task.to_lowercase();
    let people = |list: &[String], role: Role| -> Vec<String> {
        list.iter()
            .filter(|p| names_person(&task_words, p, role))
            .cloned()
            .collect()
    };
    // A commit author's name is written out whole ("Andrew Gallant"), and is rarely anything
    // but the filter; logins are words of a sentence too.
    let committers: Vec<String> = values
        .committers
        .iter()
        .filter(|p| {
            words(p).len() >= 2 && says(&task_words, p) || names_person(&task_words, p, Role::Any)
        })
        .cloned()
        .collect();
    // A path the task writes out, when it asks about changes; of a file and the folders
    // holding it, the file.
    let mut paths: Vec<String> = values
        .paths
        .iter()
        .filter(|p| p.contains('/') || p.contains('.'))
        .filter(|p| lower.contains(&p.to_lowercase()))
        .cloned()
        .collect();
    if !CHANGE_WORDS.iter().any(|w| says(&task_words, w)) {
        paths.retain(|p| marked_path(&task_words, p));
    }
    let all = paths.clone();
    paths.retain(|p| !all.iter().any(|q| q != p && q.contains(p.as_str())));
    let mut years: Vec<String> = Vec::new();
    for w in &task_words {
        if is_year(w) && !years.contains(w) {
            years.push(w.clone());
        }
    }
    let mut named_series: Vec<String> = values
        .tags
        .iter()
        .map(|t| series(t))
        .filter(|s| !matches!(*s, "" | "v"))
        .map(|s| s.trim_end_matches('-').to_string())
        .filter(|s| !s.is_empty() && says(&task_words, s))
        .collect();
    named_series.sort();
    named_series.dedup();
    Named {
        values: FieldValues {
            labels: values
                .labels
                .iter()
                .filter(|l| names_label(&task_words, l))
                .cloned()
                .collect(),
            openers: people(&values.openers, Role::Opened),
            mergers: people(&values.mergers, Role::Merged),
            committers,
            paths,
            tags: values
                .tags
                .iter()
                .filter(|t| says(&task_words, t))
                .cloned()
                .collect(),
        },
        reporters: people(&values.openers, Role::Reported),
        years,
        symbols: symbols(task),
        states: states(&task_words),
        months: months(&task_words),
        ranged: RANGE_WORDS.iter().any(|w| says(&task_words, w)),
        tallies: TALLIES.iter().any(|w| says(&task_words, w)),
        lists: LISTS.iter().chain(TALLIES).any(|w| says(&task_words, w)),
        series: named_series,
        releases: RELEASE_WORDS.iter().any(|w| says(&task_words, w)),
        commits: says(&task_words, "commit") || says(&task_words, "commits"),
        counts: ["how many", "number of", "count"]
            .iter()
            .any(|w| says(&task_words, w)),
        after: ["after", "since", "on top of", "following"]
            .iter()
            .any(|w| says(&task_words, w)),
    }
}

/// The names of code a task writes: in backticks, or with an underscore, or in CamelCase with
/// a capital inside.
fn symbols(task: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    let ticked: Vec<&str> = task.split('`').skip(1).step_by(2).collect();
    let candidates = ticked.iter().copied().chain(
        task.split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| {
                w.contains('_')
                    || w.chars().skip(1).any(char::is_uppercase)
                        && w.chars().any(char::is_lowercase)
            }),
    );
    for c in candidates {
        let name = c.trim().trim_end_matches("()");
        let ok = !name.is_empty()
            && name.chars().all(|ch| ch.is_alphanumeric() || ch == '_')
            && !name.starts_with(|ch: char| ch.is_ascii_digit());
        if ok && seen.insert(name.to_string()) {
            out.push(name.to_string());
        }
    }
    out
}

/// Verbs a yes-or-no question starts with ("Is that still the default?", "Does the code
/// agree?").
const POLAR_VERBS: &[&str] = &[
    "is", "are", "was", "were", "does", "do", "did", "has", "have", "had", "can", "could", "will",
    "would", "should",
];

/// Whether the task asks a yes-or-no question: one of its questions starts with a verb of
/// `POLAR_VERBS`, or one does after a comma ("Going by the backup, is #567 closed now?").
pub fn asks_yes_or_no(task: &str) -> bool {
    let mut question = String::new();
    let mut chars = task.chars().peekable();
    while let Some(c) = chars.next() {
        // A full stop ends a sentence only before a space: not in `lowargs.rs` or 1.5.
        let ends_sentence = chars.peek().is_none_or(|n| n.is_whitespace());
        match c {
            '?' => {
                let polar = question.split(',').any(|clause| {
                    let first = clause
                        .split_whitespace()
                        .next()
                        .unwrap_or("")
                        .to_lowercase();
                    POLAR_VERBS.contains(&first.as_str())
                });
                if polar {
                    return true;
                }
                question.clear();
            }
            '.' | '!' if ends_sentence => question.clear(),
            '\n' => question.clear(),
            c => question.push(c),
        }
    }
    false
}

/// Phrases of a task that asks where a value is set or a name defined ("the default …, and
/// where is it set?", "which file defines it?", "where does that number come from?").
const WHERE_SET: &[&str] = &[
    "default",
    "defaults",
    "defined",
    "defines",
    "define",
    "is set",
    "is it set",
    "are set",
    "come from",
    "comes from",
];

/// Whether the task asks where a value is set or a name is defined.
pub fn asks_where_set(task: &str) -> bool {
    let w = words(task);
    WHERE_SET.iter().any(|p| says(&w, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> FieldValues {
        FieldValues {
            labels: vec![
                "Bug".into(),
                "Wallet".into(),
                "Needs rebase".into(),
                "UI".into(),
            ],
            openers: vec!["Sjors".into(), "Bosch-0".into(), "ui".into()],
            mergers: vec!["laanwj".into()],
            committers: vec!["Andrew Gallant".into(), "Jan".into()],
            paths: vec![
                "crates/core/flags/defs.rs".into(),
                "crates/core/flags".into(),
                "crates/core".into(),
                "crates".into(),
            ],
            tags: vec!["14.1.0".into(), "14.1.1".into(), "4.1".into()],
        }
    }

    #[test]
    fn a_task_names_the_labels_people_paths_and_tags_it_filters_by() {
        let n = named(
            &values(),
            "Which wallet-labelled issues opened by Sjors are still open?",
        );
        assert_eq!(n.values.labels, ["Wallet"]);
        assert_eq!(n.values.openers, ["Sjors"]);
        assert_eq!(n.states, ["open"]);
        let n = named(
            &values(),
            "Which open pull requests are marked as needing a rebase?",
        );
        assert_eq!(n.values.labels, ["Needs rebase"]);
        assert_eq!(n.states, ["open"]);
        let n = named(
            &values(),
            "How many issues opened in 2022 carry the Bug label?",
        );
        assert_eq!(n.values.labels, ["Bug"]);
        assert_eq!(n.years, ["2022"]);
        let n = named(
            &values(),
            "What was the last commit to modify crates/core/flags/defs.rs before the 14.1.0 \
             release, and who wrote it? Was it Andrew Gallant in 2023?",
        );
        assert_eq!(n.values.paths, ["crates/core/flags/defs.rs"]);
        assert_eq!(n.values.tags, ["14.1.0"]);
        assert_eq!(n.values.committers, ["Andrew Gallant"]);
        assert_eq!(n.years, ["2023"]);
        let n = named(&values(), "Which pull requests did laanwj merge in 2022?");
        assert_eq!(n.values.mergers, ["laanwj"]);
    }

    #[test]
    fn a_person_is_named_as_who_opened_or_who_merged() {
        let mut v = values();
        v.openers.push("furszy".into());
        v.mergers.push("furszy".into());
        let n = named(&v, "Which of furszy's pull requests were merged in 2023?");
        assert_eq!(n.values.openers, ["furszy"]);
        assert!(n.values.mergers.is_empty());
        let n = named(
            &v,
            "Is there a pull request furszy merged rather than authored?",
        );
        assert_eq!(n.values.mergers, ["furszy"]);
        assert!(n.values.openers.is_empty());
        let n = named(&v, "Which pull requests were merged by furszy?");
        assert_eq!(n.values.mergers, ["furszy"]);
        assert!(n.values.openers.is_empty());
        let n = named(
            &v,
            "How many pull requests did furszy open, and which were opened by Sjors?",
        );
        assert_eq!(n.values.openers, ["Sjors", "furszy"]);
        assert!(n.values.mergers.is_empty());
        // Who reported or filed names an issue's opener, not a pull request's.
        for task in [
            "furszy reported that it hangs. Which pull request fixed it?",
            "Which pull request fixed the hang filed by furszy?",
        ] {
            let n = named(&v, task);
            assert!(n.values.openers.is_empty(), "{task}");
            assert_eq!(n.reporters, ["furszy"], "{task}");
        }
        let n = named(&v, "Which issues were opened by Sjors?");
        assert_eq!(n.reporters, ["Sjors"]);
    }

    #[test]
    fn a_state_is_named_before_the_items_or_by_what_was_not_done() {
        let v = values();
        let n = named(
            &v,
            "List the bug reports filed by Sjors that nobody has closed yet.",
        );
        assert_eq!(n.states, ["open"]);
        assert_eq!(n.values.labels, ["Bug"]);
        let n = named(&v, "What open feature requests did Sjors file?");
        assert_eq!(n.states, ["open"]);
        let n = named(&v, "How many closed pull requests carry the UI label?");
        assert_eq!(n.states, ["closed"]);
        // The one item looked for is not a list's state.
        let n = named(&v, "Which merged pull request fixed the crash on close?");
        assert!(n.states.is_empty());
    }

    #[test]
    fn a_whole_year_or_month_is_named_apart_from_bounded_dates() {
        let v = values();
        let n = named(&v, "Which pull requests were merged in October 2023?");
        assert_eq!(n.months, ["2023-10"]);
        assert!(!n.ranged);
        let n = named(&v, "How many issues were opened during 2021?");
        assert!(n.months.is_empty());
        assert!(!n.ranged && n.tallies);
        let n = named(&v, "Which commit last changed it before June of 2021?");
        assert_eq!(n.months, ["2021-06"]);
        assert!(n.ranged && n.tallies);
    }

    #[test]
    fn a_path_filters_commits_only_when_the_task_asks_about_its_changes() {
        let v = values();
        let asks = "Who last modified crates/core/flags/defs.rs?";
        assert_eq!(named(&v, asks).values.paths, ["crates/core/flags/defs.rs"]);
        let describes =
            "A crates/core/flags/defs.rs saved with a BOM broke. Which commit fixed it?";
        assert!(named(&v, describes).values.paths.is_empty());
        let commits_to = "What was the most recent commit to crates/core/flags/defs.rs?";
        assert_eq!(
            named(&v, commits_to).values.paths,
            ["crates/core/flags/defs.rs"]
        );
    }

    #[test]
    fn words_that_only_describe_are_not_filters() {
        let mut v = values();
        v.labels.push("good first issue".into());
        v.labels.push("macOS".into());
        // A label's word in the description, a tracker word, a state of the item looked for,
        // a person who only asked.
        for task in [
            "I created a wallet whose name is an ellipsis. Which issue reports this?",
            "On macOS, copying an address logs a warning. Which issue reports this?",
            "Which pull request resolved gui issue #1?",
            "Which merged pull request makes it quit with an error on stray words?",
            "Sjors asked for a QR code. Which PR did it, and who approved it?",
        ] {
            let n = named(&v, task);
            assert!(n.values.labels.is_empty(), "{task}: {n:?}");
            assert!(n.states.is_empty(), "{task}: {n:?}");
            assert!(n.values.openers.is_empty(), "{task}: {n:?}");
        }
    }

    #[test]
    fn names_of_code_are_those_in_backticks_snake_case_or_camel_case() {
        let n = named(
            &values(),
            "Which file defines `OverrideBuilder`, and where is is_readable_stdin() called? Not GitHub.",
        );
        assert_eq!(
            n.symbols,
            ["OverrideBuilder", "is_readable_stdin", "GitHub"]
        );
    }

    #[test]
    fn a_yes_or_no_question_is_one_that_starts_with_a_verb() {
        assert!(asks_yes_or_no(
            "The FAQ says the limit is 10 MB. Is 10 MB still the default in the code? Which file?"
        ));
        assert!(asks_yes_or_no("Going by the backup, is #567 closed now?"));
        assert!(asks_yes_or_no(
            "GUIDE.md says so. Does the code agree? Point to the file."
        ));
        assert!(!asks_yes_or_no(
            "Which pull request fixed it, and who approved it?"
        ));
        assert!(!asks_yes_or_no("What is the default, and where is it set?"));
        // A statement that starts with a verb is not a question.
        assert!(!asks_yes_or_no(
            "Is set in config.rs. Which release had it?"
        ));
        assert!(asks_yes_or_no("Is the limit set in config.rs still?"));
    }

    #[test]
    fn a_task_asks_where_a_value_is_set_in_its_own_words() {
        assert!(asks_where_set(
            "What is the default capacity of the line buffer, and which file defines it?"
        ));
        assert!(asks_where_set(
            "How big is the cache, and where does that number come from?"
        ));
        assert!(!asks_where_set("Which pull request fixed the crash?"));
        assert!(!asks_where_set("Who reset the settings file last?"));
    }
}
