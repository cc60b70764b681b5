//! `quiver-gateway`: serve a project, check one, or write a starter project from parquet files.

fn main() {
    eprintln!("quiver-gateway: not yet");
    std::process::exit(2);
}
