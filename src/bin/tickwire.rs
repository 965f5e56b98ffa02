fn main() {
    eprintln!("tickwire: not yet implemented");
    std::process::exit(2);
}
