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
