use rla_env::code::sandbox::{find_python, Limits, Sandbox};
fn main() {
    let sb = Sandbox::new(find_python().unwrap(), Limits::default()).unwrap();
    println!("{:?}", sb.isolation());
    let src = std::fs::read_to_string(std::env::args().nth(1).unwrap()).unwrap();
    let r = sb.run_python(&src, b"1 2\n").unwrap();
    println!(
        "{:?} code={:?} sig={:?} {:.2}s\nstdout: {}\nstderr: {}",
        r.status,
        r.code,
        r.signal,
        r.secs,
        &r.stdout[..r.stdout.len().min(300)],
        &r.stderr[..r.stderr.len().min(1000)]
    );
}
