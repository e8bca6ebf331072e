//! The model's first call (its route): chosen apart from the run under a grammar whose filter
//! values are those the task names and the workspace holds, made as the run's first step, and
//! followed by the model's answer; a route to the lookup is Burrow's search with the task.

use std::sync::{Arc, Mutex};

use burrow::agent::protocol::Protocol;
use burrow::agent::record::{Origin, RunStatus};
use burrow::agent::{Agent, AgentConfig};
use burrow::llm::fake::{FakeModel, FakeTurn};
use burrow::llm::grammar::Grammar;
use burrow::tools::{Locator, Tool, ToolError, ToolOutput, ToolRegistry};
use burrow::workspace::queries::FieldValues;
use serde_json::json;

use crate::support::{run, Search};

/// List issues by their fields.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct IssuesInput {
    /// Words.
    #[serde(default)]
    #[allow(dead_code)]
    query: Option<String>,
    /// A label.
    #[serde(default)]
    label: Option<String>,
    /// Who opened it.
    #[serde(default)]
    author: Option<String>,
}

#[derive(Default, Clone)]
struct SearchIssues(Arc<Mutex<Vec<serde_json::Value>>>);

impl Tool for SearchIssues {
    const NAME: &'static str = "search_issues";
    type Input = IssuesInput;
    fn run(&self, input: IssuesInput) -> Result<ToolOutput, ToolError> {
        self.0
            .lock()
            .unwrap()
            .push(json!({"label": input.label, "author": input.author}));
        Ok(ToolOutput::new(
            "2 issues labelled Wallet, opened by sjors.\nacme/app#7 [open] A\nacme/app#9 [open] B",
            (),
        )
        .with_items([
            Locator::issue_or_pr("acme/app", 7, false),
            Locator::issue_or_pr("acme/app", 9, false),
        ]))
    }
}

/// Read an issue.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct GetIssueInput {
    /// The issue number.
    number: i64,
}

#[derive(Default, Clone)]
struct GetIssue(Arc<Mutex<Vec<i64>>>);

impl Tool for GetIssue {
    const NAME: &'static str = "get_issue";
    type Input = GetIssueInput;
    const OPENS: Option<burrow::tools::Opens> = Some(burrow::tools::Opens {
        argument: "number",
        items: burrow::tools::OpensItems::Issues,
    });
    fn run(&self, input: GetIssueInput) -> Result<ToolOutput, ToolError> {
        self.0.lock().unwrap().push(input.number);
        Ok(ToolOutput::new("Issue #918: Wallet crashes on close", ())
            .opening(Locator::issue_or_pr("acme/app", 918, false)))
    }
}

fn values() -> FieldValues {
    FieldValues {
        labels: vec!["Bug".into(), "Wallet".into()],
        openers: vec!["sjors".into(), "alice".into()],
        ..Default::default()
    }
}

fn agent_over<'a>(model: &'a FakeModel, tools: &'a ToolRegistry) -> Agent<'a> {
    Agent::new(
        model,
        tools,
        AgentConfig {
            protocol: Protocol::JsonTyped,
            max_steps: 6,
            route_first: true,
            field_values: values(),
            ..Default::default()
        },
    )
    .unwrap()
}

#[test]
fn a_routed_list_is_the_models_first_step_and_its_next_step_answers_from_it() {
    let search = Search::default();
    let issues = SearchIssues::default();
    let mut tools = ToolRegistry::new();
    tools.register(search.clone()).unwrap();
    tools.register(issues.clone()).unwrap();
    let model = FakeModel::new([
        FakeTurn::text(r#"{"tool":"search_issues","args":{"label":"Wallet","author":"sjors"}}"#),
        FakeTurn::text(&Protocol::JsonTyped.write_final(
            "Two.",
            &["acme/app#7", "acme/app#9"],
            "acme/app#7 and acme/app#9.",
        )),
    ]);
    let agent = agent_over(&model, &tools);
    let (outcome, _) = run(&agent, "Which wallet-labelled issues did sjors open?");
    assert_eq!(outcome.status, RunStatus::Succeeded, "{outcome:?}");
    let route = &outcome.steps[0];
    assert_eq!(route.origin, Origin::Route);
    assert!(!route.by_burrow());
    assert_eq!(
        route.action.as_ref().unwrap().args,
        *json!({"label": "Wallet", "author": "sjors"})
            .as_object()
            .unwrap()
    );
    assert_eq!(
        issues.0.lock().unwrap().as_slice(),
        [json!({"label": "Wallet", "author": "sjors"})]
    );
    assert!(
        search.0.lock().unwrap().is_empty(),
        "no search after a list"
    );
    // The route's conversation is its own: the task as data, a grammar of the named values.
    let requests = model.requests();
    assert!(requests[0]
        .untrusted
        .iter()
        .any(|u| u.contains("Which wallet-labelled issues")));
    let g =
        Grammar::JsonSchema(serde_json::from_str(requests[0].grammar.as_deref().unwrap()).unwrap());
    let route = |args: &str| format!(r#"{{"tool": "search_issues", "args": {args}}}"#);
    assert!(g
        .accepts(&route(r#"{"label": "Wallet", "author": "sjors"}"#))
        .unwrap());
    // A label or a person the task does not name cannot be chosen.
    assert!(!g.accepts(&route(r#"{"label": "Bug"}"#)).unwrap());
    assert!(!g.accepts(&route(r#"{"author": "alice"}"#)).unwrap());
    assert!(g.accepts(r#"{"tool": "search"}"#).unwrap());
    // The next step can only answer, and reads the list as the run's own step.
    let answer_grammar = requests[1].grammar.as_deref().unwrap();
    assert!(
        !answer_grammar.contains("search_issues"),
        "{answer_grammar}"
    );
    assert!(requests[1].prompt.contains("acme/app#7 [open] A"));
    assert!(
        requests[1]
            .prompt
            .contains(r#""tool_name": "search_issues""#),
        "{}",
        requests[1].prompt
    );
    assert_eq!(outcome.steps.len(), 2);
    assert_eq!(outcome.steps[1].citations.len(), 2);
}

#[test]
fn a_route_to_the_lookup_is_burrows_search_with_the_task() {
    let search = Search::default();
    let issues = SearchIssues::default();
    let opened = GetIssue::default();
    let mut tools = ToolRegistry::new();
    tools.register(search.clone()).unwrap();
    tools.register(issues.clone()).unwrap();
    tools.register(opened.clone()).unwrap();
    let model = FakeModel::new([
        FakeTurn::text(r#"{"tool":"search"}"#),
        FakeTurn::text("yes"),
        FakeTurn::text(&Protocol::JsonTyped.write_final("It.", &["acme/app#918"], "acme/app#918.")),
    ]);
    let agent = agent_over(&model, &tools);
    let task = "Which issue reports the wallet crash?";
    let (outcome, _) = run(&agent, task);
    assert_eq!(outcome.status, RunStatus::Succeeded, "{outcome:?}");
    assert_eq!(outcome.steps[0].origin, Origin::Route);
    let action = outcome.steps[0].action.as_ref().unwrap();
    assert_eq!(action.tool, "search");
    assert_eq!(action.args["query"], task);
    assert_eq!(search.0.lock().unwrap().as_slice(), [task]);
    // Its best match is opened next, as after Burrow's own search, and checked.
    assert_eq!(outcome.steps[1].origin, Origin::Open);
    assert_eq!(opened.0.lock().unwrap().as_slice(), [918]);
    assert!(outcome.steps[2].check().is_some_and(|c| c.answers));
    assert!(issues.0.lock().unwrap().is_empty());
}

#[test]
fn without_routes_the_run_starts_with_burrows_search() {
    let search = Search::default();
    let mut tools = ToolRegistry::new();
    tools.register(search.clone()).unwrap();
    let model = FakeModel::new([FakeTurn::text(&Protocol::JsonTyped.write_final(
        "It.",
        &["acme/app#918"],
        "acme/app#918.",
    ))]);
    let agent = Agent::new(
        &model,
        &tools,
        AgentConfig {
            route_first: false,
            field_values: values(),
            ..Default::default()
        },
    )
    .unwrap();
    let (outcome, _) = run(&agent, "Which issue reports the wallet crash?");
    assert_eq!(outcome.steps[0].origin, Origin::Search);
}

#[test]
fn a_quoting_answer_starts_with_a_line_the_tools_returned() {
    let issues = SearchIssues::default();
    let mut tools = ToolRegistry::new();
    tools.register(Search::default()).unwrap();
    tools.register(issues).unwrap();
    let quote = "2 issues labelled Wallet, opened by sjors.";
    let model = FakeModel::new([
        FakeTurn::text(r#"{"tool":"search_issues","args":{"label":"Wallet"}}"#),
        FakeTurn::text(&Protocol::JsonTyped.write_final(
            "Two.",
            &["acme/app#7"],
            &format!("{quote} Both are open."),
        )),
    ]);
    let agent = Agent::new(
        &model,
        &tools,
        AgentConfig {
            route_first: true,
            field_values: values(),
            quote_answers: Some(true),
            ..Default::default()
        },
    )
    .unwrap();
    let (outcome, _) = run(&agent, "How many issues labelled Wallet are there?");
    assert_eq!(
        outcome.final_answer.as_deref(),
        Some(&*format!("{quote} Both are open."))
    );
    let text = model.requests()[1].grammar.clone().unwrap();
    let g = Grammar::JsonSchema(serde_json::from_str(&text).unwrap());
    let answer =
        |final_text: &str| Protocol::JsonTyped.write_final("Two.", &["acme/app#7"], final_text);
    assert!(g.accepts(&answer(quote)).unwrap());
    assert!(g
        .accepts(&answer(&format!("{quote} acme/app#7 [open] A")))
        .unwrap());
    // A miscopied count is not a line the tool returned.
    assert!(!g
        .accepts(&answer("3 issues labelled Wallet, opened by sjors."))
        .unwrap());
    assert!(!g.accepts(&answer("There are 3 wallet issues.")).unwrap());
    // The head line leads; a later line may follow it, not stand in for it.
    assert!(g
        .accepts(&answer(&format!("{quote} acme/app#9 [open] B")))
        .unwrap());
    assert!(!g.accepts(&answer("acme/app#9 [open] B")).unwrap());
    // The model's own words hold no control characters.
    assert!(!g.accepts(&answer(&format!("{quote} a\r\tb"))).unwrap());
    assert!(!g.accepts(&answer(&format!("{quote} a\u{7f} b"))).unwrap());
    // Not a yes-or-no question: no verdict before the quote.
    assert!(!g.accepts(&answer(&format!("Yes. {quote}"))).unwrap());
}

#[test]
fn a_yes_or_no_task_is_answered_with_a_verdict_before_the_quote() {
    let mut tools = ToolRegistry::new();
    tools.register(Search::default()).unwrap();
    tools.register(SearchIssues::default()).unwrap();
    let quote = "2 issues labelled Wallet, opened by sjors.";
    let verdict = format!("No. {quote}");
    let model = FakeModel::new([
        FakeTurn::text(r#"{"tool":"search_issues","args":{"label":"Wallet"}}"#),
        FakeTurn::text(&Protocol::JsonTyped.write_final("Two.", &["acme/app#7"], &verdict)),
    ]);
    let agent = Agent::new(
        &model,
        &tools,
        AgentConfig {
            route_first: true,
            field_values: values(),
            quote_answers: Some(true),
            ..Default::default()
        },
    )
    .unwrap();
    let (outcome, _) = run(
        &agent,
        "The docs say there are no Wallet issues. Is that so, going by the issues labelled Wallet?",
    );
    assert_eq!(outcome.final_answer.as_deref(), Some(&*verdict));
    let text = model.requests()[1].grammar.clone().unwrap();
    let g = Grammar::JsonSchema(serde_json::from_str(&text).unwrap());
    let answer =
        |final_text: &str| Protocol::JsonTyped.write_final("Two.", &["acme/app#7"], final_text);
    assert!(g.accepts(&answer(&format!("Yes. {quote}"))).unwrap());
    // The verdict is asked for: the quote alone, or a verdict after it, is not an answer.
    assert!(!g.accepts(&answer(quote)).unwrap());
    assert!(!g.accepts(&answer(&format!("{quote} No."))).unwrap());
}

/// Search by words, whose best match is a file that uses a default set elsewhere.
#[derive(Default, Clone)]
struct CodeSearch;

impl Tool for CodeSearch {
    const NAME: &'static str = "search";
    type Input = crate::support::SearchInput;
    fn run(&self, _: crate::support::SearchInput) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::new(
            "2 results for the query:\n1. [code] acme/app src/search.rs:225\n2. [code] acme/app src/other.rs:3",
            (),
        )
        .with_items([
            Locator::file("acme/app", "src/search.rs", Some(225)),
            Locator::file("acme/app", "src/other.rs", Some(3)),
        ]))
    }
}

/// Read a file.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct ReadFileInput {
    /// The path.
    #[allow(dead_code)]
    path: String,
    #[serde(default)]
    #[allow(dead_code)]
    repo: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    start_line: Option<usize>,
    #[serde(default)]
    #[allow(dead_code)]
    end_line: Option<usize>,
}

struct ReadFile;

impl Tool for ReadFile {
    const NAME: &'static str = "read_file";
    type Input = ReadFileInput;
    const OPENS: Option<burrow::tools::Opens> = Some(burrow::tools::Opens {
        argument: "path",
        items: burrow::tools::OpensItems::File,
    });
    fn run(&self, _: ReadFileInput) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::new(
            "src/search.rs (lines 224-226 of 300):\n\
             224  if let Some(limit) = self.heap_limit {\n\
             225      let capacity = limit.min(DEFAULT_BUFFER_CAPACITY);\n\
             226  }",
            (),
        )
        .opening(Locator::file("acme/app", "src/search.rs", Some(224))))
    }
}

/// Find where a name is defined.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct FindSymbolInput {
    /// The name.
    name: String,
}

#[derive(Default, Clone)]
struct FindSymbol(Arc<Mutex<Vec<String>>>);

impl Tool for FindSymbol {
    const NAME: &'static str = "find_symbol";
    type Input = FindSymbolInput;
    fn run(&self, input: FindSymbolInput) -> Result<ToolOutput, ToolError> {
        self.0.lock().unwrap().push(input.name);
        Ok(ToolOutput::new(
            "`DEFAULT_BUFFER_CAPACITY` is defined in acme/app:src/buffer.rs (line 11) and used in acme/app:src/search.rs.\n\
             acme/app:src/buffer.rs:11: const DEFAULT_BUFFER_CAPACITY: usize = 64 * (1 << 10);\n\nmore",
            (),
        )
        .with_items([
            Locator::file("acme/app", "src/buffer.rs", Some(11)),
            Locator::file("acme/app", "src/search.rs", Some(225)),
        ]))
    }
}

fn follow_agent<'a>(model: &'a FakeModel, tools: &'a ToolRegistry) -> Agent<'a> {
    Agent::new(
        model,
        tools,
        AgentConfig {
            protocol: Protocol::JsonTyped,
            max_steps: 6,
            route_first: true,
            check_matches: Some(0),
            quote_answers: Some(true),
            ..Default::default()
        },
    )
    .unwrap()
}

#[test]
fn after_an_opened_file_the_model_follows_a_name_it_uses_to_its_definition() {
    let found = FindSymbol::default();
    let mut tools = ToolRegistry::new();
    tools.register(CodeSearch).unwrap();
    tools.register(ReadFile).unwrap();
    tools.register(found.clone()).unwrap();
    let lead = "`DEFAULT_BUFFER_CAPACITY` is defined in acme/app:src/buffer.rs (line 11) and used in acme/app:src/search.rs.";
    let value = "acme/app:src/buffer.rs:11: const DEFAULT_BUFFER_CAPACITY: usize = 64 * (1 << 10);";
    let final_text = format!("{lead} {value}");
    let model = FakeModel::new([
        FakeTurn::text(r#"{"tool":"search"}"#),
        FakeTurn::text(r#"{"tool": "find_symbol", "args": {"name": "DEFAULT_BUFFER_CAPACITY"}}"#),
        FakeTurn::text(&Protocol::JsonTyped.write_final(
            "Found.",
            &["acme/app:src/buffer.rs:11"],
            &final_text,
        )),
    ]);
    let agent = follow_agent(&model, &tools);
    let (outcome, _) = run(
        &agent,
        "What is the default capacity of the buffer, and which file defines it?",
    );
    assert_eq!(outcome.status, RunStatus::Succeeded, "{outcome:?}");
    let origins: Vec<&Origin> = outcome.steps.iter().map(|s| &s.origin).collect();
    assert_eq!(
        origins,
        [
            &Origin::Route,
            &Origin::Open,
            &Origin::Route,
            &Origin::Model
        ]
    );
    let hop = &outcome.steps[2];
    assert!(hop.call_by_model());
    assert_eq!(
        hop.action.as_ref().map(|a| a.tool.as_str()),
        Some("find_symbol")
    );
    assert_eq!(*found.0.lock().unwrap(), ["DEFAULT_BUFFER_CAPACITY"]);
    assert_eq!(outcome.final_answer.as_deref(), Some(&*final_text));
    // The hop could take only the names the opened lines use that share the task's words.
    let requests = model.requests();
    let schema = requests[1].grammar.clone().unwrap();
    assert!(schema.contains("DEFAULT_BUFFER_CAPACITY"));
    assert!(!schema.contains("heap_limit"));
    // The answer cites what its lead line names (where it is defined and used), not every
    // file the run saw.
    let answer_grammar = requests[2].grammar.clone().unwrap();
    assert!(answer_grammar.contains("acme/app:src/buffer.rs:11"));
    assert!(!answer_grammar.contains("src/other.rs"));
}

#[test]
fn a_task_that_asks_for_no_definition_is_answered_from_the_opened_file() {
    let found = FindSymbol::default();
    let mut tools = ToolRegistry::new();
    tools.register(CodeSearch).unwrap();
    tools.register(ReadFile).unwrap();
    tools.register(found.clone()).unwrap();
    let model = FakeModel::new([
        FakeTurn::text(r#"{"tool":"search"}"#),
        FakeTurn::text(&Protocol::JsonTyped.write_final(
            "Found.",
            &["acme/app:src/search.rs:224"],
            "src/search.rs (lines 224-226 of 300):",
        )),
    ]);
    let agent = follow_agent(&model, &tools);
    let (outcome, _) = run(&agent, "Which file caps the search's buffer at its limit?");
    assert_eq!(outcome.status, RunStatus::Succeeded, "{outcome:?}");
    let origins: Vec<&Origin> = outcome.steps.iter().map(|s| &s.origin).collect();
    assert_eq!(origins, [&Origin::Route, &Origin::Open, &Origin::Model]);
    assert!(found.0.lock().unwrap().is_empty());
}
