//! Listening: binding the address, serving until stopped, and a server on a thread of its
//! own for the CLI and the app.

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::routes::router;
use super::{ServeError, Server};

/// Binds `host:port` (port 0: any free port).
pub async fn bind(host: &str, port: u16) -> Result<tokio::net::TcpListener, ServeError> {
    let addr = format!("{host}:{port}");
    tokio::net::TcpListener::bind(&addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })
}

/// Serves until `stop` completes. Requests still answering are not waited for: they are
/// dropped with the runtime that runs them, which stops their generations (a reply may
/// otherwise run to the end of the context).
pub async fn serve(
    listener: tokio::net::TcpListener,
    server: Arc<Server>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let local = listener
        .local_addr()
        .map(|a| a.ip().is_loopback())
        .map_err(ServeError::Serve)?;
    server.local_only.store(local, Ordering::Relaxed);
    tokio::select! {
        r = axum::serve(listener, router(server)).into_future() => r.map_err(ServeError::Serve),
        () = stop => Ok(()),
    }
}

/// A server answering on a thread of its own, for the CLI and the app: stopped by
/// [`Running::stop`], a [`Stopper`], or when dropped.
pub struct Running {
    addr: SocketAddr,
    stop: Stopper,
    thread: Option<std::thread::JoinHandle<Result<(), ServeError>>>,
}

/// Stops a [`Running`] server from elsewhere (a Ctrl-C handler).
#[derive(Clone)]
pub struct Stopper(Arc<tokio::sync::Notify>);

impl Stopper {
    pub fn stop(&self) {
        // notify_one keeps the wake-up for a server that is not waiting yet.
        self.0.notify_one();
    }
}

/// Listens on `host:port` (port 0: any free port) and serves `server` there until stopped.
/// The address is taken before this returns, so a port in use is this call's error.
pub fn start(host: &str, port: u16, server: Arc<Server>) -> Result<Running, ServeError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("burrow-serve")
        .enable_all()
        .build()
        .map_err(ServeError::Serve)?;
    let listener = runtime.block_on(bind(host, port))?;
    let addr = listener.local_addr().map_err(ServeError::Serve)?;
    let stop = Stopper(Arc::new(tokio::sync::Notify::new()));
    let stopped = stop.0.clone();
    let thread = std::thread::Builder::new()
        .name("burrow-serve".into())
        .spawn(move || {
            let done =
                runtime.block_on(serve(
                    listener,
                    server,
                    async move { stopped.notified().await },
                ));
            runtime.shutdown_timeout(std::time::Duration::from_secs(2));
            done
        })
        .map_err(ServeError::Serve)?;
    Ok(Running {
        addr,
        stop,
        thread: Some(thread),
    })
}

impl Running {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The API's base URL, as OpenAI clients take it.
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn stopper(&self) -> Stopper {
        self.stop.clone()
    }

    /// Blocks until the server stops (see [`Running::stopper`]).
    pub fn wait(mut self) -> Result<(), ServeError> {
        self.join()
    }

    /// Stops the server and waits until it has.
    pub fn stop(mut self) -> Result<(), ServeError> {
        self.stop.stop();
        self.join()
    }

    fn join(&mut self) -> Result<(), ServeError> {
        match self.thread.take().map(std::thread::JoinHandle::join) {
            None => Ok(()),
            Some(Ok(done)) => done,
            Some(Err(_)) => Err(ServeError::Serve(std::io::Error::other(
                "the server's thread panicked",
            ))),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.stop();
        let _ = self.join();
    }
}
