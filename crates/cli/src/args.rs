//! A small command-line parser: `--name value`, `--name=value` and positionals.
//! Unknown options, missing values and out-of-range numbers are usage errors.

use std::fmt::Display;
use std::ops::RangeInclusive;
use std::str::FromStr;

/// A message for the user; the caller prints it with the usage text and exits 2.
#[derive(Debug)]
pub struct UsageError(pub String);

/// Options and positionals of one subcommand.
pub struct Args {
    options: Vec<(String, String)>,
    positional: Vec<String>,
}

impl Args {
    /// Splits `argv` into options (each must be one of `known`, given at most once)
    /// and positionals.
    pub fn parse(argv: &[String], known: &[&str]) -> Result<Args, UsageError> {
        let mut options: Vec<(String, String)> = Vec::new();
        let mut positional = Vec::new();
        let mut it = argv.iter();
        while let Some(arg) = it.next() {
            let Some(opt) = arg.strip_prefix("--") else {
                positional.push(arg.clone());
                continue;
            };
            let (name, value) = match opt.split_once('=') {
                Some((n, v)) => (n.to_string(), v.to_string()),
                None => {
                    let v = it.next().ok_or_else(|| UsageError(format!("option --{opt} needs a value")))?;
                    (opt.to_string(), v.clone())
                }
            };
            if !known.contains(&name.as_str()) {
                return Err(UsageError(format!("unknown option --{name}")));
            }
            if options.iter().any(|(n, _)| *n == name) {
                return Err(UsageError(format!("option --{name} given twice")));
            }
            options.push((name, value));
        }
        Ok(Args { options, positional })
    }

    /// The positionals, taken out of the parser.
    pub fn positional(&mut self) -> Vec<String> {
        std::mem::take(&mut self.positional)
    }

    /// Fails if any positional argument was given.
    pub fn no_positional(&mut self) -> Result<(), UsageError> {
        match self.positional.first() {
            Some(p) => Err(UsageError(format!("unexpected argument {p:?}"))),
            None => Ok(()),
        }
    }

    /// The option's text, if given.
    pub fn text(&self, name: &str) -> Result<Option<&str>, UsageError> {
        Ok(self.options.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str()))
    }

    /// The option's value parsed as `T`, or `default`; must lie in `range`.
    pub fn get<T>(&self, name: &str, default: T, range: RangeInclusive<T>) -> Result<T, UsageError>
    where
        T: FromStr + PartialOrd + Display + Copy,
    {
        let Some((_, raw)) = self.options.iter().find(|(n, _)| n == name) else { return Ok(default) };
        let v: T = raw.parse().map_err(|_| UsageError(format!("--{name}: {raw:?} is not a valid number")))?;
        if !range.contains(&v) {
            return Err(UsageError(format!("--{name}: {v} is outside {}..={}", range.start(), range.end())));
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parses_both_spellings_and_checks_ranges() {
        let a = Args::parse(&argv("--clients 3 --seconds=5"), &["clients", "seconds", "loss-pct"]).unwrap();
        assert_eq!(a.get("clients", 4usize, 1..=64).unwrap(), 3);
        assert_eq!(a.get("seconds", 10u64, 1..=60).unwrap(), 5);
        assert_eq!(a.get("loss-pct", 2.0f64, 0.0..=90.0).unwrap(), 2.0);
        assert!(Args::parse(&argv("--clients 0"), &["clients"]).unwrap().get("clients", 4usize, 1..=64).is_err());
        assert!(Args::parse(&argv("--clients x"), &["clients"]).unwrap().get("clients", 4usize, 1..=64).is_err());
        assert!(Args::parse(&argv("--nope 1"), &["clients"]).is_err());
        assert!(Args::parse(&argv("--clients"), &["clients"]).is_err());
        assert!(Args::parse(&argv("--clients 1 --clients 2"), &["clients"]).is_err());
        let mut a = Args::parse(&argv("loopback --messages 10"), &["messages"]).unwrap();
        assert_eq!(a.positional(), vec!["loopback"]);
    }
}
