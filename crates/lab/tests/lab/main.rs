//! The lab's verdicts, one test binary (linking one binary per file dominated the
//! suite's time): a module per feature, named as the file it is in. Run one with a
//! filter, e.g. `cargo test -p tickwire-lab --test lab lab_scale::`.

mod lab_scale;
mod lab_sync;
