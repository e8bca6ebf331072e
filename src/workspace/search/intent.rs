//! What kind of item a query asks for, when it says so ("which commit …", "is there an issue
//! or pull request …"): search leans to that kind, and the agent's first search keeps to it.
//! English only: a query in another language is ranked by its words alone.

use super::Kind;

/// Verbs that, after "where" in the same sentence ("where is it documented that …", "where
/// is the walker implemented"), say the answer is a document or code.
const WHERE_VERBS: [(&[&str], Kind); 2] = [
    (&["documented", "explained", "described"], Kind::Doc),
    (&["implemented", "defined", "declared"], Kind::Code),
];

/// How far after "where" its verb may come ("where is the list of named presets … defined").
const WHERE_REACH: usize = 16;

/// Verbs that, after "where", say the question is about something that happened to an issue,
/// a pull request or a commit ("where is the crash reported"), so it leans to no kind.
const WHERE_HAPPENED: [&str; 7] = [
    "reported",
    "discussed",
    "tracked",
    "fixed",
    "merged",
    "mentioned",
    "raised",
];

/// Words that, right after a "where" opening a question, make it ask about the tree as it is
/// now ("where is the table of file types", "where does the project say …"): its answer is
/// code or a document far more often than an issue, a pull request or a commit, which are
/// things that happened ("where was it reported", "where in the history").
const WHERE_NOW: [&str; 8] = ["is", "are", "does", "do", "can", "should", "would", "will"];

/// The kinds of item a question asks for: the noun right after "which", "what" or "is there"
/// (past an article and one adjective: "which merged pull request"), and a second one joined
/// by "or" ("an issue or pull request"); else the noun an imperative names ("point to the
/// file"); else the noun of "the commit that …" ("the file where …"); else what "where is …
/// documented" or "where is … implemented" asks for.
pub fn asked_kinds(task: &str) -> Vec<Kind> {
    const KINDS: [(&[&str], Kind); 5] = [
        (&["issue", "issues", "bug report", "report"], Kind::Issue),
        (&["pull request", "pull requests", "pr", "prs"], Kind::Pr),
        (&["commit", "commits"], Kind::Commit),
        (
            &[
                "document",
                "documents",
                "doc",
                "docs",
                "guide",
                "readme",
                "readmes",
                "changelog",
                "man page",
                "manual",
            ],
            Kind::Doc,
        ),
        (
            &[
                "source file",
                "source files",
                "file",
                "files",
                "function",
                "module",
            ],
            Kind::Code,
        ),
    ];
    let lower = task.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    // The kind named at `at` (or one word later), and where its name ends.
    let kind_at = |at: usize| -> Option<(Kind, usize)> {
        let mut at = at;
        while words
            .get(at)
            .is_some_and(|w| matches!(*w, "a" | "an" | "the"))
        {
            at += 1;
        }
        for start in [at, at + 1] {
            for (names, kind) in KINDS {
                for n in names {
                    let parts: Vec<&str> = n.split(' ').collect();
                    if words.get(start..start + parts.len()) == Some(parts.as_slice()) {
                        return Some((kind, start + parts.len()));
                    }
                }
            }
        }
        None
    };
    for (i, w) in words.iter().enumerate() {
        // "where is the issue about …", "where was the report that …": the noun after the
        // verb, as after "which".
        let after = match *w {
            "which" | "what" | "there" => i + 1,
            "where"
                if words
                    .get(i + 1)
                    .is_some_and(|v| matches!(*v, "is" | "are" | "was" | "were")) =>
            {
                i + 2
            }
            _ => continue,
        };
        if let Some((kind, end)) = kind_at(after) {
            let mut kinds = vec![kind];
            if words.get(end) == Some(&"or") {
                if let Some((other, _)) = kind_at(end + 1) {
                    if other != kind {
                        kinds.push(other);
                    }
                }
            }
            return kinds;
        }
    }
    // "Point to the file.", "Name the file.": the noun an imperative asks for, after its
    // article (the task that checks a document against the code asks for the file so).
    for (i, w) in words.iter().enumerate() {
        let after = match (*w, words.get(i + 1)) {
            ("point", Some(&"to")) => i + 2,
            ("name" | "give" | "cite", _) => i + 1,
            _ => continue,
        };
        if words.get(after) == Some(&"the") {
            if let Some((kind, _)) = kind_at(after) {
                return vec![kind];
            }
        }
    }
    // "the commit that …": the article is needed (a bare "commit that" is a verb).
    for (i, w) in words.iter().enumerate() {
        if *w != "the" {
            continue;
        }
        if let Some((kind, end)) = kind_at(i) {
            if words
                .get(end)
                .is_some_and(|w| matches!(*w, "that" | "which" | "where"))
            {
                return vec![kind];
            }
        }
    }
    // "where … documented": within one sentence, so "Where? It is documented" is not it.
    for sentence in lower.split(['.', '?', '!', ';']) {
        let words: Vec<&str> = sentence
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        for (i, w) in words.iter().enumerate() {
            if *w != "where" {
                continue;
            }
            for verb in words.iter().skip(i + 1).take(WHERE_REACH) {
                for (verbs, kind) in WHERE_VERBS {
                    if verbs.contains(verb) {
                        return vec![kind];
                    }
                }
            }
        }
    }
    Vec::new()
}

/// The kinds a query leans to: those it asks for ([`asked_kinds`]); else, for a question that
/// opens "where is …" or "where does …" with no verb that settles it, code and documents.
/// Search leans to these by fusing their ranking with the ranking over all kinds, so an
/// answer of another kind still ranks; the agent's first search, which keeps to the kinds it
/// is given, takes only [`asked_kinds`].
pub fn leaned_kinds(task: &str) -> Vec<Kind> {
    let asked = asked_kinds(task);
    if !asked.is_empty() {
        return asked;
    }
    let lower = task.to_lowercase();
    for sentence in lower.split(['.', '?', '!', ';']) {
        let mut words = sentence
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty());
        // Only where the sentence opens with it: "the box where you type" is not a question.
        if words.next() == Some("where")
            && words.next().is_some_and(|w| WHERE_NOW.contains(&w))
            && !words.take(WHERE_REACH).any(|w| WHERE_HAPPENED.contains(&w))
        {
            return vec![Kind::Code, Kind::Doc];
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_that_names_a_kind_asks_for_that_kind() {
        let kinds = |t: &str| -> Vec<&str> { asked_kinds(t).iter().map(|k| k.as_str()).collect() };
        assert_eq!(kinds("Which commit fixed the hang?"), ["commit"]);
        assert_eq!(
            kinds("Which merged pull request makes it quit with an error?"),
            ["pr"]
        );
        assert_eq!(
            kinds("The file is written without a suffix. Is there an issue or pull request about this?"),
            ["issue", "pr"]
        );
        assert_eq!(kinds("Which source file walks the regex?"), ["code"]);
        // A README is a document (fresh2-doc-03 and -05: "Which crate README …" leaned to
        // nothing, and the crate's lib.rs came first).
        assert_eq!(
            kinds("Which crate README describes a low-level interface for matchers?"),
            ["doc"]
        );
        assert_eq!(
            kinds("Which README tells people to use the bindings?"),
            ["doc"]
        );
        assert_eq!(kinds("Which man page lists the flags?"), ["doc"]);
        // The thing asked for, not a thing named after it.
        assert_eq!(
            kinds("Which commit dropped the ag ignore file?"),
            ["commit"]
        );
        // Named, but not asked for.
        assert!(
            kinds("Where does the project say whether agents may open pull requests?").is_empty()
        );
        assert!(kinds("how does the walker skip hidden files").is_empty());
    }

    /// Issue 18 names these phrasings beside "which …": "the commit that …", "where is …
    /// implemented".
    #[test]
    fn the_kind_before_that_and_where_it_is_documented_or_implemented_ask_for_a_kind() {
        let kinds = |t: &str| -> Vec<&str> { asked_kinds(t).iter().map(|k| k.as_str()).collect() };
        assert_eq!(
            kinds("Find the commit that stopped reading .agignore"),
            ["commit"]
        );
        assert_eq!(
            kinds("the merged pull request which fixed the crash"),
            ["pr"]
        );
        assert_eq!(
            kinds("Show me the file where sizes like 10M are parsed"),
            ["code"]
        );
        assert_eq!(
            kinds("Where is it documented that -C1 -A2 changed meaning in 14.0?"),
            ["doc"]
        );
        assert_eq!(kinds("where is the hyperlink alias list defined"), ["code"]);
        // The noun must be followed by a relative word, and "where" by its verb in the same
        // sentence.
        assert!(kinds("The file is written without a suffix").is_empty());
        assert!(kinds("commit that change after review").is_empty());
        assert!(kinds("Where did it go? It was described in #12").is_empty());
        assert!(kinds("where does the walker skip hidden files").is_empty());
    }

    /// A task that checks a document against the code ends "Point to the file." or "Name
    /// the file.": it asks for code, not for the commit or document whose words match the claim.
    #[test]
    fn an_imperative_asks_for_the_kind_it_names() {
        let kinds = |t: &str| -> Vec<&str> { asked_kinds(t).iter().map(|k| k.as_str()).collect() };
        assert_eq!(
            kinds("GUIDE.md says it reads no config file. Does the code agree? Point to the file."),
            ["code"]
        );
        assert_eq!(kinds("Does the code agree? Name the file."), ["code"]);
        assert_eq!(kinds("Give the commit, and who made it."), ["commit"]);
        // A noun, not a verb; an imperative of no kind.
        assert!(kinds("The file name is the same. Give the reason.").is_empty());
    }

    /// Issue 18: "Where is the list of named presets for clickable result links" ranked the
    /// file second, under a commit; a question about where something is now leans to code and
    /// documents, and one about where something happened does not.
    #[test]
    fn a_question_opening_where_is_leans_to_code_and_documents() {
        let leans = |t: &str| -> Vec<&str> { leaned_kinds(t).iter().map(|k| k.as_str()).collect() };
        assert_eq!(
            leans("Where is the built-in table that maps language names to filename globs?"),
            ["code", "doc"]
        );
        assert_eq!(
            leans("Where does the project say whether agents may open pull requests?"),
            ["code", "doc"]
        );
        assert_eq!(
            leans("I read about it once. where are the presets for editor links"),
            ["code", "doc"]
        );
        // What it asks for, when it says so, wins.
        assert_eq!(
            leans("Where is it documented that -C1 -A2 changed?"),
            ["doc"]
        );
        assert_eq!(leans("Which commit fixed the hang?"), ["commit"]);
        // A kind named after "where is" is asked for (review of issue 18's lean).
        assert_eq!(
            leans("Where is the issue about the peers table freezing?"),
            ["issue"]
        );
        assert_eq!(leans("Where is the PR for the dark theme?"), ["pr"]);
        assert_eq!(
            leans("Where was the bug report that the GUI hangs?"),
            ["issue"]
        );
        // Something that happened leans nowhere, whatever the tense.
        assert!(leans("Where is the crash on startup reported?").is_empty());
        assert!(leans("Where are the wallet migration problems discussed?").is_empty());
        // Past events, a relative "where", and no "where" at all lean nowhere.
        assert!(leans("Where was it reported that the wallet fails to unlock?").is_empty());
        assert!(leans("Where did the GUI stop assuming debug.log?").is_empty());
        assert!(leans("The input box where you type the amount is too narrow").is_empty());
        assert!(leans("how does the walker skip hidden files").is_empty());
        // The agent's first search keeps to asked kinds only: a lean is not a filter.
        assert!(asked_kinds("Where is the built-in table of file types?").is_empty());
    }
}
