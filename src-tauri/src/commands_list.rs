/// Every command the shell registers; build.rs declares them so each needs a permission, and a
/// test checks this list against the handler and the capability.
pub const COMMANDS: &[&str] = &[
    "app_info",
    "startup",
    "list_models",
    "list_catalogue",
    "fetch_model",
    "model_status",
    "load_model",
    "unload_model",
    "workspace_status",
    "add_repository",
    "import_issues",
    "reindex",
    "start_run",
    "resume_run",
    "stop_run",
    "list_runs",
    "get_run",
    "open_item",
    "get_settings",
    "set_settings",
];
