//! A daemon under test: the real `cuzk daemon` binary on a temporary unix socket or a
//! loopback TCP port, proving on the CPU with the shared 2 KiB test parameters.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use cuzk::daemon::proto as pb;
use cuzk::daemon::Client;
use cuzk::{ProofKind, ProofRequest};

use crate::support;

/// Where the daemon listens.
pub enum Listen {
    /// A fresh unix socket in the daemon's temporary directory.
    Unix,
    /// 127.0.0.1 on a port the OS picks.
    Tcp,
}

/// A running daemon; killed when dropped.
pub struct Daemon {
    child: Child,
    /// Address for clients (`unix:///...` or `tcp://127.0.0.1:port`).
    pub addr: String,
    /// `http://127.0.0.1:port` when metrics are served.
    pub metrics_url: Option<String>,
    /// The daemon's directory (config, socket, log).
    pub dir: tempfile::TempDir,
    exited: Option<ExitStatus>,
}

impl Daemon {
    /// Starts a daemon with the test parameters of WinningPoSt and WindowPoSt present;
    /// `extra` is appended to its TOML configuration, after the `[daemon]` section.
    pub fn start(listen: Listen, extra: &str) -> Daemon {
        support::store_with(ProofKind::WinningPost);
        support::store_with(ProofKind::WindowPost);
        let dir = tempfile::tempdir().unwrap();
        let listen = match listen {
            Listen::Unix => format!("unix://{}", dir.path().join("cuzk.sock").display()),
            Listen::Tcp => "tcp://127.0.0.1:0".to_string(),
        };
        // `extra` lands in [daemon] unless it opens a section of its own.
        let config = format!(
            "[params]\ndir = \"{}\"\n[devices]\nbackend = \"cpu\"\n[daemon]\nlisten = \"{listen}\"\nlog_format = \"json\"\nlog_filter = \"info\"\n{extra}\n",
            support::params_dir().display()
        );
        Self::start_as(dir, &config, &["daemon"])
    }

    /// Starts `cuzk ARGS --config <file holding config>` in `dir` and waits until it
    /// listens. `config` may name `{dir}`, replaced by `dir`'s path.
    pub fn start_as(dir: tempfile::TempDir, config: &str, args: &[&str]) -> Daemon {
        let config = config.replace("{dir}", &dir.path().display().to_string());
        let config_path = dir.path().join("cuzk.toml");
        std::fs::write(&config_path, config).unwrap();
        let log = std::fs::File::create(dir.path().join("daemon.log")).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_cuzk"))
            .args(args)
            .arg("--config")
            .arg(&config_path)
            .env_remove("RUST_LOG")
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut metrics_url = None;
        let deadline = Instant::now() + Duration::from_secs(120);
        let addr = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(a) = line.strip_prefix("listening on ") {
                        break a.to_string();
                    }
                    if let Some(m) = line.strip_prefix("metrics on ") {
                        metrics_url = Some(m.to_string());
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    let log =
                        std::fs::read_to_string(dir.path().join("daemon.log")).unwrap_or_default();
                    panic!("the daemon did not start:\n{log}");
                }
            }
        };
        Daemon {
            child,
            addr,
            metrics_url,
            dir,
            exited: None,
        }
    }

    /// A connected client.
    pub async fn client(&self) -> Client {
        cuzk::daemon::connect(&self.addr).await.unwrap()
    }

    /// The daemon's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("daemon.log")).unwrap_or_default()
    }

    /// The unix socket's path (for unix daemons).
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("cuzk.sock")
    }

    /// Sends a signal (`TERM`, `INT`) to the daemon.
    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{sig} failed");
    }

    /// Waits up to `limit` for the daemon to exit.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(s) = self.child.try_wait().unwrap() {
                self.exited = Some(s);
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if self.exited.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A real 2 KiB request of `kind`.
pub fn request(kind: ProofKind) -> &'static ProofRequest {
    support::inputs().get(kind)
}

/// Its wire form.
pub fn wire(kind: ProofKind, request_id: &str) -> pb::SubmitProofRequest {
    cuzk::daemon::validate::to_wire(request(kind), request_id, 0)
}

/// Checks that `proof` verifies against `kind`'s test request.
pub fn assert_verifies(kind: ProofKind, proof: &[u8]) {
    assert_eq!(proof.len(), 192, "{kind}: one partition, 192 bytes");
    let store = support::store_with(kind);
    assert!(
        cuzk::verify(&store, request(kind), proof).unwrap(),
        "{kind}: the daemon's proof does not verify"
    );
}

/// The status of an await answer.
pub fn status_of(r: &pb::AwaitProofResponse) -> pb::await_proof_response::Status {
    pb::await_proof_response::Status::try_from(r.status).unwrap()
}

/// Polls status until a device runs `job` (its partition is in flight), up to a minute.
pub async fn until_on_device(c: &mut Client, job: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let s = status(c).await;
        if s.gpus.iter().any(|g| g.current_job_id == job) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "job {job} never reached a device: {s:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// One metric sample's value (`name{labels}` exactly as rendered), if present.
pub fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|v| v.strip_prefix(' ')))
        .and_then(|v| v.parse().ok())
}

/// A plain HTTP/1.1 GET over loopback: (status code, body).
pub fn http_get(base: &str, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let hostport = base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(hostport).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {hostport}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let code = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (code, body)
}

/// The daemon's Prometheus text, through GetMetrics.
pub async fn metrics_text(c: &mut Client) -> String {
    c.get_metrics(pb::GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner()
        .prometheus_text
}

/// The daemon's status, through GetStatus.
pub async fn status(c: &mut Client) -> pb::GetStatusResponse {
    c.get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner()
}
