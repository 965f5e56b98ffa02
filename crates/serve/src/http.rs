//! Just enough HTTP/1.1 for the server's two local conversations: answering a scrape or
//! an admin call (`Listener`), and calling the Agones SDK sidecar (`call`). Both are on
//! localhost or a cluster's pod network, never a player's path; still, every request is
//! bounded (head 8 KiB, body 64 KiB, 2 s to arrive) and a bad one gets a 400 and is
//! closed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

const MAX_HEAD: usize = 8 * 1024;
const MAX_BODY: usize = 64 * 1024;
const IO_TIMEOUT: Duration = Duration::from_secs(2);

/// A request as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `POST`, `PUT`, ...
    pub method: String,
    /// The path, query included.
    pub path: String,
    /// The body (empty without a `Content-Length`).
    pub body: Vec<u8>,
}

/// A response to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// 200, 404, ...
    pub status: u16,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// A response of `status` with a text body.
    pub fn text(status: u16, body: impl Into<String>) -> Self {
        Response { status, content_type: "text/plain; charset=utf-8", body: body.into().into_bytes() }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Error",
    }
}

/// Reads one request: the request line, the headers (only `Content-Length` is used),
/// and the body.
pub fn read_request(stream: &mut impl Read) -> Result<Request, String> {
    let mut r = BufReader::new(stream.take((MAX_HEAD + MAX_BODY) as u64));
    let mut line = String::new();
    let mut head = 0;
    let mut next_line = |r: &mut BufReader<_>, line: &mut String| -> Result<(), String> {
        line.clear();
        let n = r.read_line(line).map_err(|e| format!("reading: {e}"))?;
        head += n;
        if n == 0 || head > MAX_HEAD {
            return Err("the request's head is cut short or too long".into());
        }
        Ok(())
    };
    next_line(&mut r, &mut line)?;
    let mut parts = line.split_whitespace();
    let (Some(method), Some(path), Some(version)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(format!("not a request line: {:?}", line.trim_end()));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(format!("not HTTP/1.x: {version:?}"));
    }
    let (method, path) = (method.to_string(), path.to_string());
    let mut length = 0usize;
    loop {
        next_line(&mut r, &mut line)?;
        let h = line.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((name, value)) = h.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().map_err(|_| format!("bad Content-Length {value:?}"))?;
                if length > MAX_BODY {
                    return Err(format!("a body of {length} bytes (at most {MAX_BODY})"));
                }
            }
        }
    }
    let mut body = vec![0; length];
    r.read_exact(&mut body).map_err(|e| format!("reading the body: {e}"))?;
    Ok(Request { method, path, body })
}

/// Writes `resp` and asks the client to close.
pub fn write_response(stream: &mut impl Write, resp: &Response) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        resp.status,
        reason(resp.status),
        resp.content_type,
        resp.body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(&resp.body)?;
    stream.flush()
}

/// A local HTTP listener whose requests are answered one at a time by `handle`, on a
/// thread of its own.
pub struct Listener {
    addr: SocketAddr,
}

impl Listener {
    /// Binds `addr` and starts answering.
    pub fn start(
        addr: SocketAddr,
        mut handle: impl FnMut(&Request) -> Response + Send + 'static,
    ) -> std::io::Result<Listener> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        std::thread::Builder::new().name("tickwire-http".into()).spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut s) = stream else { continue };
                let _ = s.set_read_timeout(Some(IO_TIMEOUT));
                let _ = s.set_write_timeout(Some(IO_TIMEOUT));
                let resp = match read_request(&mut s) {
                    Ok(req) => handle(&req),
                    Err(e) => Response::text(400, e),
                };
                let _ = write_response(&mut s, &resp);
            }
        })?;
        Ok(Listener { addr })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

/// Calls `method path` on `addr` with a JSON `body`; the status and body of the answer.
pub fn call(addr: SocketAddr, method: &str, path: &str, body: Option<&str>) -> Result<(u16, String), String> {
    let mut s = TcpStream::connect_timeout(&addr, IO_TIMEOUT).map_err(|e| format!("connecting to {addr}: {e}"))?;
    let _ = s.set_read_timeout(Some(IO_TIMEOUT));
    let _ = s.set_write_timeout(Some(IO_TIMEOUT));
    let body = body.unwrap_or("");
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).map_err(|e| format!("sending to {addr}: {e}"))?;
    let mut out = Vec::new();
    s.take(MAX_HEAD as u64 + MAX_BODY as u64).read_to_end(&mut out).map_err(|e| format!("reading {addr}: {e}"))?;
    let text = String::from_utf8_lossy(&out);
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(|| format!("{addr}: no complete answer"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("{addr}: no status in {:?}", head.lines().next()))?;
    Ok((status, body.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_back_and_bad_ones_are_refused() {
        let raw = b"POST /ready HTTP/1.1\r\nHost: x\r\ncontent-length: 2\r\n\r\n{}";
        let r = read_request(&mut &raw[..]).unwrap();
        assert_eq!((r.method.as_str(), r.path.as_str(), &r.body[..]), ("POST", "/ready", &b"{}"[..]));
        for bad in [
            &b""[..],
            b"GARBAGE\r\n\r\n",
            b"GET / SPDY/3\r\n\r\n",
            b"POST / HTTP/1.1\r\nContent-Length: 9999999\r\n\r\n",
            b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
            b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n{}",
        ] {
            assert!(read_request(&mut &bad[..]).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        let mut long = b"GET / HTTP/1.1\r\n".to_vec();
        long.extend(std::iter::repeat_n(b'a', MAX_HEAD + 10));
        assert!(read_request(&mut &long[..]).is_err(), "a head past 8 KiB");
    }

    #[test]
    fn a_listener_answers_a_call() {
        let l = Listener::start("127.0.0.1:0".parse().unwrap(), |r| {
            Response::text(200, format!("{} {}", r.method, r.path))
        })
        .unwrap();
        let (status, body) = call(l.local_addr(), "PUT", "/x?y=1", Some("{}")).unwrap();
        assert_eq!((status, body.as_str()), (200, "PUT /x?y=1"));
    }
}
