//! `tickwire token mint` as a backend's script runs it: the relay server's key comes
//! from a file or the environment, never from the command line, where every user of
//! the machine could read it in the process list.

use std::path::PathBuf;
use std::process::{Command, Output};

use tickwire_proto::token::{self, ConnectToken};
use tickwire_proto::{EndpointConfig, KEY_SIZE, Secret};

const ENV: &str = "TICKWIRE_TOKEN_KEY";
const ADDRESSES: [&str; 2] = ["--addresses", "127.0.0.1:7000"];

fn tickwire(args: &[&str], env: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tickwire"));
    c.args(args).env_remove(ENV);
    if let Some(v) = env {
        c.env(ENV, v);
    }
    c.output().expect("tickwire runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A file holding `text`, named after the test.
fn file(name: &str, text: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("token-{name}-{}", std::process::id()));
    std::fs::write(&p, text).unwrap();
    p
}

fn bytes_of(hex: &str) -> Vec<u8> {
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect()
}

/// The token printed by a successful mint opens with `key`.
fn assert_minted_with(o: &Output, key: &str) {
    assert!(o.status.success(), "mint failed: {}", stderr(o));
    let t = ConnectToken::decode(&bytes_of(&stdout(o))).expect("a token");
    let key = Secret(bytes_of(key).try_into().unwrap());
    token::open(&key, EndpointConfig::default().protocol_id, t.expires, &t.nonce, &t.sealed).expect("opens");
}

/// A refused mint: exit status 2, nothing on stdout, the reason on stderr.
fn refused(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(2), "stdout {:?}", stdout(o));
    assert!(o.stdout.is_empty());
    stderr(o)
}

#[test]
fn mint_reads_the_key_from_a_file_as_token_key_writes_it() {
    let key = tickwire(&["token", "key"], None);
    assert!(key.status.success());
    let key_text = String::from_utf8(key.stdout).unwrap(); // 64 hex digits and a newline
    assert_eq!(key_text.trim().len(), 2 * KEY_SIZE);
    let path = file("good", &key_text);
    let o = tickwire(&["token", "mint", "--key-file", path.to_str().unwrap(), ADDRESSES[0], ADDRESSES[1]], None);
    assert_minted_with(&o, key_text.trim());
    // The file wins over the environment: an explicit choice on the command line.
    let other = "11".repeat(KEY_SIZE);
    let o =
        tickwire(&["token", "mint", "--key-file", path.to_str().unwrap(), ADDRESSES[0], ADDRESSES[1]], Some(&other));
    assert_minted_with(&o, key_text.trim());
}

#[test]
fn mint_reads_the_key_from_the_environment() {
    let key = "a5".repeat(KEY_SIZE);
    let o = tickwire(&["token", "mint", ADDRESSES[0], ADDRESSES[1]], Some(&format!(" {key}\n")));
    assert_minted_with(&o, &key);
}

#[test]
fn a_key_on_the_command_line_is_refused() {
    let key = "a5".repeat(KEY_SIZE);
    let o = tickwire(&["token", "mint", "--key", &key, ADDRESSES[0], ADDRESSES[1]], None);
    let err = refused(&o);
    assert!(err.contains("process list"), "{err}");
    assert!(err.contains("--key-file") && err.contains(ENV), "says what to use instead: {err}");
    assert!(!err.contains(&key), "the key is not repeated: {err}");
}

#[test]
fn a_missing_short_or_zero_key_is_refused_clearly() {
    let err = refused(&tickwire(&["token", "mint", ADDRESSES[0], ADDRESSES[1]], None));
    assert!(err.contains("--key-file") && err.contains(ENV), "{err}");

    let missing = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("no-such-key-file");
    let err = refused(&tickwire(
        &["token", "mint", "--key-file", missing.to_str().unwrap(), ADDRESSES[0], ADDRESSES[1]],
        None,
    ));
    assert!(err.contains("no-such-key-file"), "names the file: {err}");

    let short = "ab".repeat(KEY_SIZE - 1);
    let path = file("short", &short);
    let err =
        refused(&tickwire(&["token", "mint", "--key-file", path.to_str().unwrap(), ADDRESSES[0], ADDRESSES[1]], None));
    assert!(err.contains("64 hex digits"), "{err}");
    assert!(!err.contains(&short), "the key is not repeated: {err}");
    let err = refused(&tickwire(&["token", "mint", ADDRESSES[0], ADDRESSES[1]], Some("zz")));
    assert!(err.contains(ENV) && err.contains("64 hex digits"), "{err}");

    let zero = "0".repeat(2 * KEY_SIZE);
    let path = file("zero", &zero);
    let err =
        refused(&tickwire(&["token", "mint", "--key-file", path.to_str().unwrap(), ADDRESSES[0], ADDRESSES[1]], None));
    assert!(err.contains("all zero"), "{err}");
    let err = refused(&tickwire(&["token", "mint", ADDRESSES[0], ADDRESSES[1]], Some(&zero)));
    assert!(err.contains("all zero"), "{err}");
}

#[test]
fn token_help_names_the_actions_and_mint_help_its_options() {
    let o = tickwire(&["token", "--help"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let help = stdout(&o);
    assert!(help.contains("key") && help.contains("mint") && help.contains("Usage: tickwire token"), "{help}");

    let o = tickwire(&["token", "mint", "--help"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let help = stdout(&o);
    for option in ["--key-file", "--addresses", "--client-id", "--protocol-id", "--expire-secs", "--user-data", ENV] {
        assert!(help.contains(option), "{option}: {help}");
    }
}

#[test]
fn unknown_options_and_bad_values_are_refused_naming_the_option() {
    let key = "a5".repeat(KEY_SIZE);
    let err = refused(&tickwire(&["token", "mint", ADDRESSES[0], ADDRESSES[1], "--client", "3"], Some(&key)));
    assert!(err.contains("'--client'") && err.contains("--client-id"), "names it and suggests: {err}");
    let err = refused(&tickwire(&["token", "mint", ADDRESSES[0], ADDRESSES[1], "--expire-secs", "soon"], Some(&key)));
    assert!(err.contains("--expire-secs") && err.contains("soon"), "{err}");
    let err = refused(&tickwire(&["token", "mint", ADDRESSES[0], ADDRESSES[1], "--timeout-secs", "3601"], Some(&key)));
    assert!(err.contains("--timeout-secs") && err.contains("3601"), "{err}");
    let err = refused(&tickwire(&["token", "mint", "--addresses", "127.0.0.1:7000,nowhere"], Some(&key)));
    assert!(err.contains("--addresses") && err.contains("nowhere"), "{err}");
    let err = refused(&tickwire(&["token", "mint", ADDRESSES[0], ADDRESSES[1], "--user-data", "xyz"], Some(&key)));
    assert!(err.contains("--user-data"), "{err}");
    let err = refused(&tickwire(&["token", "forge"], Some(&key)));
    assert!(err.contains("forge"), "{err}");
}
