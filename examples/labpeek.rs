fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = tickwire::lab::parse_args(&args).unwrap_or_else(|e| panic!("{e}"));
    tickwire::lab::run(&opts, |s| print!("{s}")).unwrap();
}
