//! `tickwire token`: what a game backend does with the relay server's key. `key` makes a
//! new 32-byte key; `mint` makes a connect token for one client (netcode.io style); both
//! print hex on one line, so that a script can pass them on. `mint` reads the key from
//! a file (`--key-file`, as `token key > FILE` writes it) or from the environment
//! (`TICKWIRE_TOKEN_KEY`), never from the command line: every user of the machine can
//! read a process's arguments (`ps`).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use tickwire_proto::token::{self, ConnectToken, TokenParams};
use tickwire_proto::{KEY_SIZE, MatchClaim, Secret, ServeClaim};
use zeroize::Zeroizing;

use super::args::{MintArgs, TokenAction, UsageError};

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes written as `s` in hex (surrounding whitespace ignored).
pub fn unhex(s: &str) -> Result<Vec<u8>, String> {
    let s = s.trim();
    if s.len() % 2 != 0 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("not an even number of hex digits".to_string());
    }
    Ok((0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("checked hex")).collect())
}

/// The environment variable `token mint` reads the key from when no `--key-file` is given.
pub const KEY_ENV: &str = "TICKWIRE_TOKEN_KEY";

/// The key for `token mint`: from `--key-file` if given, else from [`KEY_ENV`]
/// (`env`). A `--key` is refused: it would sit in the process list for the whole run.
/// Every copy of the key's text is wiped when dropped; the error messages never repeat it.
fn mint_key(a: &MintArgs, env: Option<Zeroizing<String>>) -> Result<Secret, UsageError> {
    if a.key.is_some() {
        return Err(UsageError(format!(
            "token mint: --key is refused: a key on the command line shows in the process list (ps) to every user \
             of the machine; give --key-file PATH (a file written by `tickwire token key > PATH`) or set {KEY_ENV}"
        )));
    }
    read_key(a.key_file.as_deref(), env, ("--key-file", KEY_ENV), "token mint")
}

/// The environment as `read_key` takes it: set (a value not Unicode reads as empty,
/// which is refused as no key), or not.
pub fn env_secret(name: &str) -> Option<Zeroizing<String>> {
    // Read here, not by clap's `env`, which would keep the text in a String that nobody
    // wipes.
    match std::env::var(name) {
        Ok(text) => Some(Zeroizing::new(text)),
        Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(_)) => Some(Zeroizing::new(String::new())),
    }
}

/// A 32-byte secret (a key, a match secret) from `file` if given, else from the
/// environment variable `env_name` (its value `env`), for the command `words`.
pub fn read_key(
    file: Option<&std::path::Path>,
    env: Option<Zeroizing<String>>,
    (flag, env_name): (&str, &str),
    words: &str,
) -> Result<Secret, UsageError> {
    let text = read_text(file, env, (flag, env_name), words)?;
    parse_key(&text.0, &format!("{words}: {}", text.1))
}

/// The text of a secret from `file` if given, else from the environment (`env`, the
/// value of `env_name`), and where it came from; wiped when dropped.
pub fn read_text(
    file: Option<&std::path::Path>,
    env: Option<Zeroizing<String>>,
    (flag, env_name): (&str, &str),
    words: &str,
) -> Result<(Zeroizing<String>, String), UsageError> {
    match file {
        Some(path) => {
            let source = format!("{flag} {}", path.display());
            let text = std::fs::read_to_string(path)
                .map_err(|e| UsageError(format!("{words}: {source}: cannot read it: {e}")))?;
            Ok((Zeroizing::new(text), source))
        }
        None => match env {
            Some(text) => Ok((text, env_name.to_string())),
            None => Err(UsageError(format!(
                "{words}: none given: give {flag} PATH (a file holding it in hex) or set {env_name}; never on the \
                 command line, where ps shows it to every user"
            ))),
        },
    }
}

/// The key from its text (64 hex digits, surrounding whitespace ignored), decoded
/// straight into the [`Secret`] that wipes it, with no other copy of its bytes;
/// `source` names the command and where the text came from.
fn parse_key(text: &str, source: &str) -> Result<Secret, UsageError> {
    let text = text.trim().as_bytes();
    let bad = || UsageError(format!("{source}: a key is {KEY_SIZE} bytes, written as 64 hex digits"));
    if text.len() != 2 * KEY_SIZE {
        return Err(bad());
    }
    let mut key = Secret([0; KEY_SIZE]);
    for (byte, pair) in key.0.iter_mut().zip(text.chunks_exact(2)) {
        let digit = |c: u8| (c as char).to_digit(16).ok_or_else(bad);
        *byte = (digit(pair[0])? * 16 + digit(pair[1])?) as u8;
    }
    // The open endpoint's key: anyone could mint tokens with it.
    if key.0 == [0; KEY_SIZE] {
        return Err(UsageError(format!(
            "{source}: the key is all zero bytes, which is no secret; make one with `tickwire token key`"
        )));
    }
    Ok(key)
}

/// A token's fields as a backend would set them.
pub struct MintOptions {
    pub key: Secret,
    pub protocol_id: u32,
    pub client_id: u64,
    pub addresses: Vec<SocketAddr>,
    pub expire_secs: u64,
    pub timeout_secs: u32,
    pub user_data: Vec<u8>,
}

/// Mints a token valid from now (system clock) with OS randomness. The token holds its
/// key in clear: it comes back in a buffer wiped when dropped.
pub fn mint(o: &MintOptions) -> Result<Zeroizing<Vec<u8>>, String> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_err(|e| e.to_string())?.as_secs();
    let params = TokenParams {
        protocol_id: o.protocol_id,
        client_id: o.client_id,
        created: now,
        expires: now + o.expire_secs,
        timeout_secs: o.timeout_secs,
        addresses: o.addresses.clone(),
        user_data: o.user_data.clone(),
    };
    // The last 32 bytes become the token's key.
    let random = Zeroizing::new(tickwire_runtime::os_random_bytes::<56>().map_err(|e| e.to_string())?);
    token::mint(&o.key, &params, &random).map_err(|e| e.to_string())
}

pub fn run(action: &TokenAction) -> Result<ExitCode, UsageError> {
    match action {
        TokenAction::Key => {
            // The key and its text are wiped when dropped (stdout's buffer is not ours).
            let key = Zeroizing::new(
                tickwire_runtime::os_random_bytes::<KEY_SIZE>().map_err(|e| UsageError(format!("token key: {e}")))?,
            );
            println!("{}", *Zeroizing::new(hex(&*key)));
            Ok(ExitCode::SUCCESS)
        }
        TokenAction::Mint(a) => {
            // Read here, not by clap's `env`, which would keep the key's text in a String
            // that nobody wipes. Set but not Unicode: read as empty, refused as not a key.
            let env = env_secret(KEY_ENV);
            let opts = MintOptions {
                key: mint_key(a, env)?,
                protocol_id: a.protocol_id,
                client_id: a.client_id,
                addresses: a.addresses.clone(),
                expire_secs: a.expire_secs,
                timeout_secs: a.timeout_secs,
                user_data: match (a.match_id, a.slot, a.players, a.serve_match) {
                    (Some(match_id), Some(slot), Some(players), None) => MatchClaim { match_id, slot, players }
                        .user_data(a.user_data.as_ref().map_or(&[][..], |u| &u.0[..]))
                        .map_err(|e| UsageError(format!("token mint: {e}")))?,
                    (None, None, Some(players), Some(match_id)) => {
                        ServeClaim { match_id, players, input_size: a.input_size, tick_rate_hz: a.tick_rate }
                            .user_data(a.user_data.as_ref().map_or(&[][..], |u| &u.0[..]))
                            .map_err(|e| UsageError(format!("token mint: {e}")))?
                    }
                    (None, None, Some(_), None) => {
                        return Err(UsageError("token mint: --players needs --match or --serve-match".into()));
                    }
                    _ => a.user_data.as_ref().map(|u| u.0.clone()).unwrap_or_default(),
                },
            };
            let bytes = mint(&opts).map_err(|e| UsageError(format!("token mint: {e}")))?;
            debug_assert!(ConnectToken::decode(&bytes).is_ok());
            println!("{}", *Zeroizing::new(hex(&bytes)));
            Ok(ExitCode::SUCCESS)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minted_token_opens_with_the_key_it_was_minted_with() {
        let o = MintOptions {
            key: Secret([7; KEY_SIZE]),
            protocol_id: 9,
            client_id: 5,
            addresses: vec!["127.0.0.1:7000".parse().unwrap()],
            expire_secs: 60,
            timeout_secs: 0,
            user_data: vec![1, 2, 3],
        };
        let bytes = mint(&o).unwrap();
        let t = ConnectToken::decode(&unhex(&hex(&bytes)).unwrap()).unwrap();
        let claims = token::open(&o.key, 9, t.expires, &t.nonce, &t.sealed).unwrap();
        assert_eq!((claims.client_id, &claims.user_data[..3]), (5, &[1u8, 2, 3][..]));
        assert!(unhex("abc").is_err() && unhex("zz").is_err());
    }
}
