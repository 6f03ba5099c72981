//! Listening addresses: a unix socket (owner-only) or a TCP port.
//!
//! The unix socket is bound under a temporary name inside a fresh owner-only directory next
//! to its final path, set to mode 0600 there, and renamed into place: no other user can
//! connect in between, whatever the process umask is.

use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Deserializer};

use super::error::{DaemonError, Result};

/// Where the daemon listens, or where the client connects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenAddr {
    /// A unix domain socket at this path (`unix:///run/curio/cuzk.sock`).
    Unix(PathBuf),
    /// A TCP address `host:port` (`tcp://127.0.0.1:9820`).
    Tcp(String),
}

impl FromStr for ListenAddr {
    type Err = DaemonError;
    /// Accepts `unix:///abs/path`, `unix:relative/path`, `/abs/path`, `tcp://host:port` and
    /// `host:port`.
    fn from_str(s: &str) -> Result<Self> {
        let bad = |reason: &str| DaemonError::Listen {
            addr: s.into(),
            reason: reason.into(),
        };
        let t = s.trim();
        if let Some(path) = t
            .strip_prefix("unix://")
            .or_else(|| t.strip_prefix("unix:"))
        {
            if path.is_empty() {
                return Err(bad("the unix socket path is empty"));
            }
            return Ok(ListenAddr::Unix(PathBuf::from(path)));
        }
        if t.starts_with('/') {
            return Ok(ListenAddr::Unix(PathBuf::from(t)));
        }
        let hostport = t
            .strip_prefix("tcp://")
            .or_else(|| t.strip_prefix("http://"))
            .unwrap_or(t);
        if hostport.contains("://") {
            return Err(bad("expected unix:///path, tcp://host:port or host:port"));
        }
        let (host, port) = hostport
            .rsplit_once(':')
            .ok_or_else(|| bad("expected unix:///path, tcp://host:port or host:port"))?;
        if host.is_empty() || port.parse::<u16>().is_err() {
            return Err(bad("expected host:port with a numeric port"));
        }
        Ok(ListenAddr::Tcp(hostport.to_string()))
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddr::Unix(p) => write!(f, "unix://{}", p.display()),
            ListenAddr::Tcp(a) => write!(f, "tcp://{a}"),
        }
    }
}

impl<'de> Deserialize<'de> for ListenAddr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(|e: DaemonError| serde::de::Error::custom(format!("listen: {e}")))
    }
}

/// A bound listener, ready to serve.
pub enum Listener {
    /// A unix socket; the file is removed when the listener is dropped.
    Unix(tokio::net::UnixListener, SocketFile),
    /// A TCP socket.
    Tcp(tokio::net::TcpListener),
}

impl Listener {
    /// The address actually bound (for TCP with port 0, the port chosen).
    pub fn local_addr(&self) -> String {
        match self {
            Listener::Unix(_, f) => ListenAddr::Unix(f.0.clone()).to_string(),
            Listener::Tcp(l) => l
                .local_addr()
                .map(|a| format!("tcp://{a}"))
                .unwrap_or_else(|_| "tcp://?".into()),
        }
    }
}

/// Removes the socket file when dropped (the daemon's own socket only).
pub struct SocketFile(PathBuf);

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Binds `addr`. Must run inside a tokio runtime.
pub async fn bind(addr: &ListenAddr) -> Result<Listener> {
    let fail = |reason: String| DaemonError::Listen {
        addr: addr.to_string(),
        reason,
    };
    match addr {
        ListenAddr::Tcp(a) => tokio::net::TcpListener::bind(a.as_str())
            .await
            .map(Listener::Tcp)
            .map_err(|e| fail(e.to_string())),
        ListenAddr::Unix(path) => {
            let listener = bind_unix_private(path).map_err(fail)?;
            Ok(Listener::Unix(listener, SocketFile(path.clone())))
        }
    }
}

fn bind_unix_private(path: &Path) -> std::result::Result<tokio::net::UnixListener, String> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent)
        .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    remove_stale_socket(path)?;
    let name = path
        .file_name()
        .ok_or_else(|| "the socket path has no file name".to_string())?;
    let private = tempfile::Builder::new()
        .prefix(".cuzk-bind-")
        .tempdir_in(&parent)
        .map_err(|e| {
            format!(
                "cannot create a private directory in {}: {e}",
                parent.display()
            )
        })?;
    std::fs::set_permissions(private.path(), std::fs::Permissions::from_mode(0o700))
        .map_err(|e| format!("{}: {e}", private.path().display()))?;
    let tmp = private.path().join(name);
    let listener = tokio::net::UnixListener::bind(&tmp).map_err(|e| e.to_string())?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("cannot make the socket owner-only: {e}"))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot move the socket into place: {e}"))?;
    Ok(listener)
}

/// A socket file left by a daemon that died is removed; one another daemon still serves on
/// is an error; any other file is never touched.
fn remove_stale_socket(path: &Path) -> std::result::Result<(), String> {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::symlink_metadata(path) {
        Err(_) => Ok(()),
        Ok(m) if m.file_type().is_socket() => {
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err("another process is serving on this socket".into());
            }
            std::fs::remove_file(path).map_err(|e| format!("cannot remove the stale socket: {e}"))
        }
        Ok(_) => Err("the path exists and is not a socket; refusing to replace it".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse() {
        let unix = |p: &str| ListenAddr::Unix(PathBuf::from(p));
        assert_eq!(
            "unix:///run/x.sock".parse::<ListenAddr>().unwrap(),
            unix("/run/x.sock")
        );
        assert_eq!(
            "/run/x.sock".parse::<ListenAddr>().unwrap(),
            unix("/run/x.sock")
        );
        assert_eq!(
            "tcp://127.0.0.1:9820".parse::<ListenAddr>().unwrap(),
            ListenAddr::Tcp("127.0.0.1:9820".into())
        );
        assert_eq!(
            "[::1]:9820".parse::<ListenAddr>().unwrap(),
            ListenAddr::Tcp("[::1]:9820".into())
        );
        for bad in ["ftp://x:1", "localhost", "host:port", "unix://", ":80"] {
            assert!(bad.parse::<ListenAddr>().is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn unix_socket_is_owner_only_and_stale_sockets_are_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/cuzk.sock");
        let addr = ListenAddr::Unix(path.clone());
        let l = bind(&addr).await.unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // A second daemon on the same socket is refused while the first serves.
        let e = bind(&addr).await.err().unwrap().to_string();
        assert!(e.contains("another process"), "{e}");
        // A socket left behind (listener gone, file kept) is replaced.
        let Listener::Unix(inner, file) = l else {
            panic!("unix listener expected")
        };
        drop(inner);
        std::mem::forget(file);
        assert!(path.exists());
        let _l2 = bind(&addr).await.unwrap();
        // A regular file is never replaced.
        let plain = dir.path().join("plain");
        std::fs::write(&plain, b"x").unwrap();
        let e = bind(&ListenAddr::Unix(plain))
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("not a socket"), "{e}");
    }
}
