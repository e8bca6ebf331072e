//! What kind of item a query asks for, when it says so ("which commit …", "is there an issue
//! or pull request …"): search leans to that kind, and the agent's first search keeps to it.
//! English only: a query in another language is ranked by its words alone.

use super::Kind;

/// The kinds of item a question asks for: the noun right after "which", "what" or "is there"
/// (past an article and one adjective: "which merged pull request"), and a second one joined
/// by "or" ("an issue or pull request").
pub fn asked_kinds(task: &str) -> Vec<Kind> {
    const KINDS: [(&[&str], Kind); 5] = [
        (&["issue", "issues", "bug report", "report"], Kind::Issue),
        (&["pull request", "pull requests", "pr", "prs"], Kind::Pr),
        (&["commit", "commits"], Kind::Commit),
        (
            &["document", "documents", "doc", "docs", "guide"],
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
        if !matches!(*w, "which" | "what" | "there") {
            continue;
        }
        if let Some((kind, end)) = kind_at(i + 1) {
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
}
