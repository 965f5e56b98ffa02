//! The `tickwire` command as a user runs it, one test binary (linking one binary per
//! file dominated the suite's time): a module per command, named as the file it is in.
//! Run one with a filter, e.g. `cargo test -p tickwire-cli --test cli token::`.

mod demo;
mod rendezvous;
mod serve;
mod token;
