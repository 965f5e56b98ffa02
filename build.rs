//! Gives the shared library an ELF SONAME carrying the ABI version: `libtickwire.so.N`,
//! with N = `TW_ABI_VERSION` (src/version.rs, the one source of the number). Programs
//! linked against it record `libtickwire.so.N`, so a library of another ABI is never
//! loaded in its place; `scripts/install.sh` installs the file under that name with the
//! `libtickwire.so` link beside it. Only the cdylib gets the argument, and only on ELF
//! targets whose linkers take `-soname` (macOS and Windows have their own schemes).

use std::{env, fs};

fn main() {
    println!("cargo:rerun-if-changed=src/version.rs");
    let source = fs::read_to_string("src/version.rs").expect("build.rs: read src/version.rs");
    let abi: u32 = source
        .lines()
        .find_map(|line| line.trim().strip_prefix("pub const TW_ABI_VERSION: u32 = "))
        .and_then(|rest| rest.strip_suffix(';'))
        .and_then(|n| n.trim().parse().ok())
        .expect("build.rs: no `pub const TW_ABI_VERSION: u32 = N;` in src/version.rs");
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if matches!(os.as_str(), "linux" | "android" | "freebsd" | "netbsd" | "openbsd" | "dragonfly") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libtickwire.so.{abi}");
    }
}
