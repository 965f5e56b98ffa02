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

/// A host asks coturn from the socket its connections use: the answer is the
/// socket's address, it never reaches the endpoint (no refused datagram is counted),
/// and the connection carries on beside it.
#[test]
fn a_host_discovers_its_reflexive_address_from_its_own_socket_beside_a_live_connection() {
    use tickwire_proto::{CHANNEL_RELIABLE, EndpointConfig, RemoteId};
    use tickwire_runtime::{FullQueue, Host, HostConfig, HostError, HostEvent};

    let Some(stun) = Coturn::start("host") else { return };
    let local: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut server_cfg = HostConfig::new(local);
    server_cfg.endpoint = EndpointConfig { max_incoming: 4, ..EndpointConfig::default() };
    let mut server = Host::start(server_cfg).unwrap();
    let mut client = Host::start(HostConfig::new(local)).unwrap();
    let peer = client.connect(server.local_addr()).unwrap();
    let probe = client.discover_reflexive(stun.addr).unwrap();
    let start = Instant::now();
    let (mut reflexive, mut connected, mut echoed) = (None, false, false);
    while start.elapsed() < Duration::from_secs(10) && !(reflexive.is_some() && echoed) {
        while let Some(e) = server.poll_event() {
            if let HostEvent::Message { peer, data, .. } = e {
                server.send(peer, CHANNEL_RELIABLE, &data).unwrap();
            }
        }
        server.flush().unwrap();
        while let Some(e) = client.poll_event() {
            match e {
                HostEvent::Connected { .. } => {
                    connected = true;
                    client.send(peer, CHANNEL_RELIABLE, b"hello").unwrap();
                }
                HostEvent::Message { data, .. } => echoed |= data == b"hello",
                _ => {}
            }
        }
        client.flush().unwrap();
        if reflexive.is_none() {
            reflexive = client.take_reflexive(probe);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(connected && echoed, "the connection worked beside the probe");
    let reflexive = reflexive.unwrap_or_else(|| panic!("no answer; coturn's log:\n{}", stun.log()));
    assert_eq!(reflexive, Ok(client.local_addr()));
    assert_eq!(client.take_reflexive(probe), None, "taken once");
    let e = client.endpoint_stats();
    assert_eq!((e.unknown_sender, e.malformed), (0, 0), "the answer never reached the endpoint: {e:?}");

    // Bounded; and a host on an external carrier has no socket to ask from.
    let mut ids = Vec::new();
    let refused = loop {
        match client.discover_reflexive(stun.addr) {
            Ok(id) => ids.push(id),
            Err(e) => break e,
        }
    };
    assert!(matches!(refused, HostError::QueueFull(FullQueue::Probes)), "{refused:?}");
    assert_eq!(ids.len(), tickwire_proto::MAX_PROBES);
    let mut carried = Host::start(HostConfig::external(RemoteId(1), 1200)).unwrap();
    assert!(matches!(carried.discover_reflexive(stun.addr), Err(HostError::Config(_))));
}
