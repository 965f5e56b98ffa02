//! Reflexive address discovery against a real STUN server: Debian's coturn
//! (`turnserver`), started on 127.0.0.1 on a free port for each test, STUN only, with
//! no TLS, DTLS, TCP, CLI or credentials, its database in a temporary directory (no
//! config file, no root paths). A binding request from a plain `UdpSocket`, encoded by
//! proto's `encode_binding_request`, is answered with the address the server saw:
//! on loopback there is no NAT, so it is the socket's own. When `turnserver` is not
//! installed the tests say so and pass (`tests/run.sh` installs coturn).
//!
//! Debian's package enables and starts its own daemon (port 3478, `/etc/turnserver.conf`)
//! where systemd runs; a free port of our own keeps these tests clear of it.

use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tickwire_proto::{StunError, decode_binding_response, encode_binding_request};

/// How long a server has to answer (it starts in a few hundred milliseconds).
const ANSWER_WITHIN: Duration = Duration::from_secs(4);
/// How often the request is sent again until then (the server may not be up yet).
const RESEND_EVERY: Duration = Duration::from_millis(50);

/// A `turnserver` of our own, killed (and its directory removed) on drop.
struct Coturn {
    child: Child,
    dir: PathBuf,
    addr: SocketAddr,
}

impl Coturn {
    /// Starts one on a free port, or `None` (having said why) when coturn is not
    /// installed.
    fn start(test: &str) -> Option<Coturn> {
        // A free port: the system's choice for a socket we then close.
        let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = std::env::temp_dir().join(format!("tickwire-coturn-{}-{test}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = std::fs::File::create(dir.join("turnserver.log")).unwrap();
        let spawned = Command::new("turnserver")
            .args([
                "-n", // no configuration file
                "--listening-ip=127.0.0.1",
                &format!("--listening-port={port}"),
                "--stun-only",
                "--no-auth",
                "--no-tls",
                "--no-dtls",
                "--no-tcp",
                "--no-cli",
                "--no-rfc5780", // no alternate port beside ours
                "--no-software-attribute",
                "--log-file=stdout",
                "--simple-log",
                "--pidfile=",
                &format!("--db={}", dir.join("turndb").display()),
            ])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(Stdio::null())
            .spawn();
        match spawned {
            Ok(child) => Some(Coturn { child, dir, addr: SocketAddr::from(([127, 0, 0, 1], port)) }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                println!("skipped: coturn (turnserver) is not installed; tests/run.sh installs it");
                let _ = std::fs::remove_dir_all(&dir);
                None
            }
            Err(e) => panic!("starting turnserver: {e}"),
        }
    }

    /// The server's log so far, for a failure's message.
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("turnserver.log")).unwrap_or_default()
    }

    /// Sends a binding request of `id` from `socket` until the server answers, and
    /// returns the answer's bytes.
    fn ask(&mut self, socket: &UdpSocket, id: [u8; 12]) -> Vec<u8> {
        let mut request = Vec::new();
        encode_binding_request(id, &mut request);
        socket.set_read_timeout(Some(RESEND_EVERY)).unwrap();
        let start = Instant::now();
        let mut buf = [0u8; 1500];
        while start.elapsed() < ANSWER_WITHIN {
            socket.send_to(&request, self.addr).unwrap();
            if let Ok((n, from)) = socket.recv_from(&mut buf) {
                assert_eq!(from, self.addr, "an answer from elsewhere");
                return buf[..n].to_vec();
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("turnserver exited ({status}); its log:\n{}", self.log());
            }
        }
        panic!("no answer from turnserver on {} within {ANSWER_WITHIN:?}; its log:\n{}", self.addr, self.log());
    }
}

impl Drop for Coturn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn coturn_reports_the_sockets_own_address_on_loopback() {
    let Some(mut server) = Coturn::start("own") else { return };
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let id = *b"tickwire-stu";
    let answer = server.ask(&socket, id);
    let reflexive = decode_binding_response(&answer, id).unwrap_or_else(|e| panic!("{e}: {answer:02x?}"));
    assert_eq!(reflexive, socket.local_addr().unwrap());
}

#[test]
fn coturns_answer_to_another_transaction_is_refused() {
    let Some(mut server) = Coturn::start("other") else { return };
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (asked, expected) = (*b"transaction1", *b"transaction2");
    let answer = server.ask(&socket, asked);
    assert_eq!(decode_binding_response(&answer, expected), Err(StunError::TransactionMismatch));
    // The same bytes are the answer to the transaction they name.
    assert_eq!(decode_binding_response(&answer, asked), Ok(socket.local_addr().unwrap()));
}
