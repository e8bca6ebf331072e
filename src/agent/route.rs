//! The model's first step: the call that starts the task, chosen in a conversation of its own
//! under a grammar whose filter values come from the workspace itself (its labels, the people
//! who open, merge and commit, its paths and tags), so the model picks them rather than make
//! them up. A lookup ("which file…", "which issue…") is routed to Burrow's search with the
//! task, as runs began before; a task that needs a list, a count, a file's history or a name's
//! definition starts with the tool made for it. Either way the call is a real step of the run,
//! taken by the model and kept in the trace, and the ReAct loop goes on from it.
//!
//! Small models do not plan a chain of free-form calls (Qwen2.5-Coder-0.5B and 1.5B called no
//! tool in any of 65 runs: issue 56); choosing one of five calls from examples, with every
//! value held to what exists, is a job they can do.

use std::time::Instant;

use serde_json::{json, Map, Value};

use super::decision::CallShape;
use super::events::{AgentError, AgentEvent};
use super::first::{first_search, task_query, SEARCH};
use super::ground::{named, Named};
use super::protocol::{spaced, Action};
use super::record::{Origin, StepRecord};
use super::run::{Agent, Next};
use super::state::RunState;
use super::step::decoded;
use crate::llm::engine::{CancelToken, GenerateRequest, Prompt, SamplingParams, StopReason};
use crate::llm::grammar::Grammar;
use crate::llm::template::ChatMessage;
use crate::notes;

/// The route that looks the task up: Burrow's search with the task's own words.
const LOOKUP: &str = "search";

/// The tools a route may start with, beside the lookup.
const ROUTED: &[&str] = &[
    "search_issues",
    "search_pull_requests",
    "search_commits",
    "find_symbol",
    "list_releases",
];

/// The series `list_releases` takes for a project's own version tags.
const OWN_SERIES: &str = "versions";

/// Tokens a route may take: the longest call of the examples is about 40.
const ROUTE_TOKENS: usize = 96;

/// Characters of the words a routed search may take.
const QUERY_CHARS: u64 = 60;

const ROUTE_SYSTEM: &str = "You choose the first call for a task about a code workspace: \
repositories with their files and commit history, and their issues and pull requests. \
Reply with one JSON object. \
\"search\" looks up one item by the task's words: a file, a document, a setting, an issue or \
pull request described in words, or a commit. \
\"search_issues\" and \"search_pull_requests\" list and count them by state, label, who opened \
or merged them, and dates. \
\"search_commits\" lists and counts commits by author, path and dates or release tags, or finds \
one by words. \
\"find_symbol\" finds where a name in the code is defined and which files use it. \
\"list_releases\" lists and counts a repository's releases (its tags), of one series, by \
dates.";

/// Worked routes, one per kind of task: the model copies their shape. Their names and values
/// are made up and are not the workspace's.
const EXAMPLES: &[(&str, &str)] = &[
    (
        "Which document explains how to configure the cache?",
        r#"{"tool":"search"}"#,
    ),
    (
        "Which issues labelled Bug has alice reported?",
        r#"{"tool":"search_issues","args":{"label":"Bug","author":"alice"}}"#,
    ),
    (
        "Which pull requests are still open and labelled Needs review?",
        r#"{"tool":"search_pull_requests","args":{"state":"open","label":"Needs review"}}"#,
    ),
    (
        "How many pull requests did bob merge in 2021?",
        r#"{"tool":"search_pull_requests","args":{"merged_by":"bob","year":"2021"}}"#,
    ),
    (
        "How many issues opened in 2020 have the Feature label?",
        r#"{"tool":"search_issues","args":{"label":"Feature","year":"2020"}}"#,
    ),
    (
        "Which pull request fixed the crash when saving a file, and who approved it?",
        r#"{"tool":"search"}"#,
    ),
    (
        "dave asked for the export dialog to remember its last folder. Which PR did that, and \
         who merged it?",
        r#"{"tool":"search"}"#,
    ),
    (
        "Which merged pull request resolved issue #12 (the broken export button), and who \
         merged it?",
        r#"{"tool":"search"}"#,
    ),
    (
        "Which of dave's pull requests were merged in March 2022?",
        r#"{"tool":"search_pull_requests","args":{"state":"merged","author":"dave","month":"2022-03"}}"#,
    ),
    (
        "Which Bug-labelled issues from alice are still open?",
        r#"{"tool":"search_issues","args":{"state":"open","label":"Bug","author":"alice"}}"#,
    ),
    (
        "How many issues were closed as not planned?",
        r#"{"tool":"search_issues","args":{"state":"not_planned"}}"#,
    ),
    (
        "What was the last commit to change src/cache.rs before June 2021, and who made it?",
        r#"{"tool":"search_commits","args":{"path":"src/cache.rs","until":"2021-06-01"}}"#,
    ),
    (
        "How many commits did Carol Diaz author after release 1.2.0, up to 1.3.0?",
        r#"{"tool":"search_commits","args":{"author":"Carol Diaz","since":"1.2.0","until":"1.3.0"}}"#,
    ),
    (
        "Where is parse_header defined, and which file calls it?",
        r#"{"tool":"find_symbol","args":{"name":"parse_header"}}"#,
    ),
    (
        "How many releases of the parser crate were tagged in 2021?",
        r#"{"tool":"list_releases","args":{"series":"parser","year":"2021"}}"#,
    ),
    (
        "In which release did the --json flag first appear?",
        r#"{"tool":"search_commits","args":{"query":"json flag"}}"#,
    ),
    (
        "What is the default timeout, and in which file is it set?",
        r#"{"tool":"search"}"#,
    ),
];

impl Agent<'_> {
    /// Whether the run starts with the model's route: the setting is on, its output can be
    /// held to the grammar, and the run searches first (the lookup route is that search).
    pub(super) fn routes_first(&self, state: &RunState) -> bool {
        self.config.route_first && self.config.grammar && self.searches_first(state)
    }

    /// The model chooses the run's first call (see the module's comment), and it is made.
    pub(super) fn route(
        &self,
        state: &mut RunState,
        cancel: &CancelToken,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<Next, AgentError> {
        let routed: Vec<&str> = ROUTED
            .iter()
            .copied()
            .filter(|t| state.active.iter().any(|a| a == t))
            .collect();
        let named = named(&self.config.field_values, &state.task);
        let schema = route_schema(&routed, &named);
        let ask = format!("Task: {}", state.task);
        let Some(mut record) = self.choose(
            state,
            (ROUTE_SYSTEM, EXAMPLES),
            ask,
            schema,
            ROUTE_TOKENS,
            cancel,
            on_event,
        )?
        else {
            return Ok(Next::cancelled());
        };
        let chosen = read_route(&record.output, &routed)
            .map(|a| by_task_words(a, &state.task, !named.lists));
        let (action, notes) = match chosen {
            // A search of one kind by words alone: the task's words, which rank better than
            // the model's rewrite of them, in the kind the model chose.
            Some(a) if a.tool == SEARCH => {
                record.thought = "First I search the workspace for the task.".to_string();
                (a, vec![notes::AFTER_SEARCH.to_string()])
            }
            Some(action) => {
                record.thought = format!("The task asks for what {} lists.", action.tool);
                (action, vec![notes::AFTER_ROUTE.to_string()])
            }
            // The lookup, and a route that could not be read (a cut-off output): the task's
            // own words are searched, as a run without routes starts.
            None => {
                record.thought = "First I search the workspace for the task.".to_string();
                let action = Action {
                    tool: SEARCH.to_string(),
                    args: first_search(&state.task),
                };
                (action, vec![notes::AFTER_SEARCH.to_string()])
            }
        };
        self.call(state, record, notes, action, CallShape::default(), on_event)
    }

    /// One call the model chooses apart from the run, in a conversation of its own: Burrow's
    /// `instructions` (a system message and worked examples, the same for every task, so their
    /// KV state is kept between runs and processes as the run's system prompt is), then `ask`,
    /// which holds the task and is data, under `schema`. The step as decoded, of origin
    /// `Route`; None when cancelled.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn choose(
        &self,
        state: &RunState,
        (system, examples): (&str, &[(&str, &str)]),
        ask: String,
        schema: Value,
        max_tokens: usize,
        cancel: &CancelToken,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<Option<StepRecord>, AgentError> {
        let index = state.steps.len();
        on_event(AgentEvent::StepStarted { index });
        let mut messages = vec![ChatMessage::system(system)];
        for (task, call) in examples {
            messages.push(ChatMessage::user(format!("Task: {task}")));
            // As the grammar will have the model write it, separators and all.
            let call = serde_json::from_str::<Value>(call)
                .map(|v| spaced(&v))
                .unwrap_or_else(|_| call.to_string());
            messages.push(ChatMessage::assistant(call));
        }
        if let Some(dir) = &self.warm_dir {
            let prefix = Prompt::Chat {
                messages: messages.clone(),
                tools: None,
                untrusted: Vec::new(),
            };
            if let Err(e) = self.model.warm_start(prefix, dir) {
                tracing::warn!("warm start of a chosen call in {}: {e}", dir.display());
            }
        }
        messages.push(ChatMessage::user(ask));
        let ask_at = messages.len() - 1;
        let prompt = Prompt::Chat {
            messages,
            tools: None,
            untrusted: vec![ask_at],
        };
        let prompt = self.model.prepare(prompt)?.prompt;
        let request = GenerateRequest::new(prompt)
            .sampling(SamplingParams::greedy())
            .max_tokens(max_tokens)
            .grammar(Grammar::JsonSchema(schema));
        let started = Instant::now();
        let mut on_token = |t: &str| {
            on_event(AgentEvent::Token {
                index,
                text: t.to_string(),
            })
        };
        let (output, usage, stop) = self.generate(request, cancel, &mut on_token)?;
        if stop == StopReason::Cancelled || cancel.is_cancelled() {
            return Ok(None);
        }
        let mut record = decoded(index, output, &usage, started);
        record.origin = Origin::Route;
        Ok(Some(record))
    }
}

impl Agent<'_> {
    /// Whether the model's next step is its answer: its last step was a call it chose apart
    /// from the run (its route to a list, a count, a history or a definition, or a hop from an
    /// opened file to a definition), and the call went through. That call completes the
    /// task's plan; one that failed leaves the loop to go on as usual.
    pub(super) fn routed_answer_due(state: &RunState) -> bool {
        state.steps.last().is_some_and(|last| {
            last.origin == Origin::Route
                && last.error.is_none()
                && last.action.as_ref().is_some_and(|a| a.tool != SEARCH)
        })
    }
}

/// A routed search by words alone, of issues, pull requests or commits, as Burrow's search
/// with the task in that kind: the model's query is a shorter rewrite of the task, and ranked
/// worse (on the lookups' dev split, 0.60 of answers right against 0.68 with the task's words).
/// A route with a filter (a state, a label, a person, a date) is the model's call, with the
/// task's words for its query where the task looks for `one_item`: among Thayne McCombs'
/// commits, the model's words "globset-* tag" found the method the fix was for, the task's
/// the fix.
fn by_task_words(mut a: Action, task: &str, one_item: bool) -> Action {
    let kind = match a.tool.as_str() {
        "search_issues" => "issue",
        "search_pull_requests" => "pr",
        "search_commits" => "commit",
        _ => return a,
    };
    if a.args.keys().any(|k| k != "query") {
        if one_item && a.args.contains_key("query") {
            a.args.insert("query".into(), json!(task_query(task)));
        }
        return a;
    }
    let mut args = first_search(task);
    // A kind the task names itself ("which file…") wins over the route's: routed to commits,
    // "which file has the function that asks for the machine's name" found the commit that
    // added it, not the file.
    let named_kinds = args.get("kinds").and_then(Value::as_array).cloned();
    if named_kinds.is_some_and(|k| !k.iter().any(|n| n == kind)) {
        return Action {
            tool: SEARCH.to_string(),
            args,
        };
    }
    args.insert("kinds".into(), json!([kind]));
    Action {
        tool: SEARCH.to_string(),
        args,
    }
}

/// The call a route's output names, when it is one of `routed` (None: the lookup).
fn read_route(output: &str, routed: &[&str]) -> Option<Action> {
    let v: Value = serde_json::from_str(output.trim()).ok()?;
    let tool = v.get("tool")?.as_str()?;
    if tool == LOOKUP || !routed.contains(&tool) {
        return None;
    }
    let mut args = v
        .get("args")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    // A year and a month are the route's shorthands for the dates the tools take: small
    // models wrote the same day as both ends of "in 2022".
    if let Some((y, m)) = args.remove("month").and_then(|m| {
        let (y, m) = m.as_str()?.split_once('-')?;
        Some((y.parse::<i32>().ok()?, m.parse::<u32>().ok()?))
    }) {
        let (next_y, next_m) = if m >= 12 { (y + 1, 1) } else { (y, m + 1) };
        args.entry("since")
            .or_insert_with(|| json!(format!("{y}-{m:02}-01")));
        args.entry("until")
            .or_insert_with(|| json!(format!("{next_y}-{next_m:02}-01")));
    }
    if let Some(year) = args.remove("year") {
        if let Some(y) = year.as_str().and_then(|y| y.parse::<i32>().ok()) {
            args.entry("since")
                .or_insert_with(|| json!(format!("{y}-01-01")));
            args.entry("until")
                .or_insert_with(|| json!(format!("{}-01-01", y + 1)));
        }
    }
    Some(Action {
        tool: tool.to_string(),
        args,
    })
}

/// The JSON Schema of a route: the lookup, or one of `routed` with its filters held to what
/// the task names of the workspace's values (see `agent/ground.rs`); a filter the task names
/// nothing for is not offered, and `find_symbol` only where it writes a name of code.
fn route_schema(routed: &[&str], named: &Named) -> Value {
    let words = json!({"type": "string", "minLength": 1, "maxLength": QUERY_CHARS});
    let one_of = |list: &[String]| (!list.is_empty()).then(|| json!({"enum": list}));
    let states = |allowed: &[&str]| {
        let s: Vec<&str> = named
            .states
            .iter()
            .copied()
            .filter(|s| allowed.contains(s))
            .collect();
        (!s.is_empty()).then(|| json!({"enum": s}))
    };
    let v = &named.values;
    // Dates bound a list, or what else the task filters by. The year of a task that looks for
    // one item describes it ("Back in 2020 someone reported…, which pull request fixed it?"):
    // Qwen2.5-Coder-0.5B listed the pull requests of 2020.
    let dated = named.lists
        || !(v.labels.is_empty()
            && v.openers.is_empty()
            && named.reporters.is_empty()
            && v.mergers.is_empty()
            && v.committers.is_empty()
            && v.paths.is_empty()
            && v.tags.is_empty()
            && named.states.is_empty());
    let years: &[String] = if dated { &named.years } else { &[] };
    let months: &[String] = if dated { &named.months } else { &[] };
    // A year that is a named month's is that month, not the whole year.
    let whole_years: Vec<String> = years
        .iter()
        .filter(|y| !months.iter().any(|m| m.starts_with(y.as_str())))
        .cloned()
        .collect();
    let year = one_of(&whole_years);
    let month = one_of(months);
    // Dates of its own only where the task bounds them ("before June 2021"): for "in 2021" or
    // "in October 2023", Qwen2.5-Coder-0.5B wrote ends that cut the period short
    // (`2021-12-30`, the year up to October).
    let date = (named.ranged && !years.is_empty()).then(|| {
        json!({"type": "string", "pattern": format!("^({})-[0-9]{{2}}-[0-9]{{2}}$", years.join("|"))})
    });
    let date_or_tag = match (&date, one_of(&named.values.tags)) {
        (Some(d), Some(t)) => Some(json!({"anyOf": [d, t]})),
        (d, t) => d.clone().or(t),
    };
    // One release named ends the range ("the last to touch README.md among those shipped in
    // 14.1.1"), unless the task starts it there ("after 14.1.1"): Qwen2.5-Coder-0.5B, offered
    // the tag at both ends, listed the commits after 14.1.1.
    let (since, until) = match (named.values.tags.len(), named.after) {
        (1, false) => (date.clone(), date_or_tag.clone()),
        (1, true) => (date_or_tag.clone(), date.clone()),
        _ => (date_or_tag.clone(), date_or_tag.clone()),
    };
    let mut branches = vec![object(
        vec![("tool", Some(json!({"const": LOOKUP})))],
        &["tool"],
    )];
    for &tool in routed {
        let args: Vec<(&str, Option<Value>)> = match tool {
            "search_issues" => vec![
                ("query", Some(words.clone())),
                ("state", states(&["open", "closed", "not_planned"])),
                ("label", one_of(&v.labels)),
                ("author", one_of(&named.reporters)),
                ("year", year.clone()),
                ("month", month.clone()),
                ("since", date.clone()),
                ("until", date.clone()),
            ],
            "search_pull_requests" => vec![
                ("query", Some(words.clone())),
                ("state", states(&["open", "closed", "merged"])),
                ("label", one_of(&v.labels)),
                ("author", one_of(&v.openers)),
                ("merged_by", one_of(&v.mergers)),
                ("year", year.clone()),
                ("month", month.clone()),
                ("since", date.clone()),
                ("until", date.clone()),
            ],
            // A count of releases is not one of commits: Qwen2.5-Coder-0.5B, offered both,
            // counted the commits of 2026 for "how many releases of the ignore crate were
            // tagged in 2026".
            "search_commits" if !(named.releases && named.lists) || named.commits => vec![
                ("query", Some(words.clone())),
                ("author", one_of(&v.committers)),
                ("path", one_of(&v.paths)),
                ("year", year.clone()),
                ("month", month.clone()),
                ("since", since.clone()),
                ("until", until.clone()),
            ],
            "find_symbol" if !named.symbols.is_empty() => {
                vec![("name", one_of(&named.symbols))]
            }
            // Offered where the task counts or lists releases themselves, so a task after
            // the first release with a change is not routed to the list of all of them.
            "list_releases" if named.releases && named.lists => {
                let mut series = vec![OWN_SERIES.to_string()];
                series.extend(named.series.iter().cloned());
                vec![
                    ("series", one_of(&series)),
                    ("year", year.clone()),
                    ("month", month.clone()),
                    ("since", date.clone()),
                    ("until", date.clone()),
                ]
            }
            _ => continue,
        };
        let required = required_filters(tool, &args, named);
        // Counted or ordered by its filters, a list is not narrowed by words: "how many
        // commits does 15.1.0 have on top of 15.0.0" with the words "ripgrep 15.1.0" counted
        // the 4 commits that mention it.
        let args = if named.tallies && !required.is_empty() {
            args.into_iter().filter(|(k, _)| *k != "query").collect()
        } else {
            args
        };
        branches.push(object(
            vec![
                ("tool", Some(json!({"const": tool}))),
                ("args", Some(object(args, &required))),
            ],
            &["tool", "args"],
        ));
    }
    // A count is not one item to look up: offered the lookup beside `list_releases`,
    // Qwen2.5-Coder-0.5B searched for "how many releases of the ignore crate were tagged in
    // 2026" and answered with a commit.
    if named.counts && branches.len() > 1 {
        branches.remove(0);
    }
    json!({"oneOf": branches})
}

/// The filters a route to `tool` must set: each the task names a value for, of those `args`
/// offers (a person, a label, a path, a state), and both ends of a range between two
/// releases. Left free, Qwen2.5-Coder-0.5B counted the commits up to 15.0.0 by everyone for
/// "after 14.1.1, up to 15.0.0, how many did Andrew Gallant author", and listed the open
/// issues with a label for the ones its author opened.
fn required_filters<'a>(
    tool: &str,
    args: &[(&'a str, Option<Value>)],
    named: &Named,
) -> Vec<&'a str> {
    let v = &named.values;
    let offered = |k: &str| args.iter().any(|(name, s)| *name == k && s.is_some());
    let mut required: Vec<&'a str> = Vec::new();
    for (k, _) in args {
        let named_one = match (tool, *k) {
            ("find_symbol", "name") | ("list_releases", "series") => true,
            ("search_issues", "author") => !named.reporters.is_empty(),
            ("search_pull_requests", "author") => !v.openers.is_empty(),
            (_, "merged_by") => !v.mergers.is_empty(),
            // A whole period the task names is what it asks about.
            (_, "year") => !named.ranged && named.months.is_empty(),
            (_, "month") => !named.ranged,
            ("search_commits", "author") => !v.committers.is_empty(),
            ("search_commits", "path") => !v.paths.is_empty(),
            ("search_commits", "since" | "until") if v.tags.len() >= 2 => true,
            ("search_commits", "until") => v.tags.len() == 1 && !named.after,
            ("search_commits", "since") => v.tags.len() == 1 && named.after,
            (_, "label") => !v.labels.is_empty(),
            (_, "state") => true,
            _ => false,
        };
        if named_one && offered(k) {
            required.push(k);
        }
    }
    required
}

fn object(properties: Vec<(&str, Option<Value>)>, required: &[&str]) -> Value {
    let mut props = Map::new();
    for (k, v) in properties {
        if let Some(v) = v {
            props.insert(k.to_string(), v);
        }
    }
    json!({"type": "object", "properties": props, "required": required})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::queries::FieldValues;

    fn values() -> FieldValues {
        FieldValues {
            labels: vec!["Bug".into(), "Wallet".into()],
            openers: vec!["alice".into()],
            mergers: vec!["bob".into()],
            committers: vec!["Carol Diaz".into()],
            paths: vec!["src/cache.rs".into(), "src".into()],
            tags: vec!["1.2.0".into()],
        }
    }

    #[test]
    fn a_route_is_the_lookup_or_a_routed_tool_with_its_arguments() {
        let routed = ["search_issues", "find_symbol"];
        assert_eq!(read_route(r#"{"tool":"search"}"#, &routed), None);
        let a = read_route(
            r#"{"tool":"search_issues","args":{"label":"Bug","state":"open"}}"#,
            &routed,
        )
        .expect("a routed call");
        assert_eq!(a.tool, "search_issues");
        assert_eq!(
            Value::Object(a.args),
            json!({"label": "Bug", "state": "open"})
        );
        // A year is the whole year's dates.
        let a = read_route(
            r#"{"tool":"search_issues","args":{"year":"2022"}}"#,
            &routed,
        )
        .expect("a routed call");
        assert_eq!(
            Value::Object(a.args),
            json!({"since": "2022-01-01", "until": "2023-01-01"})
        );
        // A tool the run does not have, or output that is not a route, is the lookup.
        assert_eq!(
            read_route(r#"{"tool":"search_commits","args":{}}"#, &routed),
            None
        );
        assert_eq!(read_route(r#"{"tool":"find_sym"#, &routed), None);
    }

    #[test]
    fn a_routed_search_by_words_alone_searches_the_tasks_words_in_its_kind() {
        let task = "Which pull request fixed the crash on close?";
        let words = read_route(
            r#"{"tool":"search_pull_requests","args":{"query":"crash close"}}"#,
            ROUTED,
        )
        .expect("a routed call");
        let a = by_task_words(words, task, true);
        assert_eq!(a.tool, SEARCH);
        assert_eq!(a.args["query"], task);
        assert_eq!(a.args["kinds"], json!(["pr"]));
        // A kind the task names wins: a file is not searched for among commits.
        let file_task = "Which file has the function that reads the host name?";
        let commits = read_route(
            r#"{"tool":"search_commits","args":{"query":"host"}}"#,
            ROUTED,
        )
        .expect("a routed call");
        let a = by_task_words(commits, file_task, true);
        assert_eq!(a.tool, SEARCH);
        assert_eq!(a.args["kinds"], json!(["code"]));
        // With a filter, the call is the model's, with the task's words where it looks for one
        // item, and the model's for a list.
        let filtered = read_route(
            r#"{"tool":"search_commits","args":{"query":"hyperlinks","author":"Lucas"}}"#,
            ROUTED,
        )
        .expect("a routed call");
        let a = by_task_words(filtered.clone(), task, true);
        assert_eq!(a.tool, "search_commits");
        assert_eq!(a.args["query"], task);
        assert_eq!(a.args["author"], "Lucas");
        let a = by_task_words(filtered, task, false);
        assert_eq!(a.args["query"], "hyperlinks");
    }

    #[test]
    fn a_routes_filters_are_the_workspaces_values_the_task_names() {
        let task = "Which open issues labelled Bug did alice open in 2021, and did Carol Diaz \
                    change src/cache.rs after 1.2.0?";
        let schema = route_schema(
            &["search_issues", "search_commits", "find_symbol"],
            &named(&values(), task),
        );
        let branches = schema["oneOf"].as_array().expect("branches");
        // No name of code in the task: no find_symbol.
        assert_eq!(branches.len(), 3);
        let issues = &branches[1]["properties"]["args"]["properties"];
        assert_eq!(issues["label"], json!({"enum": ["Bug"]}));
        assert_eq!(issues["author"], json!({"enum": ["alice"]}));
        assert_eq!(issues["state"], json!({"enum": ["open"]}));
        assert_eq!(issues["year"], json!({"enum": ["2021"]}));
        let commits = &branches[2]["properties"]["args"]["properties"];
        assert_eq!(commits["path"], json!({"enum": ["src/cache.rs"]}));
        assert_eq!(commits["author"], json!({"enum": ["Carol Diaz"]}));
        assert_eq!(commits["since"]["anyOf"][1], json!({"enum": ["1.2.0"]}));
        // What the task does not name is not offered: a search by words alone is.
        let none = route_schema(&["search_issues"], &named(&values(), "Why does it crash?"));
        let args = &none["oneOf"][1]["properties"]["args"]["properties"];
        let offered: Vec<&String> = args.as_object().expect("properties").keys().collect();
        assert_eq!(offered, ["query"]);
    }

    #[test]
    fn a_route_must_set_the_filters_its_task_names() {
        let task = "Of the commits after 1.2.0, up to 1.3.0, how many did Carol Diaz author?";
        let mut v = values();
        v.tags.push("1.3.0".into());
        let g = Grammar::JsonSchema(route_schema(&["search_commits"], &named(&v, task)));
        let all = r#"{"tool":"search_commits","args":{"author":"Carol Diaz","since":"1.2.0","until":"1.3.0"}}"#;
        let accepts = |call: &str| {
            g.accepts(&spaced(&serde_json::from_str(call).unwrap()))
                .unwrap()
        };
        assert!(accepts(all));
        // The person or a release left out is not a route for this task.
        let no_author = r#"{"tool":"search_commits","args":{"since":"1.2.0","until":"1.3.0"}}"#;
        assert!(!accepts(no_author));
        let one_end = r#"{"tool":"search_commits","args":{"author":"Carol Diaz","until":"1.3.0"}}"#;
        assert!(!accepts(one_end));
        // A count is not one item to look up.
        assert!(!accepts(r#"{"tool":"search"}"#));
    }

    #[test]
    fn a_count_or_a_last_change_is_not_narrowed_by_words() {
        let offered = |task: &str| -> Vec<String> {
            let schema = route_schema(&["search_commits"], &named(&values(), task));
            let branches = schema["oneOf"].as_array().expect("branches");
            let args = &branches[branches.len() - 1]["properties"]["args"]["properties"];
            args.as_object()
                .expect("properties")
                .keys()
                .cloned()
                .collect()
        };
        assert_eq!(
            offered("What was the last commit to change src/cache.rs?"),
            ["path"]
        );
        assert_eq!(
            offered("How many commits did Carol Diaz author?"),
            ["author"]
        );
        // Words are the list's subject where nothing else filters it.
        assert_eq!(offered("How many commits mention the cache?"), ["query"]);
        let words = offered("Which commits did Carol Diaz author about the cache?");
        assert!(words.contains(&"query".to_string()));
    }

    #[test]
    fn one_release_named_ends_the_range_unless_the_task_starts_it_there() {
        let g = |task: &str| {
            Grammar::JsonSchema(route_schema(&["search_commits"], &named(&values(), task)))
        };
        let accepts = |g: &Grammar, call: &str| {
            g.accepts(&spaced(&serde_json::from_str(call).unwrap()))
                .unwrap()
        };
        let tool = r#"{"tool":"search_commits","args":"#;
        let shipped = g("Which commit last changed src/cache.rs among those shipped in 1.2.0?");
        assert!(accepts(
            &shipped,
            &format!(r#"{tool}{{"path":"src/cache.rs","until":"1.2.0"}}}}"#)
        ));
        assert!(!accepts(
            &shipped,
            &format!(r#"{tool}{{"path":"src/cache.rs","since":"1.2.0"}}}}"#)
        ));
        assert!(!accepts(
            &shipped,
            &format!(r#"{tool}{{"path":"src/cache.rs"}}}}"#)
        ));
        let after = g("How many commits changed src/cache.rs after 1.2.0?");
        assert!(accepts(
            &after,
            &format!(r#"{tool}{{"path":"src/cache.rs","since":"1.2.0"}}}}"#)
        ));
        assert!(!accepts(
            &after,
            &format!(r#"{tool}{{"path":"src/cache.rs","until":"1.2.0"}}}}"#)
        ));
    }

    #[test]
    fn a_whole_period_is_a_year_or_month_and_a_count_is_not_narrowed_by_words() {
        let task = "How many pull requests did alice open in March 2022?";
        let g = Grammar::JsonSchema(route_schema(
            &["search_pull_requests"],
            &named(&values(), task),
        ));
        let accepts = |call: &str| {
            g.accepts(&spaced(&serde_json::from_str(call).unwrap()))
                .unwrap()
        };
        let tool = r#"{"tool":"search_pull_requests","args":"#;
        assert!(accepts(&format!(
            r#"{tool}{{"author":"alice","month":"2022-03"}}}}"#
        )));
        // Ends of its own, the person left out, or words to match are not this task's route.
        assert!(!accepts(&format!(
            r#"{tool}{{"author":"alice","since":"2022-03-01","until":"2022-03-30"}}}}"#
        )));
        assert!(!accepts(&format!(r#"{tool}{{"month":"2022-03"}}}}"#)));
        assert!(!accepts(&format!(
            r#"{tool}{{"query":"open","author":"alice","month":"2022-03"}}}}"#
        )));
        let a = read_route(
            &format!(r#"{tool}{{"author":"alice","month":"2022-12"}}}}"#),
            ROUTED,
        )
        .expect("a routed call");
        assert_eq!(
            Value::Object(a.args),
            json!({"author": "alice", "since": "2022-12-01", "until": "2023-01-01"})
        );
    }

    #[test]
    fn a_year_that_describes_the_one_item_looked_for_is_not_a_filter() {
        let offered = |task: &str| -> Vec<String> {
            let schema = route_schema(&["search_pull_requests"], &named(&values(), task));
            let args = &schema["oneOf"][1]["properties"]["args"]["properties"];
            args.as_object()
                .expect("properties")
                .keys()
                .cloned()
                .collect()
        };
        let one = "Back in 2020 someone reported the crash on close. Which pull request fixed it?";
        assert_eq!(offered(one), ["query"]);
        let list = "Which pull requests were merged in 2020?";
        assert!(offered(list).contains(&"year".to_string()));
        let person = "Which pull request did bob merge in 2020?";
        assert!(offered(person).contains(&"year".to_string()));
    }

    #[test]
    fn releases_are_counted_by_a_series_the_task_names_only_when_it_asks_for_them() {
        let mut v = values();
        v.tags
            .extend(["ignore-0.4.21".into(), "ignore-0.4.22".into()]);
        let routes = |task: &str| route_schema(&["list_releases"], &named(&v, task));
        let g = Grammar::JsonSchema(routes(
            "How many releases of the ignore crate were tagged in 2026?",
        ));
        let accepts = |call: &str| {
            g.accepts(&spaced(&serde_json::from_str(call).unwrap()))
                .unwrap()
        };
        let tool = r#"{"tool":"list_releases","args":"#;
        assert!(accepts(&format!(
            r#"{tool}{{"series":"ignore","year":"2026"}}}}"#
        )));
        assert!(accepts(&format!(
            r#"{tool}{{"series":"versions","year":"2026"}}}}"#
        )));
        assert!(!accepts(&format!(r#"{tool}{{"year":"2026"}}}}"#)));
        assert!(!accepts(&format!(
            r#"{tool}{{"series":"grep","year":"2026"}}}}"#
        )));
        // Nor are commits, where the task does not speak of them, nor the lookup of one item.
        let both = route_schema(
            &["search_commits", "list_releases"],
            &named(
                &v,
                "How many releases of the ignore crate were tagged in 2026?",
            ),
        );
        let tools: Vec<&Value> = both["oneOf"]
            .as_array()
            .expect("branches")
            .iter()
            .map(|b| &b["properties"]["tool"]["const"])
            .collect();
        assert_eq!(tools, [&json!("list_releases")]);
        // The first release with a change is looked up, not listed.
        let first = routes("In which release did the --json flag first appear?");
        assert_eq!(first["oneOf"].as_array().expect("branches").len(), 1);
    }

    /// Every example is a route its own task's grammar accepts, so none teaches a route the
    /// grammar would then refuse.
    #[test]
    fn every_example_is_accepted_by_its_own_tasks_grammar() {
        for (task, call) in EXAMPLES {
            let v: Value = serde_json::from_str(call).expect(task);
            let args = v["args"].as_object().cloned().unwrap_or_default();
            let text = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
            let as_list = |k: &str| text(k).into_iter().collect::<Vec<String>>();
            let own = FieldValues {
                labels: as_list("label"),
                openers: as_list("author"),
                mergers: as_list("merged_by"),
                committers: as_list("author"),
                paths: as_list("path"),
                tags: [text("since"), text("until")]
                    .into_iter()
                    .flatten()
                    .filter(|t| !t.contains('-'))
                    .chain(text("series").map(|s| format!("{s}-1.0.0")))
                    .collect(),
            };
            let g = Grammar::JsonSchema(route_schema(ROUTED, &named(&own, task)));
            let call = spaced(&v);
            assert!(g.accepts(&call).unwrap(), "{task}: {call}");
        }
    }

    /// The examples teach routes the grammar allows: each value they filter by is one their
    /// own task names.
    #[test]
    fn every_example_is_a_route_its_own_task_grounds() {
        for (task, call) in EXAMPLES {
            let v: Value = serde_json::from_str(call).expect(task);
            let tool = v["tool"].as_str().expect(task);
            assert!(tool == LOOKUP || ROUTED.contains(&tool), "{task}");
            let Some(args) = v["args"].as_object() else {
                continue;
            };
            let text = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
            let as_list = |k: &str| text(k).into_iter().collect::<Vec<String>>();
            let own = FieldValues {
                labels: as_list("label"),
                openers: as_list("author"),
                mergers: as_list("merged_by"),
                committers: as_list("author"),
                paths: as_list("path"),
                tags: [text("since"), text("until")]
                    .into_iter()
                    .flatten()
                    .chain(text("series").map(|s| format!("{s}-1.0.0")))
                    .collect(),
            };
            let n = named(&own, task);
            for (k, value) in args {
                let value = value.as_str().expect("string arguments");
                let grounded = match k.as_str() {
                    "query" => true,
                    "label" => n.values.labels.contains(&value.to_string()),
                    "author" => {
                        n.values.openers.contains(&value.to_string())
                            || n.reporters.contains(&value.to_string())
                    }
                    "merged_by" => n.values.mergers.contains(&value.to_string()),
                    "path" => n.values.paths.contains(&value.to_string()),
                    "state" => n.states.contains(&value),
                    "year" => n.years.contains(&value.to_string()),
                    "month" => n.months.contains(&value.to_string()),
                    "series" => value == OWN_SERIES || n.series.contains(&value.to_string()),
                    "name" => n.symbols.contains(&value.to_string()),
                    "since" | "until" => {
                        n.values.tags.contains(&value.to_string())
                            || n.years.iter().any(|y| value.starts_with(y.as_str()))
                    }
                    _ => false,
                };
                assert!(grounded, "{task}: {k} {value}");
            }
        }
    }
}
