//! The model in use: the models found, loading one (or switching to a remote backend's),
//! setting and unloading it.

use std::sync::Arc;

use super::{lock, models, App, AppError, AppEvent, CurrentModel, ModelStatus};
use crate::llm::library::{Discovery, ModelInfo};
use crate::llm::llama::LlamaEngine;
use crate::llm::LanguageModel;

impl App {
    /// The models found in the standard places, and files that could not be read.
    pub fn models(&self) -> Result<Discovery, AppError> {
        Ok(models::discover(&self.home)?)
    }

    pub fn model_status(&self) -> Option<ModelStatus> {
        lock(&self.model).as_ref().map(|m| m.status.clone())
    }

    fn engine(&self) -> Result<&LlamaEngine, AppError> {
        if let Some(e) = self.engine.get() {
            return Ok(e);
        }
        let engine = LlamaEngine::new()?;
        Ok(self.engine.get_or_init(|| engine))
    }

    /// Loads (or switches to) the model `query` names, with its saved load settings, reporting
    /// progress. On failure the message is also sent as `LoadFailed`, and the model that was
    /// in use stays in use when the engine kept it.
    pub fn load_model(
        &self,
        query: Option<&str>,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<ModelStatus, AppError> {
        let mut label = query.unwrap_or("the default model").to_string();
        let result = self.load_model_inner(query, &mut label, on_event);
        if let Err(e) = &result {
            on_event(AppEvent::LoadFailed {
                model: label,
                message: e.to_string(),
            });
        }
        result
    }

    /// Sets `label` to the model's name once it is known, for the failure event.
    fn load_model_inner(
        &self,
        query: Option<&str>,
        label: &mut String,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<ModelStatus, AppError> {
        {
            let run = lock(&self.run);
            if run.is_some() {
                return Err(AppError::RunInProgress);
            }
            // One load at a time: a second one (Load on another model before the first's
            // progress was drawn) failed fast and its guard cleared the first's flag, so a
            // run started on the old model mid-switch.
            if self.loading.swap(true, std::sync::atomic::Ordering::SeqCst) {
                return Err(AppError::LoadInProgress);
            }
        }
        struct Loaded<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Loaded<'_> {
            fn drop(&mut self) {
                self.0.store(false, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let _loading = Loaded(&self.loading);
        if let Some(backend) = query
            .map(|q| models::find_remote(&self.home, q))
            .transpose()?
            .flatten()
        {
            label.clone_from(&backend.name);
            return self.load_remote(&backend, on_event);
        }
        let info: ModelInfo = models::find(&self.home, query)?;
        label.clone_from(&info.name);
        let options = lock(&self.settings).model(&info.path);
        let engine = self.engine()?;
        let name = info.name.clone();
        let outcome = models::load(engine, info, &options, &mut |progress| {
            on_event(AppEvent::LoadProgress {
                model: name.clone(),
                progress,
            })
        });
        // Whatever happened, what is in use is what the engine holds now; a remote model in
        // use stays in use when the engine holds nothing.
        let current = engine.current();
        let keep_remote = outcome.is_err()
            && current.is_none()
            && lock(&self.model)
                .as_ref()
                .is_some_and(|m| m.status.remote.is_some());
        if !keep_remote {
            self.put_model(current.as_ref().map(|m| CurrentModel {
                model: m.clone(),
                status: ModelStatus::of(m),
            }));
        }
        let loaded = outcome?;
        let status = ModelStatus::of(&loaded);
        on_event(AppEvent::Loaded {
            model: status.clone(),
        });
        Ok(status)
    }

    /// Connects to a remote backend and uses its model from now on; the local model, if one
    /// was loaded, is unloaded (one model is in use). On failure, what was in use stays.
    fn load_remote(
        &self,
        backend: &crate::config::RemoteBackend,
        on_event: &mut dyn FnMut(AppEvent),
    ) -> Result<ModelStatus, AppError> {
        // Its requests would wait for their own turn on the one model.
        if let Some(port) = lock(&self.serving)
            .as_ref()
            .map(|s| s.running.addr().port())
        {
            let root = crate::llm::remote::normalize_url(&backend.url)?;
            if ["127.0.0.1", "localhost", "[::1]"]
                .iter()
                .any(|h| root.eq_ignore_ascii_case(&format!("http://{h}:{port}")))
            {
                return Err(AppError::OwnServer(backend.name.clone()));
            }
        }
        let started = std::time::Instant::now();
        on_event(AppEvent::LoadProgress {
            model: backend.name.clone(),
            progress: 0.0,
        });
        let remote = models::BackendChoice::from(backend).connect()?;
        let status = ModelStatus::remote(
            &backend.name,
            remote.info(),
            started.elapsed().as_secs_f64() * 1000.0,
        );
        if let Some(engine) = self.engine.get() {
            engine.unload();
        }
        self.put_model(Some(CurrentModel {
            model: Arc::new(remote),
            status: status.clone(),
        }));
        on_event(AppEvent::Loaded {
            model: status.clone(),
        });
        Ok(status)
    }

    /// Uses `model` for runs (tests and embedders that bring their own).
    pub fn set_model(&self, model: Arc<dyn LanguageModel>, status: ModelStatus) {
        self.put_model(Some(CurrentModel { model, status }));
    }

    /// The one place the model in use changes: the server, when serving, follows it.
    fn put_model(&self, current: Option<CurrentModel>) {
        let served = current.as_ref().map(|c| c.model.clone());
        *lock(&self.model) = current;
        if let Some(s) = lock(&self.serving).as_ref() {
            s.server.set_model(served);
        }
    }

    /// Unloads the model in use and frees its memory. Refused while a run uses it.
    pub fn unload_model(&self) -> Result<bool, AppError> {
        {
            let run = lock(&self.run);
            if run.is_some() {
                return Err(AppError::RunInProgress);
            }
            // Unloaded during a switch, the engine dropped the model being loaded under the
            // load (the button stays enabled while a model loads).
            if self.loading.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(AppError::LoadInProgress);
            }
        }
        let had = lock(&self.model).is_some();
        self.put_model(None);
        if let Some(engine) = self.engine.get() {
            engine.unload();
        }
        Ok(had)
    }
}
