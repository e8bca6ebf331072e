//! The agent's toolbelt as the shells see it: MCP servers' tools joined to it, the tools
//! listed, and one tool run as the agent would.

use std::sync::Arc;

use super::{lock, App};

impl App {
    /// Starts the MCP servers the settings name and adds their tools to the toolbelt as
    /// `<server>__<tool>`, for the shells that run the agent (opening the app starts none).
    /// What could not join (a server that did not start or answer, a schema that cannot be a
    /// step grammar) is returned, one line each; the other tools work.
    pub fn connect_mcp_servers(&mut self) -> Vec<String> {
        let mut problems = Vec::new();
        let configs = lock(&self.settings).mcp_servers.clone();
        for config in &configs {
            match crate::tools::mcp_client::McpServer::connect(config) {
                Ok(server) => {
                    let server = Arc::new(server);
                    problems.extend(crate::tools::mcp_client::register(&mut self.tools, server));
                }
                Err(e) => problems.push(e.to_string()),
            }
        }
        problems
    }

    /// The agent's tools, as `burrow tool --list` and MCP clients see them.
    pub fn tool_specs(&self) -> Vec<crate::tools::ToolSpec> {
        self.tools.specs()
    }

    pub fn tool_spec(&self, name: &str) -> Option<crate::tools::ToolSpec> {
        self.tools.spec(name)
    }

    /// Runs one tool as the agent would (searches rank by meaning too once
    /// `search_by_meaning` has loaded the embedding model).
    pub fn call_tool(
        &self,
        name: &str,
        args: serde_json::Value,
    ) -> Result<crate::tools::ToolOutput, crate::tools::ToolError> {
        self.tools.call(name, args)
    }
}
