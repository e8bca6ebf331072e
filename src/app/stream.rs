//! A run's token events merged for a window. Each event the desktop shell sends costs the
//! webview a script evaluation on its main thread, and a step streams two per token (its raw
//! output and its thought): at 50 tokens a second that is a hundred a second, on the cores the
//! model decodes on. The page draws at most once a frame anyway, so the text that arrives
//! within a short window goes as one event of each kind. Order is kept: pending text is sent
//! before any other event, and within each kind text is only ever appended.

use std::time::{Duration, Instant};

use super::AppEvent;
use crate::agent::AgentEvent;

/// How long text may wait to be sent with what follows it (six frames).
pub const WINDOW: Duration = Duration::from_millis(100);

/// Merges consecutive `Token` and `ThoughtDelta` events of one step before passing them on.
pub struct Coalesce<F: FnMut(AppEvent)> {
    send: F,
    window: Duration,
    /// The step whose text is pending, the raw output and the thought, and since when.
    pending: Option<Pending>,
}

struct Pending {
    index: usize,
    tokens: String,
    thought: String,
    since: Instant,
}

impl<F: FnMut(AppEvent)> Coalesce<F> {
    pub fn new(window: Duration, send: F) -> Self {
        Coalesce {
            send,
            window,
            pending: None,
        }
    }

    pub fn push(&mut self, event: AppEvent) {
        let now = Instant::now();
        let (index, text, thought) = match &event {
            // The step's output ended: what is pending goes now, not once the step's tool has
            // run (the last tenth of a second of text stood still while a slow tool ran).
            AppEvent::Agent {
                event: AgentEvent::Token { text, .. },
            } if text.is_empty() => {
                self.flush();
                return;
            }
            AppEvent::Agent {
                event: AgentEvent::Token { index, text },
            } => (*index, text, false),
            AppEvent::Agent {
                event: AgentEvent::ThoughtDelta { index, text },
            } => (*index, text, true),
            _ => {
                self.flush();
                (self.send)(event);
                return;
            }
        };
        if self.pending.as_ref().is_some_and(|p| p.index != index) {
            self.flush();
        }
        let p = self.pending.get_or_insert_with(|| Pending {
            index,
            tokens: String::new(),
            thought: String::new(),
            since: now,
        });
        if thought {
            p.thought.push_str(text);
        } else {
            p.tokens.push_str(text);
        }
        if now.duration_since(p.since) >= self.window {
            self.flush();
        }
    }

    /// Sends what is pending: the raw output first, then the thought.
    pub fn flush(&mut self) {
        let Some(p) = self.pending.take() else {
            return;
        };
        if !p.tokens.is_empty() {
            (self.send)(AppEvent::Agent {
                event: AgentEvent::Token {
                    index: p.index,
                    text: p.tokens,
                },
            });
        }
        if !p.thought.is_empty() {
            (self.send)(AppEvent::Agent {
                event: AgentEvent::ThoughtDelta {
                    index: p.index,
                    text: p.thought,
                },
            });
        }
    }
}

impl<F: FnMut(AppEvent)> Drop for Coalesce<F> {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(index: usize, text: &str) -> AppEvent {
        AppEvent::Agent {
            event: AgentEvent::Token {
                index,
                text: text.into(),
            },
        }
    }

    fn thought(index: usize, text: &str) -> AppEvent {
        AppEvent::Agent {
            event: AgentEvent::ThoughtDelta {
                index,
                text: text.into(),
            },
        }
    }

    fn started(index: usize) -> AppEvent {
        AppEvent::Agent {
            event: AgentEvent::StepStarted { index },
        }
    }

    #[test]
    fn text_within_the_window_goes_as_one_event_of_each_kind_in_order() {
        let mut sent = Vec::new();
        {
            let mut c = Coalesce::new(Duration::from_secs(3600), |e| sent.push(e));
            c.push(started(1));
            for (t, h) in [("{\"th", ""), ("ought\": \"Se", "Se"), ("arch", "arch")] {
                c.push(token(1, t));
                if !h.is_empty() {
                    c.push(thought(1, h));
                }
            }
            // Another step's text, then another event: each sends what is pending first.
            c.push(token(2, "x"));
            c.push(started(3));
            c.push(token(3, "tail"));
        }
        assert_eq!(
            sent,
            [
                started(1),
                token(1, "{\"thought\": \"Search"),
                thought(1, "Search"),
                token(2, "x"),
                started(3),
                // Sent when the coalescer is dropped (the run is over).
                token(3, "tail"),
            ]
        );
    }

    #[test]
    fn text_older_than_the_window_is_sent_with_the_next_piece() {
        let mut sent = Vec::new();
        let mut c = Coalesce::new(Duration::ZERO, |e| sent.push(e));
        c.push(token(0, "a"));
        c.push(token(0, "b"));
        drop(c);
        assert_eq!(sent, [token(0, "a"), token(0, "b")]);
    }

    /// The empty piece that ends a step's output sends what is pending at once: the last
    /// tenth of a second of text waited for the next event, which comes only once the step's
    /// tool has run (found in review).
    #[test]
    fn the_end_of_a_steps_output_sends_what_is_pending() {
        let sent = std::cell::RefCell::new(Vec::new());
        let mut c = Coalesce::new(Duration::from_secs(3600), |e| sent.borrow_mut().push(e));
        c.push(token(0, "{\"thought\": \"Sea"));
        c.push(thought(0, "Sea"));
        assert!(sent.borrow().is_empty());
        c.push(token(0, ""));
        assert_eq!(
            *sent.borrow(),
            [token(0, "{\"thought\": \"Sea"), thought(0, "Sea")]
        );
        drop(c);
        assert_eq!(sent.borrow().len(), 2, "nothing more, and no empty piece");
    }
}
