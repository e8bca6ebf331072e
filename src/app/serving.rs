//! Serving the model in use over the OpenAI API from the app (what `burrow serve` does from
//! the command line): started, stopped, and started as the settings say when the app opens.

use std::sync::Arc;

use super::{lock, models, serve, App, AppError, AppEvent, ServeStatus, Serving};

impl App {
    /// Serves the model in use (and whatever is loaded later) over the OpenAI API on
    /// 127.0.0.1:`port`, and remembers to do so when the app next opens. Already serving on
    /// that port: nothing changes; on another: moved there.
    pub fn start_serving(&self, port: u16) -> Result<ServeStatus, AppError> {
        let mut settings = self.settings();
        settings.serve.enabled = true;
        settings.serve.port = port;
        settings.validate()?;
        let status = {
            let mut serving = lock(&self.serving);
            if serving
                .as_ref()
                .is_none_or(|s| s.running.addr().port() != port)
            {
                // The old one goes first: it may hold the port asked for.
                if let Some(old) = serving.take() {
                    old.running.stop()?;
                }
                let api_key = Some(settings.serve.api_key_env.as_str())
                    .filter(|v| !v.is_empty())
                    .map(crate::llm::remote::ApiKey::from_env)
                    .transpose()?;
                let key_required = api_key.is_some();
                let options = serve::ServeOptions {
                    api_key,
                    embedding: models::embedding_model(
                        &self.home,
                        self.embedding_setting().as_deref(),
                    )
                    .map_err(|e| e.to_string()),
                    // The window and the model need the other cores.
                    embed_threads: 1,
                    ..Default::default()
                };
                let model = lock(&self.model).as_ref().map(|m| m.model.clone());
                let server = Arc::new(serve::Server::new(model, options));
                let running = serve::start("127.0.0.1", port, server.clone())?;
                *serving = Some(Serving {
                    server,
                    running,
                    key_required,
                });
            }
            serving.as_ref().map(Serving::status)
        };
        self.set_settings(settings)?;
        status.ok_or(AppError::NotServing)
    }

    /// Stops serving, and not again when the app next opens. False if it was not serving.
    pub fn stop_serving(&self) -> Result<bool, AppError> {
        let had = lock(&self.serving).take();
        let mut settings = self.settings();
        settings.serve.enabled = false;
        self.set_settings(settings)?;
        match had {
            Some(s) => {
                s.running.stop()?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    pub fn serve_status(&self) -> Option<ServeStatus> {
        lock(&self.serving).as_ref().map(Serving::status)
    }

    /// Serves as the settings say when the app opens; a failure is reported as `ServeFailed`.
    pub fn serve_as_set(&self, on_event: &mut dyn FnMut(AppEvent)) {
        let s = self.settings().serve;
        if !s.enabled {
            return;
        }
        if let Err(e) = self.start_serving(s.port) {
            on_event(AppEvent::ServeFailed {
                message: format!("The model could not be served on 127.0.0.1:{}: {e}", s.port),
            });
        }
    }
}
