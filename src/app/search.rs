//! A search as the user asks for it, from the desktop app's search box and from `burrow
//! search`: the request as typed (dates as written, the mode by name), checked and made a
//! [`SearchQuery`], and the page with what it ranked by (words only, and why) in its note.

use serde::{Deserialize, Serialize};

use super::{App, AppError};
use crate::tools::Locator;
use crate::workspace::{
    day_start, Kind, SearchHit, SearchMode, SearchPage, SearchQuery, Workspace, WorkspaceError,
};

/// Results a page shows when the request says nothing.
pub const DEFAULT_LIMIT: usize = 10;

/// What the user asked for. Every field but `text` may be left out.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct SearchRequest {
    pub text: String,
    /// Kept to these kinds (none: every kind).
    pub kinds: Vec<Kind>,
    pub repo: Option<String>,
    /// open, closed or merged.
    pub state: Option<String>,
    pub label: Option<String>,
    pub author: Option<String>,
    /// A glob over paths (`src/**/*.rs`).
    pub path: Option<String>,
    /// From this day on, as YYYY-MM-DD.
    pub since: Option<String>,
    /// Before this day, as YYYY-MM-DD.
    pub until: Option<String>,
    /// None: [`DEFAULT_LIMIT`].
    pub limit: Option<usize>,
    pub offset: usize,
    pub mode: SearchMode,
}

impl SearchRequest {
    /// The query it asks for; a date that is not one is refused, naming the field.
    pub fn query(&self) -> Result<SearchQuery, AppError> {
        Ok(SearchQuery {
            text: self.text.clone(),
            kinds: self.kinds.clone(),
            repo: given(&self.repo).map(str::to_string),
            state: given(&self.state).map(str::to_string),
            label: given(&self.label).map(str::to_string),
            author: given(&self.author).map(str::to_string),
            path: given(&self.path).map(str::to_string),
            since: given(&self.since)
                .map(|d| parse_day("since", d))
                .transpose()?,
            until: given(&self.until)
                .map(|d| parse_day("until", d))
                .transpose()?,
            limit: self.limit.unwrap_or(DEFAULT_LIMIT),
            offset: self.offset,
            mode: self.mode,
            ..Default::default()
        })
    }
}

/// A field of a form as given: an empty one means no filter, not one that matches nothing.
fn given(s: &Option<String>) -> Option<&str> {
    s.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// The start of `day` (YYYY-MM-DD, UTC) for the request's field `field`, or an error naming
/// both.
pub fn parse_day(field: &str, day: &str) -> Result<i64, AppError> {
    day_start(day).ok_or_else(|| {
        AppError::Workspace(WorkspaceError::BadQuery(format!(
            "{field} {day:?}: expected a date as YYYY-MM-DD"
        )))
    })
}

/// Runs `q` over `ws` with whatever query embedder it has. Where the workspace cannot rank by
/// meaning now, a hybrid search says so first in its note (so a page ranked by words alone is
/// never taken for a hybrid one), and a search by meaning alone fails, saying why: in the
/// caller's words where it gives them (`why_not_meaning`: why its model could not be loaded),
/// else the workspace's.
pub fn search(
    ws: &Workspace,
    q: &SearchQuery,
    why_not_meaning: Option<String>,
) -> Result<SearchPage, AppError> {
    let why = match q.mode {
        SearchMode::Words => None,
        // A model loaded before may serve where the caller's could not be loaded: then the
        // search ranks by meaning, and says nothing.
        _ => ws
            .meaning_unavailable()?
            .map(|why| why_not_meaning.unwrap_or(why)),
    };
    if let (SearchMode::Meaning, Some(why)) = (q.mode, &why) {
        return Err(AppError::Workspace(WorkspaceError::BadQuery(format!(
            "cannot search by meaning: {why}"
        ))));
    }
    let mut page = ws.search(q)?;
    if let Some(why) = why {
        let why = format!("ranked by words only: {why}");
        page.note = Some(match page.note {
            Some(n) => format!("{why}; {n}"),
            None => why,
        });
    }
    Ok(page)
}

/// A page of results as the search box shows them: each hit with what the CLI prints beside
/// it, said once here for both, and the item it opens.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShownPage {
    pub results: Vec<ShownHit>,
    /// The offset of the next page, when there is one.
    pub next_offset: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShownHit {
    #[serde(flatten)]
    pub hit: SearchHit,
    /// `src/main.rs:12`, `#42`, `commit 1a2b3c4d5e`.
    pub location: String,
    /// "fixes #12", "2 more matches in this file".
    pub notes: Vec<String>,
    /// What the viewer opens for it (None: the hit does not say which item it is).
    pub item: Option<Locator>,
}

impl From<SearchPage> for ShownPage {
    fn from(page: SearchPage) -> Self {
        let results = page
            .hits
            .into_iter()
            .map(|hit| ShownHit {
                location: hit.location(),
                notes: hit
                    .linked_note()
                    .into_iter()
                    .chain(hit.also_note())
                    .collect(),
                item: Locator::of_hit(&hit),
                hit,
            })
            .collect();
        ShownPage {
            results,
            next_offset: page.next_offset,
            note: page.note,
        }
    }
}

impl App {
    /// The desktop app's search box: ranked by meaning too where the workspace has vectors
    /// (the embedding model of the settings is loaded for it once, and shared with the
    /// agent's searches).
    pub fn search(&self, request: &SearchRequest) -> Result<ShownPage, AppError> {
        let query = request.query()?;
        // The settings' embedding model is loaded only where none serves yet (and a file that
        // failed to load is not tried again until it changes: `App::embedding_model`).
        let why_not = match query.mode {
            SearchMode::Words => None,
            _ if self.workspace.meaning_unavailable()?.is_none() => None,
            _ => self.search_by_meaning(None)?,
        };
        Ok(search(&self.workspace, &query, why_not)?.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_as_the_page_sends_it_becomes_the_query() {
        let r: SearchRequest = serde_json::from_value(serde_json::json!({
            "text": "wallet crash", "kinds": ["issue", "pr"], "repo": "", "since": "2024-05-31",
            "until": " ", "mode": "words", "offset": 10
        }))
        .unwrap();
        let q = r.query().unwrap();
        assert_eq!(q.kinds, vec![Kind::Issue, Kind::Pr]);
        // Empty fields of the form filter nothing.
        assert_eq!((q.repo, q.until), (None, None));
        assert_eq!(q.since, Some(1_717_113_600));
        assert_eq!(
            (q.limit, q.offset, q.mode),
            (DEFAULT_LIMIT, 10, SearchMode::Words)
        );
        let bare: SearchRequest = serde_json::from_value(serde_json::json!({"text": "x"})).unwrap();
        assert_eq!(bare.query().unwrap().mode, SearchMode::Hybrid);
    }

    #[test]
    fn a_date_that_is_not_one_is_refused_naming_the_field() {
        let r = SearchRequest {
            text: "x".into(),
            until: Some("31/05/2024".into()),
            ..Default::default()
        };
        let e = r.query().unwrap_err().to_string();
        assert!(
            e.contains("until") && e.contains("31/05/2024") && e.contains("YYYY-MM-DD"),
            "{e}"
        );
    }
}
