// Declaring the app's commands makes each one need a permission (`allow-<command>`), so the
// page can call only those its capability grants (capabilities/default.json).
fn main() {
    tauri_build::try_build(
        tauri_build::Attributes::new()
            .app_manifest(tauri_build::AppManifest::new().commands(burrow_app_commands::COMMANDS)),
    )
    .unwrap_or_else(|e| panic!("tauri-build: {e:#}"));
}

#[path = "src/commands_list.rs"]
mod burrow_app_commands;
