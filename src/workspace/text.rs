//! Text handling for the index: identifier-aware search terms, languages, binary detection, and
//! the units files are split into (chunks of code, sections of documents).

/// Splits an identifier into its words: `parse_args`, `ParseArgs`, `parse-args` and
/// `HTTPServer2` give `[parse, args]`, `[parse, args]`, `[parse, args]`, `[http, server, 2]`.
pub fn identifier_parts(word: &str) -> Vec<String> {
    let mut parts = Vec::new();
    for piece in word.split(|c: char| !c.is_alphanumeric()) {
        let chars: Vec<char> = piece.chars().collect();
        let mut cur = String::new();
        for (i, &c) in chars.iter().enumerate() {
            let prev = i.checked_sub(1).map(|j| chars[j]);
            let next = chars.get(i + 1).copied();
            let boundary = match prev {
                None => false,
                Some(p) => {
                    (p.is_lowercase() && c.is_uppercase())
                        || (p.is_alphabetic() != c.is_alphabetic())
                        // The last capital of a run starts the next word: HTTPServer.
                        || (p.is_uppercase()
                            && c.is_uppercase()
                            && next.is_some_and(|n| n.is_lowercase()))
                }
            };
            if boundary && !cur.is_empty() {
                parts.push(cur.to_lowercase());
                cur.clear();
            }
            cur.push(c);
        }
        if !cur.is_empty() {
            parts.push(cur.to_lowercase());
        }
    }
    parts
}

/// Extra search terms for code: for every compound identifier, its words and its words joined.
/// With them, `parse_args`, `ParseArgs` and `parse` all find both spellings (the tokenizer
/// already splits `parse_args` at the underscore, but keeps `ParseArgs` whole).
pub fn identifier_terms(text: &str) -> String {
    let mut out = String::new();
    let mut seen = std::collections::HashSet::new();
    for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-')) {
        if word.len() < 3 || !seen.insert(word) {
            continue;
        }
        let parts = identifier_parts(word);
        if parts.len() < 2 {
            continue;
        }
        for p in &parts {
            out.push_str(p);
            out.push(' ');
        }
        out.push_str(&parts.concat());
        out.push('\n');
    }
    out
}

/// The language of a file, from its name.
pub fn language_of(path: &str) -> Option<&'static str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let lower = name.to_ascii_lowercase();
    let by_name = match lower.as_str() {
        "makefile" | "gnumakefile" => Some("make"),
        "dockerfile" => Some("dockerfile"),
        "cmakelists.txt" => Some("cmake"),
        "cargo.lock" => Some("toml"),
        _ => None,
    };
    if by_name.is_some() {
        return by_name;
    }
    let ext = lower.rsplit_once('.').map(|(_, e)| e)?;
    Some(match ext {
        "rs" => "rust",
        "py" | "pyi" => "python",
        "js" | "mjs" | "cjs" | "jsx" => "javascript",
        "ts" | "tsx" | "mts" => "typescript",
        "go" => "go",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" | "ipp" => "cpp",
        "java" => "java",
        "kt" | "kts" => "kotlin",
        "swift" => "swift",
        "m" | "mm" => "objective-c",
        "cs" => "csharp",
        "rb" => "ruby",
        "php" => "php",
        "scala" => "scala",
        "sh" | "bash" | "zsh" => "shell",
        "ps1" => "powershell",
        "lua" => "lua",
        "pl" | "pm" => "perl",
        "r" => "r",
        "sql" => "sql",
        "html" | "htm" => "html",
        "css" | "scss" | "sass" | "less" => "css",
        "vue" => "vue",
        "svelte" => "svelte",
        "json" => "json",
        "toml" => "toml",
        "yaml" | "yml" => "yaml",
        "xml" | "ui" | "qrc" | "ts.xml" => "xml",
        "md" | "markdown" | "mdx" => "markdown",
        "rst" => "restructuredtext",
        "adoc" | "asciidoc" => "asciidoc",
        "txt" => "text",
        "proto" => "protobuf",
        "cmake" => "cmake",
        "mk" => "make",
        "dart" => "dart",
        "ex" | "exs" => "elixir",
        "erl" | "hrl" => "erlang",
        "hs" => "haskell",
        "ml" | "mli" => "ocaml",
        "zig" => "zig",
        "nix" => "nix",
        "tf" => "terraform",
        "gradle" => "gradle",
        "ini" | "cfg" | "conf" => "ini",
        _ => return None,
    })
}

/// Whether a file is a document (indexed in sections at headings) rather than code.
pub fn is_document(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    let doc_ext = [".md", ".markdown", ".mdx", ".rst", ".txt", ".adoc"]
        .iter()
        .any(|e| name.ends_with(e));
    let doc_name = [
        "readme",
        "changelog",
        "contributing",
        "license",
        "copying",
        "authors",
        "news",
        "install",
    ]
    .iter()
    .any(|n| name == *n || name.starts_with(&format!("{n}.")));
    doc_ext || doc_name
}

/// Binary content: a NUL byte in the first 8 KiB (what git and ripgrep use).
pub fn looks_binary(bytes: &[u8]) -> bool {
    memchr::memchr(0, &bytes[..bytes.len().min(8192)]).is_some()
}

/// A searchable unit of a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Unit {
    /// First line of the unit, 1-based.
    pub line: usize,
    /// A heading (documents) or empty.
    pub title: String,
    pub text: String,
}

/// Lines per code chunk. Small enough that a match's chunk is a useful snippet and BM25 sees
/// local density; large enough to keep the index compact.
const CHUNK_LINES: usize = 40;

/// Splits source code into chunks of about `CHUNK_LINES` lines, preferring to break at a blank
/// line near the limit so a function is not cut in half when it need not be.
pub fn code_units(text: &str) -> Vec<Unit> {
    let lines: Vec<&str> = text.lines().collect();
    let mut units = Vec::new();
    let mut start = 0;
    while start < lines.len() {
        let hard_end = (start + CHUNK_LINES).min(lines.len());
        let mut end = hard_end;
        if hard_end < lines.len() {
            // Break where a block starts: after a blank line, before the least indented line
            // that follows one in the chunk's second half (an item with its doc comment, kept
            // whole: a function whose comment was cut from its body was found by neither).
            // Else after a blank line in the last quarter, else at the limit.
            let item = (start + CHUNK_LINES / 2..hard_end)
                .filter(|&i| {
                    i > start && lines[i - 1].trim().is_empty() && !lines[i].trim().is_empty()
                })
                .min_by_key(|&i| (indent(lines[i]), std::cmp::Reverse(i)));
            if let Some(i) = item {
                end = i;
            } else if let Some(blank) = (hard_end - CHUNK_LINES / 4..hard_end)
                .rev()
                .find(|&i| lines[i].trim().is_empty())
            {
                end = blank + 1;
            }
        }
        units.push(Unit {
            line: start + 1,
            title: String::new(),
            text: lines[start..end].join("\n"),
        });
        start = end;
    }
    units
}

/// The most characters of a file's outline (the most of a unit that is embedded).
const OUTLINE_CHARS: usize = 1_000;

/// Words that open a declaration, in the languages Burrow indexes as code.
const DECLARATIONS: &[&str] = &[
    "fn",
    "struct",
    "enum",
    "trait",
    "impl",
    "mod",
    "const",
    "static",
    "type",
    "macro_rules!",
    "union",
    "def",
    "class",
    "function",
    "func",
    "interface",
    "module",
    "package",
];

/// What a unit is of its file (`outline_unit`), as the indexer stores it (`docs.role`), so
/// the rule is kept in one place rather than read back from titles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// A part of a file (of a file in parts) or an item's unit that is not a file's.
    Part,
    /// A file's outline: ranked among outlines only, where it stands for its file.
    Outline,
    /// A file of one unit: a part, and its own outline.
    Whole,
    /// The lines a commit changed, beside its message's unit: searched by words only, with no
    /// vector (its message says what it is about; its lines, 1.4 MB of mostly code over
    /// ripgrep's history, would add about a fifth to an embedding pass of the workspace, and
    /// ranked worse with vectors when tried: docs/search.md).
    Changes,
}

impl Role {
    /// The role of unit `i` of a file cut in `parts` units, its outline last (after them).
    pub(crate) fn of_unit(i: usize, parts: usize) -> Role {
        match (i >= parts, parts) {
            (true, _) => Role::Outline,
            (false, 1) => Role::Whole,
            (false, _) => Role::Part,
        }
    }

    pub(crate) fn to_db(self) -> i64 {
        match self {
            Role::Part => 0,
            Role::Outline => 1,
            Role::Whole => 2,
            Role::Changes => 3,
        }
    }

    pub(crate) fn from_db(v: i64) -> Role {
        match v {
            1 => Role::Outline,
            2 => Role::Whole,
            3 => Role::Changes,
            _ => Role::Part,
        }
    }
}

/// A file's outline: its documentation comments and its declarations' first lines, in order,
/// as one unit (at the first of them). A question about what a file does is answered by the
/// file as a whole, which no 40-line part of it states: ranked by meaning among ripgrep's code
/// files, the outlines put the asked file higher than the best of its parts for 10 of 20
/// questions and lower for 1 (docs/measurements/search.md). None when nothing in the file looks
/// like documentation or a declaration.
pub fn outline_unit(text: &str) -> Option<Unit> {
    let mut first = None;
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        let Some(entry) = outline_entry(line) else {
            continue;
        };
        if entry.is_empty() {
            continue;
        }
        // One long entry (a table on one line) is left out, not the rest.
        if out.len() + entry.len() + 1 > OUTLINE_CHARS {
            continue;
        }
        first.get_or_insert(i + 1);
        out.push_str(entry);
        out.push('\n');
    }
    let line = first?;
    Some(Unit {
        line,
        title: "outline".into(),
        text: out.trim_end().to_string(),
    })
}

/// What a line gives an outline: a documentation comment's text, or a declaration indented one
/// level at most (a method; also a function local to a function, which indentation alone
/// cannot tell apart) without its opening brace.
fn outline_entry(line: &str) -> Option<&str> {
    let t = line.trim();
    for doc in ["//!", "///", "/**", "\"\"\""] {
        if let Some(rest) = t.strip_prefix(doc) {
            return Some(rest.trim_start_matches(['/', '!', '*']).trim());
        }
    }
    if indent(line) > 4 {
        return None;
    }
    let mut words = t.split_whitespace();
    let mut word = words.next()?;
    // Visibility and qualifiers before the keyword (`static` is one in Java, but it also opens
    // a declaration in Rust and C, so it is taken for one).
    while matches!(
        keyword(word),
        "pub"
            | "export"
            | "async"
            | "unsafe"
            | "extern"
            | "default"
            | "abstract"
            | "public"
            | "private"
            | "protected"
            | "final"
    ) {
        word = words.next()?;
    }
    DECLARATIONS
        .contains(&keyword(word))
        .then(|| t.trim_end_matches('{').trim_end())
}

/// A word without what follows a keyword unspaced: `pub(crate)`, `impl<T>`.
fn keyword(word: &str) -> &str {
    word.split(['(', '<']).next().unwrap_or(word)
}

/// A line's indentation in columns (a tab counts 4).
fn indent(line: &str) -> usize {
    line.chars()
        .take_while(|c| c.is_whitespace())
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

/// Splits a Markdown (or plain text) document at its headings; long sections are chunked.
pub fn document_units(text: &str) -> Vec<Unit> {
    let lines: Vec<&str> = text.lines().collect();
    let mut sections: Vec<(usize, String, Vec<&str>)> = Vec::new();
    let mut in_fence = false;
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
        }
        let heading = (!in_fence && trimmed.starts_with('#'))
            .then(|| {
                let hashes = trimmed.chars().take_while(|&c| c == '#').count();
                let rest = &trimmed[hashes..];
                (hashes <= 6 && (rest.is_empty() || rest.starts_with(' ')))
                    .then(|| rest.trim().trim_end_matches('#').trim().to_string())
            })
            .flatten();
        match heading {
            Some(h) => sections.push((i + 1, h, vec![line])),
            None => match sections.last_mut() {
                Some(s) => s.2.push(line),
                None => sections.push((1, String::new(), vec![line])),
            },
        }
    }
    let mut units = Vec::new();
    for (line, title, body) in sections {
        let text = body.join("\n");
        if body.len() <= CHUNK_LINES * 2 {
            units.push(Unit { line, title, text });
        } else {
            for u in code_units(&text) {
                units.push(Unit {
                    line: line + u.line - 1,
                    title: title.clone(),
                    text: u.text,
                });
            }
        }
    }
    units
}

/// Common words that may stand inside a long form without a letter of its abbreviation
/// ("Bureau of Labor Statistics (BLS)"), never at its ends.
const LINKING_WORDS: &[&str] = &["a", "an", "and", "for", "in", "of", "on", "or", "the", "to"];

/// The longest abbreviation taken, in characters.
const ABBREVIATION_CHARS: usize = 8;

/// The longest word of a long form, in bytes: no word of a definition is longer, and a long
/// form goes into queries.
const LONG_FORM_WORD_CHARS: usize = 40;

/// The abbreviations a text defines, each with its long form, both lowercase, the long form's
/// words (split as the index splits them) joined by spaces: the long form written just before
/// the abbreviation in parentheses, "Byte-Order Mark (BOM)", or in parentheses just after it,
/// "BOM (byte order mark)". An abbreviation is one word of 2 to 8 characters with two capitals
/// at least (so "(fn)" or "(s)" is none; a plural "PRs" gives "pr"), spelled by the initials of
/// the long form's words, where the linking words inside the long form all give their letter
/// ("DoD") or none does ("BLS"). Used to search for one where the other is asked for.
pub fn abbreviations(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut from = 0;
    while let Some(at) = text[from..].find('(') {
        let open = from + at;
        from = open + 1;
        let Some(len) = text[from..].find([')', '(', '\n']) else {
            break;
        };
        if text[from + len..].starts_with(')') {
            let inner = text[from..from + len].trim();
            let found =
                long_before(&text[..open], inner).or_else(|| long_inside(&text[..open], inner));
            // Lowercasing can give what is no letter ("İ" is "i" and a combining dot): such a
            // pair could not go into a query, so it is not recorded.
            if let Some(pair) = found.filter(|(a, l)| is_plain_definition(a, l)) {
                if seen.insert(pair.clone()) {
                    out.push(pair);
                }
            }
        }
    }
    out
}

/// Whether `abbr` and `long` are a definition as `abbreviations` writes it: letters and
/// digits without capitals, `abbr` one word, `long` words joined by single spaces. What goes
/// into a search's query from the workspace's table of abbreviations must be (each is quoted
/// as an FTS5 phrase, and nothing in it may be syntax).
pub fn is_plain_definition(abbr: &str, long: &str) -> bool {
    let plain = |s: &str| {
        !s.is_empty()
            && !s.starts_with(' ')
            && !s.ends_with(' ')
            && !s.contains("  ")
            && s.chars()
                .all(|c| c == ' ' || (c.is_alphanumeric() && !c.is_uppercase()))
    };
    plain(abbr) && !abbr.contains(' ') && plain(long)
}

/// `word` as an abbreviation, lowercase: 2 to 8 letters and digits, starting with a capital,
/// with two capitals at least, a plural's `s` dropped.
fn as_abbreviation(word: &str) -> Option<String> {
    let word = match word.strip_suffix('s') {
        Some(w) if w.chars().count() >= 2 => w,
        _ => word,
    };
    let n = word.chars().count();
    ((2..=ABBREVIATION_CHARS).contains(&n)
        && word.chars().all(char::is_alphanumeric)
        && word.starts_with(|c: char| c.is_uppercase())
        && word.chars().filter(|c| c.is_uppercase()).count() >= 2)
        .then(|| word.to_lowercase())
}

/// Whether `words` spell `abbr` by their initials, each word one letter, the linking words
/// inside all with their letter or none. A word longer than `LONG_FORM_WORD_CHARS` is no
/// word of a long form.
fn spells(words: &[&str], abbr: &str) -> bool {
    let first = |w: &&str| {
        w.chars()
            .next()
            .map(|c| c.to_lowercase().collect::<String>())
    };
    let linking = |w: &&str| LINKING_WORDS.contains(&w.to_lowercase().as_str());
    if words.len() < 2
        || !words
            .iter()
            .all(|w| w.starts_with(char::is_alphabetic) && w.len() <= LONG_FORM_WORD_CHARS)
        || words.first().is_some_and(linking)
        || words.last().is_some_and(linking)
    {
        return false;
    }
    let every: Option<String> = words.iter().map(first).collect();
    let content: Option<String> = words.iter().filter(|w| !linking(w)).map(first).collect();
    every.as_deref() == Some(abbr) || content.as_deref() == Some(abbr)
}

/// "Long Form (ABBR)": `inner` is the abbreviation, and the words right before the parenthesis
/// spell it.
fn long_before(before: &str, inner: &str) -> Option<(String, String)> {
    let abbr = as_abbreviation(inner)?;
    if !before.ends_with(|c: char| c.is_whitespace()) {
        return None;
    }
    let words: Vec<&str> = before
        .rsplit(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(abbr.chars().count() + 3)
        .collect();
    (abbr.chars().count()..=words.len()).find_map(|n| {
        let run: Vec<&str> = words[..n].iter().rev().copied().collect();
        spells(&run, &abbr).then(|| (abbr.clone(), run.join(" ").to_lowercase()))
    })
}

/// "ABBR (long form)": the word right before the parenthesis is the abbreviation, and `inner`
/// spells it.
fn long_inside(before: &str, inner: &str) -> Option<(String, String)> {
    let trimmed = before.trim_end();
    if trimmed.len() == before.len() {
        return None;
    }
    let word = trimmed.rsplit(|c: char| !c.is_alphanumeric()).next()?;
    let abbr = as_abbreviation(word)?;
    let words: Vec<&str> = inner
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    (words.len() <= abbr.chars().count() + 3 && spells(&words, &abbr))
        .then(|| (abbr, words.join(" ").to_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file's outline: its doc comments and its declarations (indented one level at most,
    /// without the opening brace), from the first, capped to what is embedded of a unit.
    #[test]
    fn an_outline_holds_doc_comments_and_declarations_in_order() {
        let text = "use std::io;\n\n//! The crate's walker.\n\n/// Walks a tree.\npub(crate) fn walk(root: &Path) -> Result<()> {\n    let x = 1;\n    fn local() {}\n}\n\nimpl Walker {\n    pub fn new() -> Self {\n        Walker\n    }\n}\n\ndef helper():\n    \"\"\"Python too.\nexport default function main() {\npublic static void run(String[] a) {\nunsafe impl<T: Send> Send for Walker<T> {}\n";
        let u = outline_unit(text).unwrap();
        assert_eq!(u.line, 3);
        assert_eq!(u.title, "outline");
        assert_eq!(
            u.text,
            "The crate's walker.\nWalks a tree.\npub(crate) fn walk(root: &Path) -> Result<()>\nfn local() {}\nimpl Walker\npub fn new() -> Self\ndef helper():\nPython too.\nexport default function main()\npublic static void run(String[] a)\nunsafe impl<T: Send> Send for Walker<T> {}"
        );
        assert_eq!(outline_unit("let x = 1;\nx + 1\n// a comment\n"), None);
        let long: String = (0..500).map(|i| format!("fn f{i}() {{}}\n")).collect();
        let u = outline_unit(&long).unwrap();
        assert!(
            u.text.len() <= OUTLINE_CHARS && u.text.ends_with('}'),
            "{}",
            u.text
        );
        // A declaration too long for the outline is left out, not what follows it.
        let table = format!(
            "const T: &[u8] = &[{}];\nfn after() {{}}\n",
            "1, ".repeat(600)
        );
        assert_eq!(outline_unit(&table).unwrap().text, "fn after() {}");
    }

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(identifier_parts("parse_args"), ["parse", "args"]);
        assert_eq!(identifier_parts("ParseArgs"), ["parse", "args"]);
        assert_eq!(identifier_parts("parseArgs"), ["parse", "args"]);
        assert_eq!(identifier_parts("parse-args"), ["parse", "args"]);
        assert_eq!(identifier_parts("HTTPServer2"), ["http", "server", "2"]);
        assert_eq!(identifier_parts("x"), ["x"]);
        assert_eq!(identifier_parts("ÜberSchall"), ["über", "schall"]);
    }

    #[test]
    fn terms_cover_both_spellings() {
        let t = identifier_terms("fn ParseArgs() { parse_args(); x }");
        assert!(t.contains("parse args parseargs"), "{t}");
        assert!(!t.contains("fn"), "{t}");
    }

    #[test]
    fn languages_and_documents() {
        assert_eq!(language_of("src/main.rs"), Some("rust"));
        assert_eq!(language_of("a/B.CPP"), Some("cpp"));
        assert_eq!(language_of("Makefile"), Some("make"));
        assert_eq!(language_of("LICENSE"), None);
        assert!(
            is_document("README.md") && is_document("docs/guide.rst") && is_document("LICENSE")
        );
        assert!(!is_document("src/readme_parser.rs"));
    }

    #[test]
    fn binary_detection() {
        assert!(looks_binary(b"abc\0def"));
        assert!(!looks_binary("héllo".as_bytes()));
    }

    #[test]
    fn code_is_chunked_at_blank_lines() {
        let text: String = (1..=100)
            .map(|i| {
                if i % 35 == 0 {
                    String::new()
                } else {
                    format!("line {i}")
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        let units = code_units(&text);
        assert_eq!(units[0].line, 1);
        // The blank line 35 is within the last quarter of the first chunk: the break follows it.
        assert_eq!(units[1].line, 36);
        let total: usize = units.iter().map(|u| u.text.split('\n').count()).sum();
        assert_eq!(total, 100);
    }

    /// Issue 18: a function's doc comment and its body were cut into two units at the 40-line
    /// limit, and neither was found by a question about what the function does (ripgrep's
    /// `parse_human_readable_size`). A chunk now ends before the least indented block that
    /// follows a blank line in its second half.
    #[test]
    fn code_is_chunked_before_an_item_and_its_doc_comment() {
        let mut lines = vec!["fn a() {".to_string()];
        lines.extend((2..=20).map(|i| format!("    let x{i} = {i};")));
        lines.push(String::new()); // 21
        lines.extend((22..=28).map(|i| format!("    let y{i} = {i};")));
        lines.push("}".into()); // 29
        lines.push(String::new()); // 30
        lines.push("/// Parses a size such as 2M.".into()); // 31
        lines.push("fn b() {".into());
        lines.extend((33..=50).map(|i| format!("    let z{i} = {i};")));
        lines.push("}".into());
        let units = code_units(&lines.join("\n"));
        assert_eq!(units[0].line, 1);
        assert_eq!(units[1].line, 31, "{units:#?}");
        assert!(units[1].text.starts_with("/// Parses") && units[1].text.contains("fn b()"));
        let total: usize = units.iter().map(|u| u.text.split('\n').count()).sum();
        assert_eq!(total, lines.len());
    }

    #[test]
    fn documents_split_at_headings_outside_code_fences() {
        let md =
            "intro\n# Install\nrun it\n```\n# not a heading\n```\n## Usage ##\nuse it\n#hashtag";
        let units = document_units(md);
        let titles: Vec<&str> = units.iter().map(|u| u.title.as_str()).collect();
        assert_eq!(titles, ["", "Install", "Usage"]);
        assert_eq!(units[1].line, 2);
        assert_eq!(units[2].line, 7);
        assert!(units[2].text.contains("#hashtag"));
    }

    #[test]
    fn abbreviations_are_what_the_text_defines_beside_their_long_form() {
        let got = abbreviations(
            "/// Skip a Byte-Order Mark (BOM) at the beginning of the file.\n\
             A PSBT (Partially Signed Bitcoin Transaction) file; open PSBTs. \
             The Department of Defense (DoD), the Bureau of Labor Statistics (BLS), \
             pull requests (PRs).",
        );
        assert_eq!(
            got,
            [
                ("bom".to_string(), "byte order mark".to_string()),
                ("psbt".into(), "partially signed bitcoin transaction".into()),
                ("dod".into(), "department of defense".into()),
                ("bls".into(), "bureau of labor statistics".into()),
                ("pr".into(), "pull requests".into()),
            ]
        );
        // Not definitions: a call, a plural marker, lowercase or unspelled words in
        // parentheses, a word that starts with a digit, parentheses that do not close.
        for text in [
            "let n = file_name(FN);",
            "the file name (fn) here",
            "one or more file(s)",
            "Byte Order Mark (BOB)",
            "see the Foo Bar (FB",
            "UTF 8 Mark (U8M)",
            "the pull request (The PR)",
            "x (of Pull Request)",
        ] {
            assert_eq!(abbreviations(text), [], "{text}");
        }
        // Lowercased, a dotted capital I is an i and a combining dot, no letter: no pair.
        assert_eq!(abbreviations("İBB (İstanbul Big Bridge)"), []);
        // Any text: unclosed and nested parentheses, letters of several bytes.
        assert_eq!(abbreviations("(((( ) (É) ((x"), []);
        assert_eq!(
            abbreviations("Ωmega Ärger (ΩÄ)"),
            [("ωä".to_string(), "ωmega ärger".to_string())]
        );
    }
}
