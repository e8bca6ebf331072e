//! A hop after an opened file: the model follows one of the names the opened lines use to
//! where it is defined, when the task asks where a value is set or defined. Search ranks the
//! lines that use a default (`if limit <= DEFAULT_BUFFER_CAPACITY`) above the line that sets
//! it, and Qwen2.5-Coder-0.5B answered with the using file (issue 56's `default` tasks, 0 of
//! 6). Choosing one of the names the file shows is a job it can do; the grammar offers only
//! those names, so it cannot invent one, and the call is its own step in the trace.

use serde_json::{json, Value};

use super::decision::CallShape;
use super::events::{AgentError, AgentEvent};
use super::ground::asks_where_set;
use super::protocol::Action;
use super::record::Origin;
use super::run::{Agent, Next};
use super::state::RunState;
use crate::llm::engine::CancelToken;
use crate::notes;
use crate::tools::Locator;

/// The tool a hop calls.
const FIND_SYMBOL: &str = "find_symbol";

/// Names offered at most, in the order the opened lines use them.
const MAX_NAMES: usize = 30;

/// Tokens a hop may take: `{"tool":"find_symbol","args":{"name":"…"}}` is about 20.
const FOLLOW_TOKENS: usize = 64;

const FOLLOW_SYSTEM: &str = "A file was opened for a task about a code workspace. \
Reply with one JSON object. If the task asks for a value or a definition that one of the \
names the file uses stands for, choose that name: \"find_symbol\" finds where it is defined. \
If the opened lines already answer the task, reply {\"tool\":\"answer\"}.";

/// Worked hops: the model copies their shape. The names are made up.
const EXAMPLES: &[(&str, &str)] = &[
    (
        "What is the default timeout of the HTTP client, and where is it set?\n\
         Names the opened lines of src/client.rs use: retry_count, DEFAULT_TIMEOUT, \
         build_request, HttpClient",
        r#"{"tool":"find_symbol","args":{"name":"DEFAULT_TIMEOUT"}}"#,
    ),
    (
        "Where is the maximum cache size defined?\n\
         Names the opened lines of src/store.rs use: open_store, MAX_CACHE_BYTES, CacheEntry",
        r#"{"tool":"find_symbol","args":{"name":"MAX_CACHE_BYTES"}}"#,
    ),
    (
        "Which file sets the default log level?\n\
         Names the opened lines of src/log.rs use: LogLevel, init_logging, level_from_env",
        r#"{"tool":"answer"}"#,
    ),
];

impl Agent<'_> {
    /// The names a hop may follow, when one is due: routes are on (a hop is part of the same
    /// plan), the task asks where a value is set or defined, `find_symbol` is active, no hop
    /// was asked for yet, and Burrow has just opened a file (checked and accepted, where
    /// checks are on) with room left to follow a name and answer.
    pub(super) fn follow_due(&self, state: &RunState) -> Option<Vec<String>> {
        if !self.routes_first(state)
            || state.followed
            || !asks_where_set(&state.task)
            || !state.active.iter().any(|t| t == FIND_SYMBOL)
            || state.steps.len() + 2 > state.max_steps
        {
            return None;
        }
        let opening = match state.steps.as_slice() {
            [.., open, check] if check.check().is_some_and(|c| c.answers) => open,
            [.., open] => open,
            [] => return None,
        };
        let file = opening.origin == Origin::Open
            && opening.error.is_none()
            && matches!(opening.items.first(), Some(Locator::File { .. }));
        if !file {
            return None;
        }
        let names = names_for(&state.task, names_used(opening.observation.as_deref()?));
        (!names.is_empty()).then_some(names)
    }

    /// The model chooses a name of the opened lines to follow to its definition, or to answer
    /// from them; a chosen name is looked up, as the run's step.
    pub(super) fn follow(
        &self,
        state: &mut RunState,
        names: Vec<String>,
        cancel: &CancelToken,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<Next, AgentError> {
        state.followed = true;
        let path = state
            .steps
            .iter()
            .rev()
            .find(|s| s.origin == Origin::Open)
            .and_then(|s| s.items.first())
            .map(Locator::cite)
            .unwrap_or_default();
        let ask = format!(
            "Task: {}\nNames the opened lines of {path} use: {}",
            state.task,
            names.join(", ")
        );
        let Some(mut record) = self.choose(
            state,
            (FOLLOW_SYSTEM, EXAMPLES),
            ask,
            follow_schema(&names),
            FOLLOW_TOKENS,
            cancel,
            on_event,
        )?
        else {
            return Ok(Next::cancelled());
        };
        let Some(name) = read_follow(&record.output, &names) else {
            // The opened lines answer: the model's next step is its own, as after any opening.
            return Ok(Next::Continue);
        };
        record.thought = format!("The opened lines use `{name}`; I look up where it is defined.");
        let mut args = serde_json::Map::new();
        args.insert("name".into(), json!(name));
        let action = Action {
            tool: FIND_SYMBOL.to_string(),
            args,
        };
        self.call(
            state,
            record,
            vec![notes::AFTER_ROUTE.to_string()],
            action,
            CallShape::default(),
            on_event,
        )
    }
}

/// A hop: the answer, or `find_symbol` with one of `names`.
fn follow_schema(names: &[String]) -> Value {
    json!({"oneOf": [
        {"type": "object", "properties": {"tool": {"const": "answer"}}, "required": ["tool"]},
        {
            "type": "object",
            "properties": {
                "tool": {"const": FIND_SYMBOL},
                "args": {
                    "type": "object",
                    "properties": {"name": {"enum": names}},
                    "required": ["name"],
                },
            },
            "required": ["tool", "args"],
        },
    ]})
}

/// The name a hop's output follows, when it is one of `names`.
fn read_follow(output: &str, names: &[String]) -> Option<String> {
    let v: Value = serde_json::from_str(output.trim()).ok()?;
    if v.get("tool")?.as_str()? != FIND_SYMBOL {
        return None;
    }
    let name = v.get("args")?.get("name")?.as_str()?;
    names.iter().find(|n| *n == name).cloned()
}

/// The names of code an opened file's lines use and do not define themselves: identifiers of
/// two words or more (`DEFAULT_BUFFER_CAPACITY`, `heap_limit`, `LineBuffer`), in the order
/// first used. The observation's first line (the path and line numbers) is not code.
pub(super) fn names_used(observation: &str) -> Vec<String> {
    let mut code: Vec<&str> = Vec::new();
    for line in observation.lines().skip(1) {
        // `  225  code`: the line number read_file writes before each line.
        let line = line
            .trim_start()
            .trim_start_matches(|c: char| c.is_ascii_digit());
        // Where the observation was cut, the text before the mark ends mid-word
        // (`args.regex_size_li`): that word is no name.
        if let Some(mark) = crate::notes::cut_marks().and_then(|re| re.find(line)) {
            let before = &line[..mark.start()];
            if !before.trim().is_empty() {
                code.push(before);
            }
            if let Some(last) = code.last_mut() {
                *last = last.trim_end_matches(|c: char| c.is_alphanumeric() || c == '_');
            }
            break;
        }
        code.push(line);
    }
    let code = code.join("\n");
    let mut names: Vec<String> = Vec::new();
    for word in code.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        let compound = word.len() >= 4
            && word.len() <= 60
            && !word.starts_with(|c: char| c.is_ascii_digit())
            && (word.trim_matches('_').contains('_')
                || word
                    .chars()
                    .zip(word.chars().skip(1))
                    .any(|(a, b)| a.is_lowercase() && b.is_uppercase()));
        if compound && !names.iter().any(|n| n == word) && !defines(&code, word) {
            names.push(word.to_string());
        }
        if names.len() >= MAX_NAMES {
            break;
        }
    }
    names
}

/// Of `names`, those that share a word with the task (`DEFAULT_BUFFER_CAPACITY` for "the
/// default capacity of the line buffer"), most words shared first. Offered every name in the
/// order the lines use them, Qwen2.5-Coder-0.5B chose the first (`line_terminator`).
fn names_for(task: &str, names: Vec<String>) -> Vec<String> {
    let stem = |w: &str| w.strip_suffix('s').unwrap_or(w).to_string();
    let task_words: Vec<String> = task
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() >= 3)
        .map(|w| stem(&w.to_lowercase()))
        .collect();
    let mut scored: Vec<(usize, String)> = names
        .into_iter()
        .map(|name| {
            let shared = name_words(&name)
                .iter()
                .filter(|w| w.len() >= 3 && task_words.contains(&stem(w)))
                .count();
            (shared, name)
        })
        .filter(|(shared, _)| *shared > 0)
        .collect();
    // Stable: among equals, the order the lines use them.
    scored.sort_by_key(|(shared, _)| std::cmp::Reverse(*shared));
    scored.into_iter().map(|(_, name)| name).collect()
}

/// The lowercased words of a name: `DEFAULT_BUFFER_CAPACITY`, `LineBufferReader`.
fn name_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    for part in name.split('_').filter(|p| !p.is_empty()) {
        let mut word = String::new();
        let mut prev_lower = false;
        for c in part.chars() {
            if c.is_uppercase() && prev_lower && !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            word.extend(c.to_lowercase());
        }
        if !word.is_empty() {
            words.push(word);
        }
    }
    words
}

/// Whether `code` holds the definition of `name` (a `const`, `fn`, `struct` … line).
fn defines(code: &str, name: &str) -> bool {
    code.lines().any(|l| {
        let mut words = l.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '!'));
        let mut last = "";
        for w in words.by_ref() {
            if w.is_empty() {
                continue;
            }
            if w == name && crate::tools::workspace::is_definer(last) {
                return true;
            }
            last = w;
        }
        false
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::spaced;

    const OPENED: &str = "crates/searcher/src/searcher/mod.rs (lines 220-229 of 1088):
220          builder
221              .line_terminator(self.line_term.as_byte())
224          if let Some(limit) = self.heap_limit {
225              let (capacity, additional) = if limit <= DEFAULT_BUFFER_CAPACITY {
226                  (limit, 0)
227              } else {
228                  (DEFAULT_BUFFER_CAPACITY, limit - DEFAULT_BUFFER_CAPACITY)
229  fn build_reader(x: LineBufferReader) {}";

    #[test]
    fn the_names_offered_are_those_the_lines_use_and_do_not_define() {
        assert_eq!(
            names_used(OPENED),
            [
                "line_terminator",
                "line_term",
                "as_byte",
                "heap_limit",
                "DEFAULT_BUFFER_CAPACITY",
                "LineBufferReader"
            ]
        );
    }

    #[test]
    fn a_word_cut_short_with_the_observation_is_not_offered() {
        let cut = "a.rs (lines 1-2 of 9):\n1  let x = DEFAULT_LIMIT;\n2  args.regex_size_li\n\
                   [cut: 60 of 90 characters shown]\nIf this answers the task, say so.";
        assert_eq!(names_used(cut), ["DEFAULT_LIMIT"]);
    }

    #[test]
    fn the_names_that_share_the_tasks_words_are_offered_first() {
        let task = "What is the default capacity of the searcher's line buffer?";
        assert_eq!(
            names_for(task, names_used(OPENED)),
            [
                "DEFAULT_BUFFER_CAPACITY",
                "LineBufferReader",
                "line_terminator",
                "line_term"
            ]
        );
        assert_eq!(name_words("LineBufferReader"), ["line", "buffer", "reader"]);
    }

    #[test]
    fn a_hop_is_the_answer_or_a_name_offered() {
        let names = names_used(OPENED);
        assert_eq!(
            read_follow(
                r#"{"tool":"find_symbol","args":{"name":"DEFAULT_BUFFER_CAPACITY"}}"#,
                &names
            ),
            Some("DEFAULT_BUFFER_CAPACITY".to_string())
        );
        assert_eq!(read_follow(r#"{"tool":"answer"}"#, &names), None);
        assert_eq!(
            read_follow(
                r#"{"tool":"find_symbol","args":{"name":"made_up_name"}}"#,
                &names
            ),
            None
        );
        let g = crate::llm::grammar::Grammar::JsonSchema(follow_schema(&names));
        let accepts = |call: &str| {
            g.accepts(&spaced(&serde_json::from_str(call).unwrap()))
                .unwrap()
        };
        assert!(accepts(
            r#"{"tool":"find_symbol","args":{"name":"heap_limit"}}"#
        ));
        assert!(!accepts(
            r#"{"tool":"find_symbol","args":{"name":"made_up_name"}}"#
        ));
    }

    /// Each worked hop names one of its own names, so none teaches a call the grammar refuses.
    #[test]
    fn every_example_follows_a_name_it_offers() {
        for (ask, call) in EXAMPLES {
            let offered: Vec<String> = ask
                .rsplit_once(" use: ")
                .expect(ask)
                .1
                .split(", ")
                .map(str::to_string)
                .collect();
            let g = crate::llm::grammar::Grammar::JsonSchema(follow_schema(&offered));
            let call = spaced(&serde_json::from_str(call).unwrap());
            assert!(g.accepts(&call).unwrap(), "{ask}");
        }
    }
}
