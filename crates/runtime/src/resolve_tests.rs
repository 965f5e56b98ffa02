use std::time::{Duration, Instant};

use super::*;

fn name(host: &str, port: u16) -> Target {
    Target::Name { host: host.into(), port }
}

#[test]
fn ip_literals_parse_as_addresses() {
    for text in ["127.0.0.1:7777", "[::1]:7777", "[::]:0", "0.0.0.0:0"] {
        assert_eq!(Target::parse(text).unwrap(), Target::Addr(text.parse().unwrap()), "{text}");
    }
}

#[test]
fn names_need_a_port_and_a_valid_name() {
    assert_eq!(Target::parse("localhost:7777").unwrap(), name("localhost", 7777));
    assert_eq!(Target::parse("game.example.com.:1").unwrap(), name("game.example.com.", 1));
    assert_eq!(Target::parse("my_host-2.lan:65535").unwrap(), name("my_host-2.lan", 65535));
    assert_eq!(Target::parse("example.invalid:0").unwrap(), name("example.invalid", 0), "0 is the caller's to refuse");
    let long = format!("{}.com:80", vec!["a".repeat(63); 3].join("."));
    assert!(Target::parse(&long).is_ok(), "{}", long.len());
    for bad in [
        "",
        ":",
        "localhost",
        "localhost:",
        ":7777",
        "localhost:65536",
        "localhost:99999999",
        "localhost:+80",
        "localhost:-1",
        "localhost:80 ",
        " localhost:80",
        "local host:80",
        "localhost\n:80",
        "-bad.com:80",
        "bad-.com:80",
        "a..b:80",
        ".:80",
        "exa$mple.com:80",
        "ex\u{e4}mple.com:80",
        "::1:7777",
        "[::1]",
        "[::1:7777",
        "[example.com]:80",
        "999.1.1.1:80",
        "127.1:80",
        "1.2.3.4.5:80",
        "256.0.0.1:80",
    ] {
        assert!(Target::parse(bad).is_err(), "{bad:?} was accepted");
    }
    let huge = format!("{}:80", "a".repeat(10_000));
    assert!(Target::parse(&huge).unwrap_err().contains("bytes long"));
    let label = format!("{}.com:80", "a".repeat(64));
    assert!(Target::parse(&label).is_err());
    let total = format!("{}:80", vec!["a".repeat(63); 4].join("."));
    assert!(Target::parse(&total).unwrap_err().contains("at most 253"), "{}", total.len());
}

#[test]
fn display_round_trips() {
    for text in ["localhost:7777", "127.0.0.1:1", "[::1]:2"] {
        assert_eq!(Target::parse(text).unwrap().to_string(), text);
    }
}

#[test]
fn pick_follows_the_socket_family() {
    let a = |s: &str| s.parse::<SocketAddr>().unwrap();
    let both = [a("[::1]:5"), a("127.0.0.1:5"), a("10.0.0.1:5")];
    assert_eq!(pick(a("0.0.0.0:0"), &both), Some(a("127.0.0.1:5")));
    assert_eq!(pick(a("[::]:0"), &both), Some(a("[::ffff:127.0.0.1]:5")), "dual-stack prefers IPv4");
    assert_eq!(pick(a("[::1]:0"), &both), Some(a("[::1]:5")), "a specific IPv6 bind takes IPv6");
    assert_eq!(pick(a("[::]:0"), &[a("[::1]:5")]), Some(a("[::1]:5")));
    assert_eq!(pick(a("0.0.0.0:0"), &[a("[::1]:5")]), None);
    assert_eq!(pick(a("[::1]:0"), &[a("127.0.0.1:5")]), None);
    assert_eq!(pick(a("0.0.0.0:0"), &[]), None);
    assert!(no_address_reason(a("0.0.0.0:0"), &[a("[::1]:5")]).contains("empty"));
}

fn wait(r: &mut Resolver, ticket: Ticket) -> Resolution {
    let until = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until {
        if let Some((t, answer)) = r.poll() {
            assert_eq!(t, ticket);
            return answer;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!("no answer for ticket {ticket}");
}

#[test]
fn localhost_resolves_and_invalid_fails() {
    let mut r = Resolver::new();
    let local: SocketAddr = "0.0.0.0:0".parse().unwrap();
    let t = r.submit("localhost", 4242, local).unwrap();
    assert_eq!(wait(&mut r, t).unwrap(), "127.0.0.1:4242".parse::<SocketAddr>().unwrap());
    // RFC 6761: .invalid never resolves, and resolvers may answer it without asking.
    let t = r.submit("example.invalid", 4242, local).unwrap();
    let e = wait(&mut r, t).unwrap_err();
    assert!(e.contains("example.invalid"), "{e}");
    assert!(r.waiting.is_empty());
}

#[test]
fn pending_lookups_are_bounded() {
    let mut r = Resolver::new();
    let local: SocketAddr = "0.0.0.0:0".parse().unwrap();
    let mut tickets = Vec::new();
    let mut refused = 0;
    for _ in 0..MAX_PENDING_RESOLUTIONS + 4 {
        match r.submit("localhost", 1, local) {
            Ok(t) => tickets.push(t),
            Err(HostError::QueueFull(FullQueue::Resolutions)) => refused += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(refused >= 4, "{refused}");
    for t in tickets {
        assert!(wait(&mut r, t).is_ok());
    }
    assert!(r.submit("localhost", 1, local).is_ok(), "room again once answers are taken");
}

#[test]
fn dropping_with_lookups_queued_returns_promptly() {
    let mut r = Resolver::new();
    let local: SocketAddr = "0.0.0.0:0".parse().unwrap();
    for _ in 0..MAX_PENDING_RESOLUTIONS {
        r.submit("localhost", 1, local).unwrap();
    }
    let t0 = Instant::now();
    drop(r);
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
}
