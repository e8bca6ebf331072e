//! Entry points for fuzzing: `fuzz/fuzz_targets/*.rs` call these under cargo-fuzz (nightly,
//! `scripts/fuzz.sh`), and `tests/fuzz_corpus.rs` replays the corpora through them on stable.
//! Each gives arbitrary bytes to one reader of outside input and checks what must hold whatever
//! the input: it returns (no panic, no hang, no abort), with a typed error when the input is
//! bad, and whatever it builds from the input is usable (a search expression SQLite accepts).

use std::path::Path;

/// The GGUF header reader: every length and count in the header is checked against the
/// file's size before anything is allocated for it.
pub fn gguf_header(data: &[u8]) {
    let _ =
        crate::llm::gguf::GgufHeader::from_reader(Path::new("fuzz.gguf"), data, data.len() as u64);
}

/// Issue and pull request exports, in every format the importer knows (GitHub REST, `gh`
/// output, github-metadata-backup files: the format is read from each record's shape, so one
/// target covers them all, seeded with each).
pub fn import(data: &[u8]) {
    let _ = crate::workspace::import::read_bytes(Path::new("fuzz.json"), data);
}

/// The five protocols' step parsers and the tolerant JSON reader they share.
pub fn protocol(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for p in crate::agent::protocol::PROTOCOLS {
        let _ = p.parse(text);
    }
    let _ = crate::agent::protocol::extract_object(text);
}

/// A chat template from a downloaded GGUF, rendered with a conversation that has a system
/// message, tools and a tool call: fuel and the output cap stop what would not end.
pub fn template(data: &[u8]) {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(template) = crate::llm::template::ChatTemplate::new(source) else {
        return;
    };
    let ctx = serde_json::json!({
        "messages": [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "Which issue?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": "search", "arguments": {"query": "crash"}}}
            ]},
            {"role": "tool", "content": "#12 crash on exit", "name": "search"}
        ],
        "tools": [{"type": "function", "function": {"name": "search", "description": "Search.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}],
        "add_generation_prompt": true,
        "bos_token": "<s>",
        "eos_token": "</s>"
    });
    let _ = template.render_json(&ctx);
}

/// The calculator the agent's `calculate` tool runs.
pub fn calculate(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = crate::tools::calculate::calculate(text);
    }
}

/// What a user or a model types into search, as the FTS5 expression it becomes: SQLite must
/// accept it whatever was typed (query syntax in the input is text). The same text read as a
/// unit's for the abbreviations it defines: each pair is plain words, which a search quotes as
/// FTS5 phrases that SQLite must accept too.
pub fn search_query(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    thread_local! {
        static DB: Option<rusqlite::Connection> = crate::workspace::db::open_in_memory().ok();
    }
    let accepted = |expr: &str| {
        DB.with(|db| match db {
            Some(db) => db
                .query_row(
                    "SELECT count(*) FROM docs_fts WHERE docs_fts MATCH ?1",
                    [expr],
                    |r| r.get::<_, i64>(0),
                )
                .err(),
            None => None,
        })
    };
    for (abbr, long) in crate::workspace::text::abbreviations(text) {
        assert!(
            crate::workspace::text::is_plain_definition(&abbr, &long),
            "{text:?} defined {abbr:?} as {long:?}"
        );
        for phrase in [abbr, long] {
            if let Some(e) = accepted(&format!("\"{phrase}\"")) {
                panic!("{text:?} defined {phrase:?}, which FTS5 refuses as a phrase: {e}");
            }
        }
    }
    let Some(expr) = crate::workspace::search::query::fts_expression(text) else {
        return;
    };
    if let Some(e) = accepted(&expr) {
        panic!("{text:?} became {expr:?}, which FTS5 refuses: {e}");
    }
}
