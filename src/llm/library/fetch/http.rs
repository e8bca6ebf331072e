//! PyPI and the web over HTTPS. A wheel is found through the index's JSON Simple API
//! (PEP 691), the one pip itself uses: it lists each file with its URL, size and sha256.

use std::collections::HashMap;
use std::time::Duration;

use serde::Deserialize;
use ureq::tls::{RootCerts, TlsConfig};

use super::{best_wheel, is_wheel_of, normalize, Download, FetchError, Fetcher, RemoteFile};

pub const PYPI_SIMPLE: &str = "https://pypi.org/simple/";
const SIMPLE_JSON: &str = "application/vnd.pypi.simple.v1+json";
/// A project's page lists every file of every release; even large projects' are a few MB.
const MAX_PAGE: u64 = 64 << 20;

pub struct HttpFetcher {
    agent: ureq::Agent,
    index: String,
}

#[derive(Deserialize)]
struct Project {
    files: Vec<ProjectFile>,
}

#[derive(Deserialize)]
struct ProjectFile {
    filename: String,
    url: String,
    #[serde(default)]
    hashes: HashMap<String, String>,
    size: Option<u64>,
}

impl Default for HttpFetcher {
    fn default() -> Self {
        Self::new()
    }
}

impl HttpFetcher {
    /// PyPI, or the index `PIP_INDEX_URL` names (a mirror), as pip would use.
    pub fn new() -> Self {
        let index = std::env::var("PIP_INDEX_URL")
            .ok()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| PYPI_SIMPLE.to_string());
        Self::with_index(&index)
    }

    pub fn with_index(index: &str) -> Self {
        // The system's roots, as pip and curl trust them (a proxy's own CA included).
        let tls = TlsConfig::builder()
            .root_certs(RootCerts::PlatformVerifier)
            .build();
        let agent = ureq::Agent::config_builder()
            .tls_config(tls)
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(30)))
            // No limit on a whole download (1 GB on a slow line is fine), only on a stall.
            .timeout_per_read(Some(Duration::from_secs(120)))
            .user_agent(concat!("burrow/", env!("CARGO_PKG_VERSION")))
            .build()
            .new_agent();
        HttpFetcher {
            agent,
            index: format!("{}/", index.trim_end_matches('/')),
        }
    }

    /// The body at `url`; any answer but a success is an error naming the URL, a 404 as
    /// `not_found` says.
    fn get(
        &self,
        url: &str,
        accept: Option<&str>,
        not_found: impl FnOnce() -> FetchError,
    ) -> Result<ureq::Body, FetchError> {
        let http = |message: String| FetchError::Http {
            url: url.to_string(),
            message,
        };
        let mut request = self.agent.get(url);
        if let Some(a) = accept {
            request = request.header("Accept", a);
        }
        let response = request.call().map_err(|e| http(e.to_string()))?;
        match response.status() {
            s if s.is_success() => Ok(response.into_body()),
            s if s.as_u16() == 404 => Err(not_found()),
            s => Err(http(format!("the server answered {s}"))),
        }
    }
}

/// `href` as the page at `base` means it: PyPI's are absolute, a mirror's may be relative.
fn resolve_url(base: &str, href: &str) -> String {
    if href.contains("://") {
        return href.to_string();
    }
    let scheme_end = base.find("://").map(|i| i + 3).unwrap_or(0);
    if let Some(rest) = href.strip_prefix("//") {
        return format!("{}{rest}", &base[..scheme_end]);
    }
    if href.starts_with('/') {
        let host_end = base[scheme_end..]
            .find('/')
            .map(|i| scheme_end + i)
            .unwrap_or(base.len());
        return format!("{}{href}", &base[..host_end]);
    }
    let dir_end = base.rfind('/').map(|i| i + 1).unwrap_or(base.len());
    format!("{}{href}", &base[..dir_end])
}

impl Fetcher for HttpFetcher {
    fn find_wheel(&self, package: &str, version: &str) -> Result<RemoteFile, FetchError> {
        let page = format!("{}{}/", self.index, normalize(package));
        let index_error = |message: String| FetchError::Index {
            index: page.clone(),
            message,
        };
        let text = self
            .get(&page, Some(SIMPLE_JSON), || {
                index_error(format!("the index has no project {package}"))
            })?
            .with_config()
            .limit(MAX_PAGE)
            .read_to_string()
            .map_err(|e| index_error(format!("the listing could not be read: {e}")))?;
        let project: Project = serde_json::from_str(&text)
            .map_err(|e| index_error(format!("the listing is not the JSON Simple API: {e}")))?;
        let wheels = project
            .files
            .iter()
            .filter(|f| is_wheel_of(&f.filename, package, version));
        let (_, file) = best_wheel(wheels.map(|f| (f.filename.as_str(), f))).ok_or_else(|| {
            let mut versions: Vec<&str> = project
                .files
                .iter()
                .filter_map(|f| f.filename.split('-').nth(1))
                .collect();
            versions.dedup();
            index_error(format!(
                "no wheel of {package} {version} (files of versions: {})",
                if versions.is_empty() {
                    "none".to_string()
                } else {
                    versions.join(", ")
                }
            ))
        })?;
        Ok(RemoteFile {
            url: resolve_url(&page, &file.url),
            filename: file.filename.clone(),
            sha256: file.hashes.get("sha256").cloned(),
            size: file.size,
        })
    }

    fn open(&self, url: &str) -> Result<Download, FetchError> {
        let body = self.get(url, None, || FetchError::Http {
            url: url.to_string(),
            message: "not found (404)".into(),
        })?;
        let length = body.content_length();
        Ok(Download {
            reader: Box::new(body.into_reader()),
            length,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::resolve_url;

    #[test]
    fn links_resolve_against_the_page() {
        let page = "https://mirror.example/simple/pkg/";
        assert_eq!(
            resolve_url(page, "https://f.example/a.whl"),
            "https://f.example/a.whl"
        );
        assert_eq!(
            resolve_url(page, "//f.example/a.whl"),
            "https://f.example/a.whl"
        );
        assert_eq!(
            resolve_url(page, "/files/a.whl"),
            "https://mirror.example/files/a.whl"
        );
        assert_eq!(
            resolve_url(page, "../../files/a.whl"),
            "https://mirror.example/simple/pkg/../../files/a.whl"
        );
        assert_eq!(
            resolve_url(page, "a.whl"),
            "https://mirror.example/simple/pkg/a.whl"
        );
    }
}
