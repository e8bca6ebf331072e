//! The `burrow` command line: one module per command, each a shell over the core (`src/app`
//! and the library), printing what it returns.

pub mod ask;
pub mod bench;
pub mod chat;
pub mod embed;
pub mod eval;
pub mod mcp;
pub mod models;
pub mod runs;
pub mod serve;
pub mod template;
pub mod workspace;

/// The error and its causes, each once: errors that show their source in their own message
/// (`path: No such file or directory`) would otherwise print it twice.
pub fn report(e: &anyhow::Error) -> String {
    let mut out = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !out.ends_with(&cause) {
            out.push_str(": ");
            out.push_str(&cause);
        }
    }
    out
}

/// `s` as a terminal shows it and does nothing else with it: the workspace's text (a commit
/// message, an issue's title, a file name) can hold escape sequences that clear the screen,
/// set the window title, write the clipboard (OSC 52) or make a link, a carriage return that
/// overwrites the line, or a bidi control that reverses it. Each such character is written out
/// visibly (`\x1b`, `\u{202e}`); line ends and tabs stay. The CLI's own colours are added after.
pub fn term(s: &str) -> std::borrow::Cow<'_, str> {
    fn unsafe_char(c: char) -> bool {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    }
    if !s.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            // A CR LF is a line end; a CR alone went back over the line.
            '\r' if chars.peek() == Some(&'\n') => {}
            c if unsafe_char(c) => {
                if (c as u32) < 0x100 {
                    out.push_str(&format!("\\x{:02x}", c as u32));
                } else {
                    out.push_str(&format!("\\u{{{:x}}}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `term` for a field shown on one line (a title, a name, a path, a task): its line ends are
/// spaces.
pub fn term_line(s: &str) -> String {
    term(s).replace(['\n', '\r'], " ")
}

/// What a final answer rests on, each on a line under it: the items it cites (which the run
/// saw, as the app links them) and what its text names that the run never saw. A small
/// model's answer text can be a word copied from what it read ("Words"); its citation is
/// what the run found, and without these lines the CLI showed the text alone.
pub fn answer_sources(step: &burrow::agent::record::StepRecord) -> Vec<String> {
    let mut out = Vec::new();
    if !step.citations.is_empty() {
        let cited: Vec<String> = step
            .citations
            .iter()
            .map(|c| term_line(&c.cite()))
            .collect();
        out.push(format!("sources: {}", cited.join(", ")));
    }
    if !step.unseen.is_empty() {
        out.push(format!(
            "named, never seen by this run: {}",
            term_line(&step.unseen.join(", "))
        ));
    }
    out
}

/// Has the app's searches rank by meaning too, unless `words_only`, saying on stderr why they
/// rank by words only where they do (`ask`, `eval` and `mcp` take the same two flags).
pub fn search_by_meaning(
    app: &burrow::app::App,
    words_only: bool,
    embedding_model: Option<&str>,
) -> anyhow::Result<()> {
    if !words_only {
        if let Some(why) = app.search_by_meaning(embedding_model)? {
            eprintln!("searching by words only: {why}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use burrow::agent::record::StepRecord;
    use burrow::tools::Locator;

    #[test]
    fn an_answer_is_shown_with_what_it_cites_and_what_it_names_unseen() {
        let step = StepRecord {
            final_answer: Some("Words".into()),
            citations: vec![
                Locator::file("main", "src/workspace/search/mod.rs", Some(107)),
                Locator::issue_or_pr("o/gui", 828, true),
                Locator::commit("main", "f5cb670aaaaaaaaaaaaa"),
            ],
            unseen: vec!["#185".into()],
            ..StepRecord::default()
        };
        assert_eq!(
            answer_sources(&step),
            [
                "sources: main:src/workspace/search/mod.rs:107, o/gui#828, main@f5cb670aaa",
                "named, never seen by this run: #185",
            ]
        );
        assert!(answer_sources(&StepRecord::default()).is_empty());
    }
}
