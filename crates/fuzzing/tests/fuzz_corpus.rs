//! Replays every committed fuzz input (`fuzz/corpus/<target>/*`) through the same
//! target functions cargo-fuzz runs (`tickwire_fuzzing`), on stable Rust: each input
//! in its own thread, failing if it panics or takes longer than [`BUDGET`].
//! `scripts/fuzz.sh` is the nightly side (coverage-guided runs that grow the corpus).
//!
//! Run: `cargo test -p tickwire-fuzzing --test fuzz_corpus` (`-- --nocapture` prints
//! the summary per target).

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use tickwire_fuzzing::TARGETS;

/// Longest one input may run (a debug build; libFuzzer runs them optimized).
const BUDGET: Duration = Duration::from_secs(2);

/// Inputs that still fail on this branch, as `"<target>/<file>: what it waits for"`
/// (one string per line: `scripts/fuzz.sh` reads this list too, and leaves them out
/// of its seeds). An input that aborts the process (an allocation that fails) cannot
/// be caught by a thread: it must wait here for its fix. Each must name a file.
const SKIP: &[&str] = &[];

/// `(target, file, why)` of each [`SKIP`] entry.
fn skips() -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
    SKIP.iter().map(|e| {
        let (path, why) = e.split_once(": ").expect("\"<target>/<file>: why\"");
        let (target, file) = path.split_once('/').expect("<target>/<file>");
        (target, file, why)
    })
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus")
}

enum Outcome {
    Passed(Duration),
    Panicked(String),
    TimedOut,
}

fn run(f: fn(&[u8]), data: Vec<u8>) -> Outcome {
    let (tx, rx) = mpsc::channel();
    let start = Instant::now();
    let handle = thread::spawn(move || {
        f(&data);
        let _ = tx.send(());
    });
    match rx.recv_timeout(BUDGET) {
        Ok(()) => {
            let _ = handle.join();
            Outcome::Passed(start.elapsed())
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            let payload = handle.join().expect_err("the target ended without finishing");
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic".into());
            Outcome::Panicked(msg)
        }
        // The thread is left running; the process ends with the test.
        Err(mpsc::RecvTimeoutError::Timeout) => Outcome::TimedOut,
    }
}

#[test]
fn every_committed_fuzz_input_passes_its_target() {
    let root = corpus();
    for (target, file, _) in skips() {
        assert!(root.join(target).join(file).is_file(), "skip list: no {target}/{file}");
    }
    let (mut total, mut passed, mut skipped) = (0, 0, 0);
    let mut failures = Vec::new();
    for &(target, f) in TARGETS {
        let dir = root.join(target);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{target}: an empty corpus");
        let (mut ok, mut skip, mut slowest) = (0, 0, (Duration::ZERO, String::new()));
        for path in &files {
            let name = path.file_name().expect("a file name").to_string_lossy().into_owned();
            total += 1;
            if let Some((_, _, why)) = skips().find(|&(t, n, _)| t == target && n == name) {
                println!("skipped {target}/{name}: {why}");
                skip += 1;
                continue;
            }
            let data = std::fs::read(path).expect("a readable corpus file");
            match run(f, data) {
                Outcome::Passed(d) => {
                    ok += 1;
                    if d > slowest.0 {
                        slowest = (d, name);
                    }
                }
                Outcome::Panicked(msg) => failures.push(format!("{target}/{name}: panicked: {msg}")),
                Outcome::TimedOut => failures.push(format!("{target}/{name}: still running after {BUDGET:?}")),
            }
        }
        println!(
            "{target}: {} inputs, {ok} passed, {skip} skipped; slowest {} ms ({})",
            files.len(),
            slowest.0.as_millis(),
            slowest.1
        );
        passed += ok;
        skipped += skip;
    }
    println!("fuzz corpus: {total} inputs, {passed} passed, {} failed, {skipped} skipped", failures.len());
    assert!(failures.is_empty(), "failing fuzz inputs:\n{}", failures.join("\n"));
}

/// Writes the seeds and regression inputs (`tickwire_fuzzing::corpus`) to
/// `fuzz/corpus/<target>/`, replacing files of the same name and leaving the others
/// (inputs the fuzzer found) alone: `cargo test -p tickwire-fuzzing --test fuzz_corpus
/// -- --ignored write_corpus`.
#[test]
#[ignore = "writes fuzz/corpus; run by hand after a format change"]
fn write_corpus() {
    let root = corpus();
    for (target, name, bytes) in tickwire_fuzzing::corpus() {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir).expect("a corpus directory");
        std::fs::write(dir.join(&name), bytes).expect("a corpus file");
        println!("wrote {target}/{name}");
    }
}
