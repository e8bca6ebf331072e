//! Search by meaning from the app: the embedding passes over the workspace, and the
//! embedding model they and searches share.

use std::sync::Arc;

use super::{lock, meaning, models, App, AppError, AppEvent, EmbedJob};
use crate::workspace::{EmbedReport, Embedder, QueryEmbedder};

/// How often a paused embedding pass checks whether the run it waits for is over.
const EMBED_PAUSE: std::time::Duration = std::time::Duration::from_millis(200);

impl App {
    /// Embeds every unit of the workspace that has no vector yet, with the embedding model of
    /// the settings, reporting progress. From its start every search (the agent's too) ranks
    /// by meaning as well, with the vectors made so far. The pass waits while a run is in
    /// progress, so the two models never share the cores. None when a pass was already
    /// running: that one goes round again for this call.
    pub fn embed_workspace(
        &self,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<Option<EmbedReport>, AppError> {
        {
            let mut job = lock(&self.embedding);
            if job.running {
                job.again = true;
                return Ok(None);
            }
            job.running = true;
        }
        loop {
            let result = self.embed_once(on_event);
            let mut job = lock(&self.embedding);
            if result.is_err() || !job.again {
                *job = EmbedJob::default();
                return result.map(Some);
            }
            job.again = false;
        }
    }

    /// Has every search, the agent's tools' included, rank by meaning as well, with the
    /// embedding model `query` names (None: the settings', else the catalogue's), where the
    /// workspace has vectors of it; the model is loaded once and shared with embedding
    /// passes. What the desktop app does when its pass starts, for a run with no pass (`burrow
    /// ask`, `burrow eval`). Why searches rank by words only, if they do: that is no failure
    /// of the run, which goes on by words.
    pub fn search_by_meaning(&self, query: Option<&str>) -> Result<Option<String>, AppError> {
        if self
            .workspace
            .vectors_status()?
            .is_none_or(|(_, _, n)| n == 0)
        {
            // The workspace's own reason (no vectors yet, and how to make them).
            return Ok(self.workspace.meaning_unavailable()?);
        }
        let setting = self.embedding_setting();
        match self.embedding_model(query.or(setting.as_deref())) {
            Ok(model) => self.workspace.set_query_embedder(Some(model)),
            Err(e) => return Ok(Some(format!("the embedding model is not loaded: {e}"))),
        }
        Ok(self.workspace.meaning_unavailable()?)
    }

    /// The embedding model the settings name (None: the catalogue's).
    pub(super) fn embedding_setting(&self) -> Option<String> {
        lock(&self.settings).embedding_setting().map(str::to_string)
    }

    fn embed_once(&self, on_event: &mut dyn FnMut(AppEvent)) -> Result<EmbedReport, AppError> {
        let setting = self.embedding_setting();
        let query = setting.as_deref();
        let model = match self.embedding_model(query) {
            Ok(m) => m,
            Err(e) => {
                on_event(AppEvent::EmbedFailed {
                    model: query.unwrap_or("the embedding model").to_string(),
                    message: e.to_string(),
                });
                return Err(e);
            }
        };
        self.embed_with(model.clone(), &mut &*model, on_event)
    }

    /// The embedding model `query` names (None: the catalogue's), the loaded one when it is
    /// that file with the prompts the settings give it now. One thread fewer than the cores,
    /// so the window stays responsive.
    fn embedding_model(
        &self,
        query: Option<&str>,
    ) -> Result<Arc<meaning::ModelEmbedder>, AppError> {
        let path = models::embedding_model(&self.home, query)?;
        let prompts = {
            let settings = lock(&self.settings);
            meaning::settings_prompts(&self.home, &settings, &path).cloned()
        };
        let mut loaded = lock(&self.embedder);
        if let Some(m) = loaded
            .as_ref()
            .filter(|m| m.path() == path && m.uses(prompts.as_ref()) && m.is_current())
        {
            return Ok(m.clone());
        }
        let stamp = meaning::file_stamp(&path);
        if let Some((_, _, why)) = lock(&self.embedder_failed)
            .as_ref()
            .filter(|(p, s, _)| *p == path && *s == stamp)
        {
            return Err(AppError::Embedding(why.clone()));
        }
        let threads = std::thread::available_parallelism()
            .map(|n| n.get().saturating_sub(1).max(1) as u32)
            .unwrap_or(1);
        let model = match meaning::ModelEmbedder::load_path(&path, threads, prompts.as_ref()) {
            Ok(m) => Arc::new(m),
            Err(e) => {
                *lock(&self.embedder_failed) = Some((path, stamp, e.to_string()));
                return Err(e);
            }
        };
        *loaded = Some(model.clone());
        Ok(model)
    }

    /// The pass of [`App::embed_workspace`] with a given model: `queries` is installed for
    /// searches, `pass` embeds the units.
    pub fn embed_with(
        &self,
        queries: Arc<dyn QueryEmbedder>,
        pass: &mut dyn Embedder,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<EmbedReport, AppError> {
        let model = pass.name();
        // Where the workspace holds another model's vectors, this one's are made beside them
        // and searches keep the model that ranks with those until they are replaced.
        let replacing = !self.workspace.vectors_are_of(&*queries)?
            && self
                .workspace
                .vectors_status()?
                .is_some_and(|(_, _, n)| n > 0);
        if !replacing {
            self.workspace.set_query_embedder(Some(queries.clone()));
        }
        let result = self.workspace.embed_pending(pass, &mut |p| {
            on_event(AppEvent::EmbedProgress {
                model: model.clone(),
                done: p.done,
                total: p.total,
            });
            while self.is_running() {
                std::thread::sleep(EMBED_PAUSE);
            }
        });
        match result {
            Ok(report) => {
                self.workspace.set_query_embedder(Some(queries));
                on_event(AppEvent::Embedded {
                    model,
                    report: report.clone(),
                });
                Ok(report)
            }
            Err(e) => {
                on_event(AppEvent::EmbedFailed {
                    model,
                    message: e.to_string(),
                });
                Err(e.into())
            }
        }
    }
}
