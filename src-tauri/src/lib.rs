//! Burrow's desktop shell: Tauri commands over [`burrow::app::App`], a few lines each (take the
//! state, call the core on a worker thread, map the error). Everything the UI is told as it
//! happens (run steps, tokens, load and index progress) arrives over a `tauri::ipc::Channel` as
//! the core's one tagged [`AppEvent`] enum.

mod commands_list;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use burrow::agent::protocol::PROTOCOLS;
use burrow::agent::record::RunRecord;
use burrow::agent::RunOutcome;
use burrow::app::models::RemoteStatus;
use burrow::app::search::{SearchRequest, ShownPage};
use burrow::app::stream::{self, Coalesce};
use burrow::app::{
    App, AppError, AppEvent, CatalogueModel, ModelStatus, RunTask, ServeStatus, Settings,
};
use burrow::llm::library::fetch::Fetched;
use burrow::llm::library::Discovery;
use burrow::tools::Locator;
use burrow::workspace::{IndexReport, RepoStatus};
use serde::Serialize;
use tauri::ipc::Channel;
use tauri::{Runtime, State};

pub use commands_list::COMMANDS;

/// What the app does when its window first asks: the folder to use as the default workspace
/// (indexed on the first start only) and the model to load.
#[derive(Debug, Clone, Default)]
pub struct Startup {
    pub workspace: Option<PathBuf>,
    /// `None` loads nothing; `Some(None)` the catalogue's default model.
    pub model: Option<Option<String>>,
}

/// The shell's state: the core, and whether the start-up jobs have been run (a reload of the
/// page must not start them twice).
pub struct Shell {
    app: Arc<App>,
    startup: Startup,
    started: AtomicBool,
}

impl Shell {
    pub fn new(app: App, startup: Startup) -> Self {
        Shell {
            app: Arc::new(app),
            startup,
            started: AtomicBool::new(false),
        }
    }

    pub fn app(&self) -> &Arc<App> {
        &self.app
    }
}

/// A command's failure as the page receives it: which kind (for the UI to react to) and a
/// message naming what and where.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("{message}")]
pub struct CommandError {
    pub kind: &'static str,
    pub message: String,
}

impl From<AppError> for CommandError {
    fn from(e: AppError) -> Self {
        let kind = match &e {
            AppError::Workspace(_) => "workspace",
            AppError::Model(_) | AppError::Models(_) | AppError::Embedding(_) => "model",
            AppError::Agent(_) => "agent",
            AppError::Settings(_) => "settings",
            AppError::Config(_) => "config",
            AppError::Tools(_) => "tools",
            AppError::NoModel => "no_model",
            AppError::RunInProgress => "run_in_progress",
            AppError::LoadInProgress => "load_in_progress",
            AppError::EmptyTask => "empty_task",
            AppError::EmptyWorkspace => "empty_workspace",
            AppError::Open { .. } => "open",
            AppError::FetchInProgress(_) => "fetch_in_progress",
            AppError::Serve(_) | AppError::NotServing | AppError::OwnServer(_) => "serve",
        };
        CommandError {
            kind,
            message: e.to_string(),
        }
    }
}

type CommandResult<T> = Result<T, CommandError>;

/// Runs `f` on the blocking pool: loading, indexing and generation never hold the main
/// thread, so the window stays responsive.
async fn blocking<T, F>(app: &Arc<App>, f: F) -> CommandResult<T>
where
    T: Send + 'static,
    F: FnOnce(&App) -> Result<T, AppError> + Send + 'static,
{
    let app = app.clone();
    tauri::async_runtime::spawn_blocking(move || f(&app))
        .await
        .map_err(|e| CommandError {
            kind: "internal",
            message: format!("Burrow's worker thread failed: {e}"),
        })?
        .map_err(CommandError::from)
}

/// Forwards the core's events to the page; a page that went away (reloaded, closed) just stops
/// receiving them, and the work goes on.
fn forward(channel: Channel<AppEvent>) -> impl FnMut(AppEvent) + Send + 'static {
    move |event| {
        if let Err(e) = channel.send(event) {
            tracing::debug!("an event was not delivered to the page: {e}");
        }
    }
}

/// Forwards a run's events, its text merged for a short window (`burrow::app::stream`): each
/// event costs the webview a script evaluation on the cores the model decodes on.
fn forward_run(channel: Channel<AppEvent>) -> impl FnMut(AppEvent) + Send + 'static {
    let mut merged = Coalesce::new(stream::WINDOW, forward(channel));
    move |event| merged.push(event)
}

/// Embeds what the workspace has no vectors for yet on a worker thread, reporting over
/// `channel`. Nobody waits for it (a whole workspace takes minutes); failures arrive as
/// `EmbedFailed` events, and a pass already running goes round again instead.
fn embed_in_background(app: &Arc<App>, channel: Channel<AppEvent>) {
    let app = app.clone();
    tauri::async_runtime::spawn_blocking(move || app.embed_workspace(&mut forward(channel)).ok());
}

/// What the page shows before anything else.
#[derive(Debug, Clone, Serialize)]
pub struct AppInfo {
    pub version: &'static str,
    pub home: PathBuf,
    pub default_workspace: Option<PathBuf>,
    pub model: Option<ModelStatus>,
    pub running: bool,
    /// The ReAct dialects Settings offers.
    pub protocols: Vec<&'static str>,
}

#[tauri::command]
fn app_info(shell: State<'_, Shell>) -> AppInfo {
    AppInfo {
        version: env!("CARGO_PKG_VERSION"),
        home: shell.app.home().path().to_path_buf(),
        default_workspace: shell.startup.workspace.clone(),
        model: shell.app.model_status(),
        running: shell.app.is_running(),
        protocols: PROTOCOLS.iter().map(|p| p.as_str()).collect(),
    }
}

/// The start-up jobs, once per process: the default workspace is added and indexed (first
/// start only) while the default model loads; both report over `on_event`. Returns false when
/// they had already been started.
#[tauri::command]
async fn startup(shell: State<'_, Shell>, on_event: Channel<AppEvent>) -> CommandResult<bool> {
    if shell.started.swap(true, Ordering::SeqCst) {
        return Ok(false);
    }
    let Startup { workspace, model } = shell.startup.clone();
    let events = on_event.clone();
    blocking(&shell.app, move |app| {
        // Failures are reported as IndexFailed / LoadFailed / ServeFailed events; the other
        // jobs go on.
        std::thread::scope(|s| {
            if let Some(dir) = &workspace {
                let mut send = forward(on_event.clone());
                s.spawn(move || app.ensure_repository(dir, &mut send).ok());
            }
            let mut send = forward(on_event.clone());
            s.spawn(move || {
                if let Some(query) = &model {
                    app.load_model(query.as_deref(), &mut send).ok();
                }
                // After the model: the server starts with it.
                app.serve_as_set(&mut send);
            });
        });
        Ok(())
    })
    .await?;
    // Search ranks by meaning as soon as the model is loaded, with the vectors there are.
    embed_in_background(&shell.app, events);
    Ok(true)
}

#[tauri::command]
async fn list_models(shell: State<'_, Shell>) -> CommandResult<Discovery> {
    blocking(&shell.app, |app| app.models()).await
}

/// The catalogue's models, for the page to offer those not on disk for download.
#[tauri::command]
fn list_catalogue(shell: State<'_, Shell>) -> Vec<CatalogueModel> {
    shell.app.catalogue()
}

/// Downloads a catalogue model by id, verified, streaming its progress.
#[tauri::command]
async fn fetch_model(
    shell: State<'_, Shell>,
    id: String,
    on_event: Channel<AppEvent>,
) -> CommandResult<Fetched> {
    let events = on_event.clone();
    let embedding = burrow::app::models::catalogue_entry(Some(&id))
        .is_ok_and(|e| e.purpose == burrow::llm::library::Purpose::Embedding);
    let fetched = blocking(&shell.app, move |app| {
        app.fetch_model(&id, &mut forward(on_event))
    })
    .await?;
    if embedding {
        embed_in_background(&shell.app, events);
    }
    Ok(fetched)
}

#[tauri::command]
fn model_status(shell: State<'_, Shell>) -> Option<ModelStatus> {
    shell.app.model_status()
}

/// Loads or switches to a model (a path, name or catalogue id; none: the default model).
#[tauri::command]
async fn load_model(
    shell: State<'_, Shell>,
    query: Option<String>,
    on_event: Channel<AppEvent>,
) -> CommandResult<ModelStatus> {
    blocking(&shell.app, move |app| {
        app.load_model(query.as_deref(), &mut forward(on_event))
    })
    .await
}

#[tauri::command]
async fn unload_model(shell: State<'_, Shell>) -> CommandResult<bool> {
    blocking(&shell.app, |app| app.unload_model()).await
}

#[tauri::command]
async fn workspace_status(shell: State<'_, Shell>) -> CommandResult<Vec<RepoStatus>> {
    blocking(&shell.app, |app| app.workspace_status()).await
}

#[tauri::command]
async fn add_repository(
    shell: State<'_, Shell>,
    path: PathBuf,
    on_event: Channel<AppEvent>,
) -> CommandResult<IndexReport> {
    let events = on_event.clone();
    let report = blocking(&shell.app, move |app| {
        app.add_repository(&path, &mut forward(on_event))
    })
    .await?;
    embed_in_background(&shell.app, events);
    Ok(report)
}

/// Imports an issues export (file or folder) into `slug` (owner/name).
#[tauri::command]
async fn import_issues(
    shell: State<'_, Shell>,
    path: PathBuf,
    slug: String,
    on_event: Channel<AppEvent>,
) -> CommandResult<IndexReport> {
    let events = on_event.clone();
    let report = blocking(&shell.app, move |app| {
        app.import_issues(&path, &slug, &mut forward(on_event))
    })
    .await?;
    embed_in_background(&shell.app, events);
    Ok(report)
}

#[tauri::command]
async fn reindex(
    shell: State<'_, Shell>,
    name: String,
    on_event: Channel<AppEvent>,
) -> CommandResult<IndexReport> {
    let events = on_event.clone();
    let report = blocking(&shell.app, move |app| {
        app.reindex(&name, &mut forward(on_event))
    })
    .await?;
    embed_in_background(&shell.app, events);
    Ok(report)
}

/// Embeds the workspace for search by meaning (after the embedding model changed in
/// Settings); progress and the outcome arrive as events.
#[tauri::command]
fn embed_workspace(shell: State<'_, Shell>, on_event: Channel<AppEvent>) {
    embed_in_background(&shell.app, on_event);
}

/// Runs a task to its end, streaming every step; `stop_run` ends it early.
#[tauri::command]
async fn start_run(
    shell: State<'_, Shell>,
    task: String,
    on_event: Channel<AppEvent>,
) -> CommandResult<RunOutcome> {
    blocking(&shell.app, move |app| {
        app.run(RunTask::New(task), &mut forward_run(on_event))
    })
    .await
}

/// Continues an interrupted run (its process died) from its last kept step.
#[tauri::command]
async fn resume_run(
    shell: State<'_, Shell>,
    id: i64,
    on_event: Channel<AppEvent>,
) -> CommandResult<RunOutcome> {
    blocking(&shell.app, move |app| {
        app.run(RunTask::Resume(id), &mut forward_run(on_event))
    })
    .await
}

#[tauri::command]
fn stop_run(shell: State<'_, Shell>) -> bool {
    shell.app.stop_run()
}

/// Past runs, newest first, without their steps.
#[tauri::command]
async fn list_runs(shell: State<'_, Shell>, limit: Option<usize>) -> CommandResult<Vec<RunRecord>> {
    blocking(&shell.app, move |app| app.runs(limit.unwrap_or(200))).await
}

#[tauri::command]
async fn get_run(shell: State<'_, Shell>, id: i64) -> CommandResult<RunRecord> {
    blocking(&shell.app, move |app| app.get_run(id)).await
}

/// The text of a file, issue, pull request or commit a trace links to.
#[tauri::command]
async fn open_item(shell: State<'_, Shell>, item: Locator) -> CommandResult<String> {
    blocking(&shell.app, move |app| app.open_item(&item)).await
}

/// The search box: a page of results for what the user typed.
#[tauri::command]
async fn search(shell: State<'_, Shell>, request: SearchRequest) -> CommandResult<ShownPage> {
    blocking(&shell.app, move |app| app.search(&request)).await
}

#[tauri::command]
fn get_settings(shell: State<'_, Shell>) -> Settings {
    shell.app.settings()
}

#[tauri::command]
async fn set_settings(shell: State<'_, Shell>, settings: Settings) -> CommandResult<Settings> {
    blocking(&shell.app, move |app| {
        app.set_settings(settings)?;
        Ok(app.settings())
    })
    .await
}

/// The remote backends in the config, each probed now (an unreachable one costs its connect
/// timeout).
#[tauri::command]
async fn list_remotes(shell: State<'_, Shell>) -> CommandResult<Vec<RemoteStatus>> {
    blocking(&shell.app, |app| app.remotes()).await
}

/// Adds a model served elsewhere (an OpenAI-compatible server) by name, and probes it.
#[tauri::command]
async fn add_remote(
    shell: State<'_, Shell>,
    url: String,
    name: Option<String>,
    model: Option<String>,
    api_key_env: Option<String>,
    llguidance: Option<bool>,
) -> CommandResult<RemoteStatus> {
    blocking(&shell.app, move |app| {
        app.add_remote(
            &url,
            name.as_deref(),
            model.as_deref(),
            api_key_env.as_deref(),
            llguidance.unwrap_or(false),
        )
    })
    .await
}

#[tauri::command]
async fn remove_remote(shell: State<'_, Shell>, name: String) -> CommandResult<bool> {
    blocking(&shell.app, move |app| app.remove_remote(&name)).await
}

#[tauri::command]
fn serve_status(shell: State<'_, Shell>) -> Option<ServeStatus> {
    shell.app.serve_status()
}

/// Serves the model in use over the OpenAI API on 127.0.0.1:`port`.
#[tauri::command]
async fn start_serving(shell: State<'_, Shell>, port: u16) -> CommandResult<ServeStatus> {
    blocking(&shell.app, move |app| app.start_serving(port)).await
}

#[tauri::command]
async fn stop_serving(shell: State<'_, Shell>) -> CommandResult<bool> {
    blocking(&shell.app, |app| app.stop_serving()).await
}

/// Registers the shell's state, plugin and commands on a builder (the real runtime's, or the
/// mock one in tests).
pub fn builder<R: Runtime>(builder: tauri::Builder<R>, shell: Shell) -> tauri::Builder<R> {
    builder
        .plugin(tauri_plugin_dialog::init())
        .manage(shell)
        .invoke_handler(tauri::generate_handler![
            app_info,
            startup,
            list_models,
            list_catalogue,
            fetch_model,
            model_status,
            load_model,
            unload_model,
            workspace_status,
            add_repository,
            import_issues,
            reindex,
            embed_workspace,
            start_run,
            resume_run,
            stop_run,
            list_runs,
            get_run,
            open_item,
            search,
            get_settings,
            set_settings,
            list_remotes,
            add_remote,
            remove_remote,
            serve_status,
            start_serving,
            stop_serving,
        ])
}
