//! The remote backends a model can be used through: listed, added and removed.

use super::{models, App, AppError};

impl App {
    /// The remote backends in the config, each probed now.
    pub fn remotes(&self) -> Result<Vec<models::RemoteStatus>, AppError> {
        Ok(models::remote_statuses(&self.home)?)
    }

    /// Adds (or replaces, by name) a remote backend, and says whether it answers now. The
    /// key is never saved: `api_key_env` names the variable that holds it. `llguidance`: the
    /// server is a llama-server built with llguidance.
    pub fn add_remote(
        &self,
        url: &str,
        name: Option<&str>,
        model: Option<&str>,
        api_key_env: Option<&str>,
        llguidance: bool,
    ) -> Result<models::RemoteStatus, AppError> {
        let backend = models::add_remote(&self.home, url, name, model, api_key_env, llguidance)?;
        Ok(models::probe(&backend))
    }

    pub fn remove_remote(&self, name: &str) -> Result<bool, AppError> {
        Ok(models::remove_remote(&self.home, name)?)
    }
}
