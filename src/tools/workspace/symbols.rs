//! `find_symbol`: where a name (a function, type, constant) is defined, where a field of that
//! name is given a literal value, and which files use it.

use std::fmt::Write as _;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::tools::{Locator, Tool, ToolError, ToolOutput};
use crate::workspace::grep::{GrepHit, GrepQuery};
use crate::workspace::Workspace;

/// Lines a definition or a use is looked for in at most: the uses of a common name are many.
const MAX_LINES: usize = 400;
/// Files using the name listed at most.
const MAX_FILES: usize = 12;
/// Lines that give the name a value listed at most.
const MAX_SET: usize = 5;

/// Find where a name of code is defined, where a field of that name is given a value (a
/// default), and the files that use it.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FindSymbolInput {
    /// The name as the code writes it.
    #[schemars(length(max = 80))]
    pub name: String,
    #[serde(default)]
    pub repo: Option<String>,
}

/// The words that introduce a definition, in the languages indexed most.
const DEFINERS: &[&str] = &[
    "fn",
    "struct",
    "enum",
    "trait",
    "type",
    "union",
    "const",
    "static",
    "mod",
    "macro_rules!",
    "class",
    "def",
    "func",
    "function",
    "interface",
    "let",
    "var",
];

/// Whether `word` introduces a definition (`const`, `fn`, `class` …).
pub fn is_definer(word: &str) -> bool {
    DEFINERS.contains(&word)
}

/// `DEFINERS` as a regular expression's group.
fn definers() -> String {
    let words: Vec<String> = DEFINERS.iter().map(|w| regex::escape(w)).collect();
    format!("({})", words.join("|"))
}

pub struct FindSymbol(pub Arc<Workspace>);

impl Tool for FindSymbol {
    const NAME: &'static str = "find_symbol";
    type Input = FindSymbolInput;

    fn run(&self, i: FindSymbolInput) -> Result<ToolOutput, ToolError> {
        let name = i
            .name
            .trim()
            .trim_matches('`')
            .trim_end_matches("()")
            .to_string();
        if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
            return Err(ToolError::InvalidArguments(format!(
                "{name:?} is not a name: give one identifier, like is_readable_stdin"
            )));
        }
        let grep = |pattern: String| {
            self.0.grep(&GrepQuery {
                pattern,
                regex: true,
                case_sensitive: true,
                repo: i.repo.clone(),
                path: None,
                limit: MAX_LINES,
            })
        };
        let defined = grep(format!(r"\b{}\s+{name}\b", definers()))?;
        // `let` and `var` bind a local; they count only where nothing else defines the name.
        let strong: Vec<&GrepHit> = defined
            .hits
            .iter()
            .filter(|h| !is_local(&h.text, &name))
            .collect();
        let definitions: Vec<&GrepHit> = if strong.is_empty() {
            defined.hits.iter().collect()
        } else {
            strong
        };
        let set = grep(set_pattern(&name))?;
        // A value set outside the tests first: a test's literal is not the default.
        let mut set: Vec<&GrepHit> = set.hits.iter().collect();
        set.sort_by_key(|h| is_test_path(&h.path));
        let used = grep(format!(r"\b{name}\b"))?;
        let mut files: Vec<(String, String, Vec<&GrepHit>)> = Vec::new();
        for h in &used.hits {
            if definitions
                .iter()
                .any(|d| d.repo == h.repo && d.path == h.path && d.line == h.line)
            {
                continue;
            }
            match files
                .iter_mut()
                .find(|(r, p, _)| *r == h.repo && *p == h.path)
            {
                Some((_, _, lines)) => lines.push(h),
                None => files.push((h.repo.clone(), h.path.clone(), vec![h])),
            }
        }
        // Files other than the definitions' first: the question is most often who else uses it.
        let defining: Vec<(&str, &str)> = definitions
            .iter()
            .map(|d| (d.repo.as_str(), d.path.as_str()))
            .collect();
        files.sort_by_key(|(r, p, lines)| {
            (
                defining.contains(&(r.as_str(), p.as_str())),
                std::cmp::Reverse(lines.len()),
            )
        });
        let others = files
            .iter()
            .filter(|(r, p, _)| !defining.contains(&(r.as_str(), p.as_str())))
            .count();
        // The answer in the first line, which small models copy: where it is defined, and the
        // file that uses it most.
        let mut out = String::new();
        let first_user = files
            .iter()
            .find(|(r, p, _)| !defining.contains(&(r.as_str(), p.as_str())));
        // A field given a literal value (a `Default` impl's `size_limit: 100 * (1 << 20),`) is
        // what a question about a default asks: where no definer names a field, and where a
        // builder's method of the same name is what defines it, the value was in no line shown.
        if let Some(v) = set.first() {
            let _ = write!(
                out,
                "`{name}` is set to `{}` in {}:{} (line {})",
                set_value(&v.text, &name),
                v.repo,
                v.path,
                v.line
            );
            match definitions.first() {
                Some(d) => {
                    let _ = writeln!(out, "; defined in {}:{} (line {}).", d.repo, d.path, d.line);
                }
                None => out.push_str(".\n"),
            }
            out.push('\n');
        } else if let Some(d) = definitions.first() {
            // With the defining line (a constant's value, a function's signature): an answer
            // quotes the first line whole, and Qwen2.5-Coder-0.5B quoted no second one.
            let _ = write!(
                out,
                "`{name}` is defined in {}:{} (line {}) as `{}`",
                d.repo,
                d.path,
                d.line,
                clip(&d.text)
            );
            match first_user {
                Some((r, p, _)) => {
                    let _ = writeln!(out, ", and used in {r}:{p}.");
                }
                None => out.push_str(".\n"),
            }
            // A blank line ends the head, which is what an answer quotes.
            out.push('\n');
        }
        if definitions.is_empty() {
            let _ = writeln!(out, "No definition of `{name}` in the indexed files.");
        } else {
            let _ = writeln!(out, "`{name}` is defined in:");
            for d in &definitions {
                let _ = writeln!(out, "  {}", listed(d));
            }
        }
        if !set.is_empty() {
            let _ = writeln!(out, "`{name}` is given a value in:");
            for v in set.iter().take(MAX_SET) {
                let _ = writeln!(out, "  {}", listed(v));
            }
        }
        if files.is_empty() {
            let _ = writeln!(out, "No other line uses `{name}`.");
        } else {
            let _ = writeln!(
                out,
                "Used in {others} other file{}{}:",
                if others == 1 { "" } else { "s" },
                if used.truncated { " (at least)" } else { "" }
            );
            for (repo, path, lines) in files.iter().take(MAX_FILES) {
                let _ = writeln!(
                    out,
                    "  {repo}:{path} ({} line{}), line {}: {}",
                    lines.len(),
                    if lines.len() == 1 { "" } else { "s" },
                    lines[0].line,
                    clip(&lines[0].text)
                );
            }
            if files.len() > MAX_FILES {
                let _ = writeln!(out, "  and {} more files", files.len() - MAX_FILES);
            }
        }
        let items =
            set.iter()
                .take(1)
                .chain(definitions.iter())
                .map(|d| Locator::file(&d.repo, &d.path, usize::try_from(d.line).ok()))
                .chain(
                    files.iter().take(MAX_FILES).map(|(r, p, lines)| {
                        Locator::file(r, p, usize::try_from(lines[0].line).ok())
                    }),
                )
                .collect::<Vec<_>>();
        let data = serde_json::json!({
            "definitions": definitions,
            "uses": files.iter().map(|(r, p, l)| serde_json::json!({"repo": r, "path": p, "lines": l.len()})).collect::<Vec<_>>(),
        });
        Ok(ToolOutput::new(out, &data).with_items(items))
    }
}

/// A line that gives a field `name` a literal value in a struct's literal: a number, a
/// boolean, a string or character, or `Some` of one (`size_limit: 100 * (1 << 20),`,
/// `require_git: true,`). Not a field's declaration (`size_limit: usize,`), nor a value taken
/// from elsewhere (`size_limit: self.size_limit,`).
fn set_pattern(name: &str) -> String {
    let literal = r#"(-?[0-9]|true\b|false\b|"|b"|')"#;
    format!(r"^\s*{name}\s*:\s*({literal}|Some\(\s*{literal})")
}

/// The value of a line `set_pattern` found: what follows `name:`, without the line's comma
/// and comment.
fn set_value(line: &str, name: &str) -> String {
    let after = line.trim_start().strip_prefix(name).unwrap_or(line);
    let value = after.trim_start().trim_start_matches(':').trim();
    let value = value.split(" //").next().unwrap_or(value).trim_end();
    clip(value.strip_suffix(',').unwrap_or(value))
}

fn is_test_path(path: &str) -> bool {
    path.split('/')
        .any(|part| part == "tests" || part == "test" || part.ends_with("_test.rs"))
}

/// A found line as the lists show it: `repo:path:line: text`.
fn listed(h: &GrepHit) -> String {
    format!("{}:{}:{}: {}", h.repo, h.path, h.line, clip(&h.text))
}

fn is_local(line: &str, name: &str) -> bool {
    let t = line.trim_start();
    [
        format!("let {name}"),
        format!("let mut {name}"),
        format!("var {name}"),
    ]
    .iter()
    .any(|p| t.starts_with(p.as_str()))
}

fn clip(line: &str) -> String {
    let t = line.trim();
    if t.chars().count() <= 120 {
        t.to_string()
    } else {
        format!("{}…", t.chars().take(120).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::{is_local, set_pattern, set_value};

    #[test]
    fn a_field_given_a_literal_is_a_value_set_and_a_declaration_is_not() {
        let re = regex::Regex::new(&set_pattern("size_limit")).unwrap();
        for set in [
            "            size_limit: 100 * (1 << 20),",
            "size_limit: Some(10),",
            "  size_limit: true,",
            "  size_limit: \"ten\",",
        ] {
            assert!(re.is_match(set), "{set}");
        }
        for not in [
            "    size_limit: usize,",
            "    pub size_limit: Option<usize>,",
            "    size_limit: self.size_limit,",
            "    dfa_size_limit: 10,",
            "    let size_limit = 10;",
        ] {
            assert!(!re.is_match(not), "{not}");
        }
        assert_eq!(
            set_value("    size_limit: 100 * (1 << 20), // 100 MB", "size_limit"),
            "100 * (1 << 20)"
        );
    }

    #[test]
    fn a_let_binding_is_a_local_not_a_definition() {
        assert!(is_local("    let mut builder = x;", "builder"));
        assert!(!is_local("pub fn builder() {}", "builder"));
    }
}
