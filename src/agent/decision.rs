//! What a step decided, carried out: a final answer (refused too early, or while the plan is
//! open) or a tool call (through the hooks and the loop guard); then the step is recorded with
//! its observation, kept, and replayed in the next prompt.

use std::sync::OnceLock;

use regex::Regex;

use super::events::{AgentError, AgentEvent};
use super::hooks::ToolVerdict;
use super::prompt::Turn;
use super::protocol::{Action, FinalStatus};
use super::record::{ActionRecord, Origin, RunStatus, StepRecord};
use super::run::{Agent, Next};
use super::state::{plan_text, RunState};
use crate::notes::{self, GUIDANCE};
use crate::tools::locator::{mentions, same_repo, Mention};
use crate::tools::Locator;

/// How a call's observation is shown. The model's own calls take the default; Burrow's
/// opening of a leading match shows its head (every token of it is prefilled) and, when the
/// model is then asked about it apart (see `Agent::check`), no note to answer with it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct CallShape {
    /// A shorter bound on the observation than the model's own calls get.
    pub cap: Option<usize>,
    pub checked: bool,
}

impl Agent<'_> {
    /// A final answer: taken, or refused with the reason as the observation. The plan refuses
    /// it only over items the model could still act on, and never twice in a row: a plan
    /// must not keep a run from its answer.
    pub(super) fn answer(
        &self,
        state: &mut RunState,
        mut record: StepRecord,
        mut notes: Vec<String>,
        (answer, status, citations): (String, FinalStatus, Vec<String>),
        allow_final: bool,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<Next, AgentError> {
        let refusal = if !allow_final {
            Some((
                format!(
                    "The final answer was refused: search the workspace first. This was step \
                     {} of at least {} before answering.",
                    record.index + 1,
                    self.config.min_steps
                ),
                "final answer refused: too early".to_string(),
            ))
        } else {
            let open = state.plan.actionable();
            let last = record.index + 1 >= state.max_steps;
            (self.config.require_plan_done
                && status == FinalStatus::Completed
                && !open.is_empty()
                && !state.last_answer_refused()
                && !last)
                .then(|| {
                    let list: Vec<String> = open
                        .iter()
                        .map(|i| format!("{} ({}: {})", i.id, i.status.as_str(), i.title))
                        .collect();
                    (
                        format!(
                            "The final answer was refused: the plan still has open items: {}. \
                             Finish them, or mark them completed or cancelled, then answer.",
                            list.join("; ")
                        ),
                        "final answer refused: the plan has open items".to_string(),
                    )
                })
        };
        if let Some((message, error)) = refusal {
            notes.push(message);
            record.final_answer = None;
            record.error = Some(error);
            record.answer_refused = true;
            let text = notes.join("\n");
            return self.finish_step(state, record, None, Some(text), on_event);
        }
        let observations: Vec<&str> = state
            .steps
            .iter()
            .filter_map(|s| s.observation.as_deref())
            .collect();
        let (seen_cited, _) = checked_citations(&state.seen(), &observations, &citations, "");
        let seen_cited: Vec<String> = seen_cited.iter().map(Locator::cite).collect();
        let answer = without_guidance(&answer, &seen_cited);
        if let Some(reason) = self
            .hooks
            .stop_reason(|h| h.on_final(&self.hook_context(state), &answer))
        {
            return Ok(Next::stopped_by_hook(reason));
        }
        (record.citations, record.unseen) =
            checked_citations(&state.seen(), &observations, &citations, &answer);
        let status = match status {
            FinalStatus::Completed => RunStatus::Succeeded,
            FinalStatus::Failed => RunStatus::Failed,
            FinalStatus::Blocked => RunStatus::Blocked,
        };
        record.final_answer = Some(answer.clone());
        record.ended = Some(status);
        self.finish_step(state, record, None, None, on_event)?;
        Ok(Next::End {
            status,
            answer: Some(answer),
            error: None,
        })
    }

    /// A tool call: asked of the hooks, run, and its result (with any notes) observed.
    pub(super) fn call(
        &self,
        state: &mut RunState,
        mut record: StepRecord,
        mut notes: Vec<String>,
        mut action: Action,
        how: CallShape,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<Next, AgentError> {
        let verdict = self
            .hooks
            .before_tool(&self.hook_context(state), &mut action);
        record.action = Some(ActionRecord {
            tool: action.tool.clone(),
            args: action.args.clone(),
        });
        match verdict {
            ToolVerdict::Allow | ToolVerdict::Rewrite(_) => {}
            ToolVerdict::Deny(message) => {
                record.error = Some(format!("denied: {message}"));
                let text = [notes, vec![message]].concat().join("\n");
                return self.finish_step(state, record, Some(&action), Some(text), on_event);
            }
            ToolVerdict::Stop(reason) => return Ok(Next::stopped_by_hook(reason)),
        }
        let acted = self.act(state, &action, how.cap, on_event);
        // One item opened (an issue, a file, a commit): small models otherwise open it again
        // and again instead of answering with it.
        // A match Burrow opened for a check is asked about apart (see `Agent::check`).
        if let ([item], true, false) = (acted.items.as_slice(), acted.opened, how.checked) {
            notes.push(notes::answer_if_it_answers(&item.cite()));
        }
        record.tool_ms = acted.tool_ms;
        record.error = acted.error;
        record.call_failed = acted.failed_for_good;
        record.repeated = acted.repeated;
        record.items = acted.items;
        if let Some(reason) = self
            .hooks
            .stop_reason(|h| h.after_tool(&self.hook_context(state), &action, &acted.text))
        {
            return Ok(Next::stopped_by_hook(reason));
        }
        let mut text = acted.text;
        if !notes.is_empty() {
            text = format!("{text}\n{}", notes.join("\n"));
        }
        self.finish_step(state, record, Some(&action), Some(text), on_event)
    }

    /// Records the step with its observation (an error when the record has one), keeps it,
    /// and adds its turn to the prompt.
    pub(super) fn finish_step(
        &self,
        state: &mut RunState,
        mut record: StepRecord,
        action: Option<&Action>,
        observation: Option<String>,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<Next, AgentError> {
        record.observation = observation;
        record.todos = state.plan.items().to_vec();
        if let (Some(store), Some(h)) = (self.store, &state.handle) {
            store.save_step(h, &record)?;
        }
        on_event(AgentEvent::StepFinished {
            step: Box::new(record.clone()),
        });
        // The toolbelt may have changed in this step: the observation shows the tools as
        // they are now.
        let specs = self.visible_specs(state);
        let observation = self.prompt.observation(
            &self.vars(&specs),
            record.observation.as_deref().unwrap_or(""),
            &plan_text(&state.plan),
        )?;
        // A route was written in its own conversation's format: the run's model reads it as
        // a step of its protocol.
        let output = match (&record.origin, action) {
            (Origin::Route, Some(a)) => self.config.protocol.write_call(&record.thought, a),
            _ => record.output.clone(),
        };
        state.turns.push(Turn {
            output,
            thought: record.thought.clone(),
            call: action.map(|a| (a.tool.clone(), a.args.clone())),
            observation,
        });
        let stop = self
            .hooks
            .stop_reason(|h| h.on_step(&self.hook_context(state), &record));
        state.steps.push(record);
        Ok(match stop {
            Some(reason) => Next::stopped_by_hook(reason),
            None => Next::Continue,
        })
    }
}

/// What follows the item a copied note says to cite, when the model went on after it in the
/// same sentence ("… and cite acme/app#918 - the wallet crashes on close"): its own words.
const AFTER_CITE: &str =
    r"(?i)\bcite\s+[^\s,;]*[#@:/][^\s,;]*?[.,;:]?(?:\s+[-–—:]+)?\s+(?P<rest>\S[^\n]*)$";

fn regex_of(
    pattern: &'static str,
    cell: &'static OnceLock<Option<Regex>>,
) -> Option<&'static Regex> {
    cell.get_or_init(|| Regex::new(pattern).ok()).as_ref()
}

/// The answer without what a small model copied from Burrow's own notes: the sentences that
/// repeat its guidance ("If one answers it, give the final answer now and cite …"), the
/// marks it puts where it cut a text ("[cut: 1200 of 1348 characters shown]", "[cut at line
/// …]") and those of a search's matches ("«search»es"). The default model answered so in 6 of 98 evaluation runs, and users read that as
/// the answer. What is left of it is the answer; where nothing is, the items it cites that
/// the run saw (`seen_citations`: that was all it said), and without those the text as
/// written (nothing is lost).
pub(super) fn without_guidance(answer: &str, seen_citations: &[String]) -> String {
    static AFTER: OnceLock<Option<Regex>> = OnceLock::new();
    let answer = notes::without_match_marks(answer);
    let text = match notes::cut_marks() {
        Some(re) => re.replace_all(&answer, "").into_owned(),
        None => answer.clone(),
    };
    let mut kept = String::new();
    let mut dropped = false;
    for sentence in sentences(&text) {
        let lower = sentence.trim_start().to_lowercase();
        if GUIDANCE.iter().any(|g| lower.starts_with(g)) {
            dropped = true;
            // The model's own words after the item the note named, in the same sentence.
            if let Some(rest) = regex_of(AFTER_CITE, &AFTER)
                .and_then(|re| re.captures(sentence.trim_end()))
                .and_then(|c| c.name("rest"))
                .filter(|r| {
                    let r = r.as_str().to_lowercase();
                    !GUIDANCE.iter().any(|g| r.starts_with(g))
                })
            {
                kept.push_str(rest.as_str());
                kept.push_str(&sentence[sentence.trim_end().len()..]);
                continue;
            }
            // Its line break is the next line's.
            let body = sentence.trim_end();
            if sentence[body.len()..].contains('\n') {
                let tail = kept.trim_end_matches([' ', '\t']).len();
                kept.truncate(tail);
                if !kept.is_empty() && !kept.ends_with('\n') {
                    kept.push('\n');
                }
            }
        } else {
            kept.push_str(sentence);
        }
    }
    if !dropped && text.len() == answer.len() {
        return answer.to_string();
    }
    let kept = kept.trim();
    if !kept.is_empty() {
        kept.to_string()
    } else if !seen_citations.is_empty() {
        seen_citations.join(", ")
    } else {
        answer.to_string()
    }
}

/// `text` in sentences, each with what follows it up to the next: a sentence ends at `.`, `!`
/// or `?` before white space (not the dot in `lib.rs`), or at a line's end.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let ends =
            c == '\n' || (matches!(c, '.' | '!' | '?') && next.is_none_or(char::is_whitespace));
        if ends {
            let mut end = i + c.len_utf8();
            while let Some(&(j, n)) = chars.peek() {
                if !n.is_whitespace() {
                    break;
                }
                end = j + n.len_utf8();
                chars.next();
            }
            out.push(&text[start..end]);
            start = end;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// The citations with those split inside an item's name joined again: a list read as text
/// (`Citations: a, b`) splits at commas, and a path with one (`docs/faq,en.md`), which the
/// grammar offered whole, was read as two items never seen.
fn rejoined(seen: &[Locator], citations: &[String]) -> Vec<String> {
    let is_cite = |c: &str| seen.iter().any(|l| l.cite() == c);
    let begins = |c: &str| seen.iter().any(|l| l.cite().starts_with(c));
    let mut out = Vec::new();
    let mut i = 0;
    while i < citations.len() {
        let mut c = citations[i].clone();
        i += 1;
        while !is_cite(&c) && i < citations.len() {
            let next = &citations[i];
            let Some(joined) = [format!("{c},{next}"), format!("{c}, {next}")]
                .into_iter()
                .find(|j| begins(j))
            else {
                break;
            };
            c = joined;
            i += 1;
        }
        out.push(c);
    }
    out
}

/// Whether citation `c`, written otherwise than `Locator::cite` writes it (without a grammar a
/// model cites as it likes), is item `l`: a file without its line; `#918`, `app#918` for
/// `acme/app#918`; a commit by a hash of another length; a path with `./`, without its
/// repository or with another line. Such citations were dropped and flagged as never seen.
fn cites(l: &Locator, c: &str) -> bool {
    let c = c.trim();
    // A repository named before the item is the item's (`bitcoin/bitcoin:src/qt/x.cpp` is not
    // the `src/qt/x.cpp` of bitcoin-core/gui the run saw); a path before a line is no name.
    if let Some(end) = c.find([':', '@', '#']).filter(|&e| e > 0) {
        let head = &c[..end];
        let a_path = mentions(head)
            .iter()
            .any(|m| matches!(m, Mention::Path(p) if p == head));
        if !a_path && !l.repo().is_some_and(|r| same_repo(r, head)) {
            return false;
        }
    }
    // A file cited without its line is the file at any line the run saw.
    if let Some(rest) = l.cite().strip_prefix(c) {
        if rest
            .strip_prefix(':')
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        {
            return true;
        }
    }
    // The item's repository, where the citation names it, then what names the item.
    let rest = l
        .repo()
        .and_then(|r| {
            let short = r.rsplit('/').next().unwrap_or(r);
            [r, short].into_iter().find_map(|name| {
                let head = c.get(..name.len())?;
                let after = c.get(name.len()..)?;
                (head.eq_ignore_ascii_case(name) && after.starts_with([':', '@', '#']))
                    .then(|| after.trim_start_matches([':', '@']))
            })
        })
        .unwrap_or(c);
    let named = mentions(rest);
    named.len() == 1 && l.is_named_by(&named[0])
}

/// The citations that name items the run saw (as the seen items), and what the answer names,
/// cited or in its text, that the run never saw. Under a grammar a citation is always one it
/// saw; without one, or in the text, a model may name anything. What the text names counts as
/// seen when an observation named it too (the `#277` an issue's body links, the files a commit
/// lists), though search never showed it as an item.
pub(super) fn checked_citations(
    seen: &[Locator],
    observations: &[&str],
    citations: &[String],
    answer: &str,
) -> (Vec<Locator>, Vec<String>) {
    let mut cited: Vec<Locator> = Vec::new();
    let mut unseen: Vec<String> = Vec::new();
    for c in &rejoined(seen, citations) {
        let found = seen
            .iter()
            .find(|l| l.cite() == *c)
            .or_else(|| seen.iter().find(|l| cites(l, c)));
        match found {
            Some(l) if !cited.contains(l) => cited.push(l.clone()),
            Some(_) => {}
            // A repository's name alone cites none of its items (it was taken for the first
            // file of it the run saw), and is no item the run never saw.
            None if seen
                .iter()
                .filter_map(Locator::repo)
                .any(|r| crate::tools::locator::same_repo(r, c)) => {}
            None => unseen.push(c.clone()),
        }
    }
    let mut named: Option<Vec<crate::tools::locator::Mention>> = None;
    let repos: Vec<&str> = seen.iter().filter_map(Locator::repo).collect();
    for m in mentions(answer) {
        if seen.iter().any(|l| l.is_named_by(&m)) || unseen.contains(&m.text()) {
            continue;
        }
        // `word#12` names an item only where the word is a repository the run saw ("C#12",
        // "ticket#12" are not items the answer invented).
        if let Mention::RepoNumber { repo, .. } = &m {
            if !repo.contains('/') && !repos.iter().any(|r| same_repo(r, repo)) {
                continue;
            }
        }
        let named =
            named.get_or_insert_with(|| observations.iter().flat_map(|o| mentions(o)).collect());
        if !named.iter().any(|n| n.names_same(&m, &repos)) {
            unseen.push(m.text());
        }
    }
    (cited, unseen)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file cited in another repository than any the run saw is not the file of
    /// the same path it saw (bitcoin/bitcoin's and bitcoin-core/gui's trees share paths).
    #[test]
    fn another_repositorys_file_is_not_the_file_seen() {
        let seen = vec![Locator::File {
            path: "src/qt/walletview.cpp".into(),
            line: Some(10),
            repo: Some("bitcoin-core/gui".into()),
        }];
        let c = "bitcoin/bitcoin:src/qt/walletview.cpp".to_string();
        let (cited, unseen) = checked_citations(&seen, &[], std::slice::from_ref(&c), "");
        assert_eq!(unseen, vec![c], "taken as {cited:?}");
    }

    /// Ordinary text with a `#` and digits after a word is no item: a C# project's
    /// "C#12" (the language version) is not an issue the answer invented.
    #[test]
    fn a_language_version_is_not_an_invented_item() {
        let seen = vec![Locator::Issue {
            number: 5,
            repo: Some("acme/app".into()),
        }];
        let answer = "The build needs C#12 for primary constructors (acme/app#5).";
        let (_, unseen) = checked_citations(&seen, &["acme/app#5 asks for C# 12"], &[], answer);
        assert!(unseen.is_empty(), "flagged as never seen: {unseen:?}");
    }

    /// The default model's answers in the evaluation's runs (11-28) that repeated Burrow's
    /// notes: users read "If one answers it, give the final answer now…" as the answer.
    #[test]
    fn an_answer_does_not_repeat_burrows_guidance() {
        let cite = |c: &str| vec![c.to_string()];
        assert_eq!(
            without_guidance(
                "The workspace's best match for the task is ripgrep@020c5453a5. If one answers \
                 it, give the final answer now and cite ripgrep@020c5453a5.",
                &cite("ripgrep@020c5453a5")
            ),
            "The workspace's best match for the task is ripgrep@020c5453a5."
        );
        assert_eq!(
            without_guidance(
                "There are 5 results for the query. If one answers it, answer and cite \
                 ripgrep:crates/ignore/src/lib.rs:8.",
                &cite("ripgrep:crates/ignore/src/lib.rs:8")
            ),
            "There are 5 results for the query."
        );
        assert_eq!(
            without_guidance(
                "The version of ripgrep used was compiled from source on commit [cut: 1200 of \
                 1348 characters shown]. If this answers the task, give the final answer now \
                 and cite ripgrep:README.md.",
                &cite("ripgrep:README.md")
            ),
            "The version of ripgrep used was compiled from source on commit."
        );
        // Nothing but guidance: the answer is what it cites.
        assert_eq!(
            without_guidance(
                "The workspace's best matches for the task. If one answers it, give the final \
                 answer now and cite bitcoin-core/gui#150.",
                &cite("bitcoin-core/gui#150")
            ),
            "bitcoin-core/gui#150"
        );
        assert_eq!(
            without_guidance(
                "If this answers the task, give the final answer now and cite o/gui#150.",
                &cite("o/gui#150")
            ),
            "o/gui#150"
        );
        // Its lines stay lines, where the guidance ended one or sat inside one.
        assert_eq!(
            without_guidance(
                "1. #918, the crash.\nThen give the final answer, citing o/gui#918.\n2. #919.",
                &cite("o/gui#918")
            ),
            "1. #918, the crash.\n2. #919."
        );
        assert_eq!(
            without_guidance("1. A. If one answers it, cite x.\n2. B.", &[]),
            "1. A.\n2. B."
        );
        // A sentence ends at a dot before white space, not at the dots of a path or version.
        assert_eq!(
            without_guidance(
                "Fixed in crates/ignore/src/dir.rs for v0.5.1. If this answers the task, give \
                 the final answer now and cite rg@7cefc55238.",
                &cite("rg@7cefc55238")
            ),
            "Fixed in crates/ignore/src/dir.rs for v0.5.1."
        );
        // An answer of its own is kept as written, even where it uses the notes' words
        // elsewhere than at a sentence's start, or says that nothing answers.
        for own in [
            "It finds the first match, then the next match after it.",
            "The best matches for the task are #918 (the crash) and #919 (its fix).",
            "None of the leading matches answers the task; #12 is the closest.",
            "Fixed in crates/ignore/src/dir.rs.\nSee #2690, v0.5.1 too.",
            // Not Burrow's mark without its closing bracket: nothing after it is cut.
            "The log says [cut: here and the rest of the line",
        ] {
            assert_eq!(without_guidance(own, &cite("o/gui#12")), own);
        }
        // Only guidance and nothing the run saw cited: the text stays rather than nothing.
        let only = "Then the next match.";
        assert_eq!(without_guidance(only, &[]), only);
    }

    /// The model's own words after a copied note's item are its answer; a note copied whole is
    /// not (found in review: the words after it were dropped with the note, and the answer
    /// became the bare citation); nor is a slice in its code a cut mark.
    #[test]
    fn what_follows_a_copied_note_and_code_like_a_cut_mark_are_kept() {
        let cite = vec!["acme/app#918".to_string()];
        assert_eq!(
            without_guidance(
                "If this answers the task, give the final answer now and cite acme/app#918 - the \
                 wallet crashes on close",
                &cite
            ),
            "the wallet crashes on close"
        );
        let next = format!("#918 crashes. {}", crate::notes::AFTER_SEARCH);
        assert_eq!(without_guidance(&next, &cite), "#918 crashes.");
        let code = "Take the window with `rows = data[cut: cut + n]`.";
        assert_eq!(without_guidance(code, &cite), code);
        assert_eq!(
            without_guidance("It is #918 [cut: 1200 of 1348 characters shown].", &cite),
            "It is #918."
        );
    }

    /// The answer is a model's text, anything at all: pieces of the notes, cut marks, dots,
    /// line breaks and characters of several bytes, in any order, never panic; what is left is
    /// never longer and never starts as Burrow's note, or is all the text, or (where the run
    /// saw what it cites) those citations.
    #[test]
    fn any_text_is_taken_apart_without_a_panic() {
        let pieces = [
            "If one answers it, cite x.",
            "[cut: ",
            "]",
            "[cut at line 3 of 9]",
            ".",
            " ",
            "\n",
            "é",
            "«",
            "日本",
            "a.rs",
            "Then the next match.",
            "?",
            "!",
            "\t",
            "then the next match",
        ];
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..5_000 {
            let mut text = String::new();
            for _ in 0..(seed % 9) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                text.push_str(pieces[(seed % pieces.len() as u64) as usize]);
            }
            let out = without_guidance(&text, &[]);
            assert!(out.len() <= text.len(), "{text:?} -> {out:?}");
            assert!(
                out == text || !out.to_lowercase().starts_with("if one answers it,"),
                "{text:?} -> {out:?}"
            );
            let cited = ["o/gui#12".to_string()];
            let out = without_guidance(&text, &cited);
            assert!(
                out == text
                    || out == cited[0]
                    || (out.len() <= text.len()
                        && !out.to_lowercase().starts_with("if one answers it,")),
                "{text:?} -> {out:?}"
            );
        }
    }

    /// Issue 22's eval flagged `#277` (linked in the issue the run opened), a hash quoted in a
    /// pull request's review and the files a commit lists as "never seen": the run saw each
    /// one, in an observation's text.
    #[test]
    fn match_marks_copied_from_snippets_are_taken_out_of_an_answer() {
        let cite = vec!["o/r#1".to_string()];
        assert_eq!(
            without_guidance("It «search»es the «current» «directory».", &cite),
            "It searches the current directory."
        );
        assert_eq!(
            without_guidance("The flag is set by HAS_«WALK»_DIR.", &cite),
            "The flag is set by HAS_WALK_DIR."
        );
    }

    #[test]
    fn what_an_observation_named_is_not_flagged_as_unseen() {
        let seen = [
            Locator::issue_or_pr("o/gui", 210, false),
            Locator::commit("rg", "b9c774937fc285e6668be9823c4bf231a61fc4a8"),
        ];
        let observations = [
            "Issue #210 in o/gui: crash\nSee #277 for the log.",
            "Commit b9c774937f\nFixes #2690.\nFiles: crates/ignore/src/dir.rs, CHANGELOG.md",
        ];
        let answer = "Issue #210, like #277 and #2690, fixed by b9c774937f in \
                      crates/ignore/src/dir.rs and CHANGELOG.md; see also #27 and src/other.rs.";
        let (cited, unseen) =
            checked_citations(&seen, &observations, &["o/gui#210".into()], answer);
        assert_eq!(cited, [seen[0].clone()]);
        assert_eq!(unseen, ["#27", "src/other.rs"]);
        // Without the observations, the links were flagged.
        let (_, before) = checked_citations(&seen, &[], &[], answer);
        assert!(before.contains(&"#277".to_string()), "{before:?}");
        assert!(
            before.contains(&"crates/ignore/src/dir.rs".to_string()),
            "{before:?}"
        );
    }
}
