//! The settings in use: read, and new ones checked and saved.

use super::{lock, App, AppError, Settings};

impl App {
    pub fn settings(&self) -> Settings {
        lock(&self.settings).clone()
    }

    /// Checks and saves new settings; they apply from the next run or load.
    pub fn set_settings(&self, mut settings: Settings) -> Result<(), AppError> {
        // The MCP servers are edited in the file alone (the Settings screen cannot yet): the
        // file's are kept, not the ones loaded when the app started, which a save from the
        // screen wrote back over servers added by hand meanwhile. A file that does not read
        // is replaced as before.
        if let Ok(on_disk) = Settings::load(&self.home) {
            settings.mcp_servers = on_disk.mcp_servers;
        }
        settings.save(&self.home)?;
        *lock(&self.settings) = settings;
        // A model that failed for what the settings gave it (a prompt too long) is tried
        // again with the new ones: the failure was remembered until its file changed.
        *lock(&self.embedder_failed) = None;
        Ok(())
    }
}
