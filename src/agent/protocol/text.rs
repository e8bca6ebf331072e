//! The `text` dialect: `Thought:` / `Action:` / `Args:` lines, or `Thought:` / `Final Answer:`.

use serde_json::Map;

use super::json::extract_object;
use super::{Action, Decision, FinalStatus, Step};

/// The label at the start of a line (`Thought:`, `Action Input:`...), lowercased, and the rest.
fn label(line: &str) -> Option<(String, &str)> {
    let line = line.trim_start().trim_start_matches(['*', '#', ' ']);
    let (head, rest) = line.split_once(':')?;
    let head = head
        .trim()
        .trim_end_matches('*')
        .trim()
        .to_ascii_lowercase();
    matches!(
        head.as_str(),
        "thought"
            | "action"
            | "args"
            | "action input"
            | "arguments"
            | "final answer"
            | "citations"
            | "observation"
    )
    .then(|| (head, rest.trim_start_matches('*').trim_start()))
}

pub(super) fn parse_text(output: &str) -> Result<Step, String> {
    let mut thought = String::new();
    let mut action: Option<String> = None;
    let mut args = String::new();
    let mut answer: Option<String> = None;
    let mut citations: Vec<String> = Vec::new();
    let mut current = "";
    for line in output.lines() {
        if let Some((head, rest)) = label(line) {
            match head.as_str() {
                // One step per response: what the model imagines after its action is not read.
                "observation" => break,
                "thought" if action.is_none() && answer.is_none() => {
                    thought = rest.to_string();
                    current = "thought";
                }
                "action" if answer.is_none() => {
                    if action.is_some() {
                        break;
                    }
                    action = Some(rest.trim().trim_matches('`').to_string());
                    current = "action";
                }
                "args" | "action input" | "arguments" if action.is_some() => {
                    if !args.is_empty() {
                        break;
                    }
                    args = rest.to_string();
                    current = "args";
                }
                "citations" if action.is_none() && answer.is_none() => {
                    citations = rest
                        .split(',')
                        .map(|c| c.trim().trim_matches('`').to_string())
                        .filter(|c| !c.is_empty() && !c.eq_ignore_ascii_case("none"))
                        .collect();
                    current = "citations";
                }
                "final answer" if action.is_none() => {
                    answer = Some(rest.to_string());
                    current = "answer";
                }
                _ => break,
            }
            continue;
        }
        let target = match current {
            "thought" => &mut thought,
            "args" => &mut args,
            "answer" => match answer.as_mut() {
                Some(a) => a,
                None => continue,
            },
            _ => continue,
        };
        target.push('\n');
        target.push_str(line);
    }
    let thought = thought.trim().to_string();
    let decision = match (action, answer) {
        (Some(tool), _) if !tool.is_empty() => {
            let args = args.trim();
            let args = if args.is_empty() {
                Map::new()
            } else {
                extract_object(args).map_err(|e| format!("Args: {e}"))?
            };
            Decision::Act(Action { tool, args })
        }
        (Some(_), _) => return Err("\"Action:\" names no tool".into()),
        (None, Some(answer)) => Decision::Finish {
            answer: answer.trim().to_string(),
            status: FinalStatus::Completed,
            citations,
        },
        (None, None) => {
            return Err("found neither \"Action:\" nor \"Final Answer:\"".into());
        }
    };
    Ok(Step {
        thought,
        decision,
        todo: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::tests::{act, done};
    use crate::agent::protocol::Protocol;
    use serde_json::json;

    #[test]
    fn text_reads_one_step_and_ignores_an_imagined_observation() {
        let s = Protocol::Text
            .parse(
                "Thought: I should search\nfor the crash.\nAction: search\nArgs: {\"query\":\n \"crash\"}\nObservation: made up\nThought: more",
            )
            .unwrap();
        assert_eq!(s.thought, "I should search\nfor the crash.");
        assert_eq!(s.decision, act("search", json!({"query": "crash"})));
        let s = Protocol::Text
            .parse("Thought: done\nFinal Answer: The crash is #918.\nIt was fixed.")
            .unwrap();
        assert_eq!(
            s.decision,
            done("The crash is #918.\nIt was fixed.", FinalStatus::Completed)
        );
        let s = Protocol::Text
            .parse("Thought: found it\nCitations: o/r#918, r:src/a.rs:3\nFinal Answer: #918.")
            .unwrap();
        let Decision::Finish { citations, .. } = s.decision else {
            panic!("{:?}", s.decision)
        };
        assert_eq!(citations, ["o/r#918", "r:src/a.rs:3"]);
        // LangChain's spelling and markdown bold are read too.
        let s = Protocol::Text
            .parse("**Thought:** x\n**Action:** `list_repositories`\nAction Input: {}")
            .unwrap();
        assert_eq!(s.decision, act("list_repositories", json!({})));
        let e = Protocol::Text.parse("I think the answer is 4").unwrap_err();
        assert!(e.to_string().contains("Final Answer:"), "{e}");
    }

    #[test]
    fn a_text_step_stops_before_an_observation_however_the_stream_is_cut() {
        use crate::llm::stream::StopMatcher;
        let text = "Thought: x\nAction: search\nArgs: {\"query\": \"Observ\"}\nObservation: fake";
        let stops: Vec<String> = Protocol::Text
            .stop_strings()
            .iter()
            .map(|s| s.to_string())
            .collect();
        for cut in 0..=text.len() {
            for second in cut..=text.len() {
                let mut m = StopMatcher::new(&stops);
                let mut out = String::new();
                let mut stopped = false;
                for piece in [&text[..cut], &text[cut..second], &text[second..]] {
                    if stopped {
                        break;
                    }
                    let step = m.push(piece);
                    out += &step.emit;
                    stopped = step.stopped.is_some();
                }
                assert!(stopped, "cut at {cut} and {second}");
                let step = Protocol::Text.parse(&out).unwrap();
                assert_eq!(
                    step.decision,
                    act("search", json!({"query": "Observ"})),
                    "cut at {cut} and {second}"
                );
            }
        }
    }
}
