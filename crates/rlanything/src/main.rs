//! `rlanything`: the command-line program of RLAnything (the work is in the library,
//! [`rlanything::main_with`]).

/// mimalloc keeps freed memory for reuse: training allocates and frees large tensors every step,
/// which the system allocator would return to the kernel and fault in again.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(rlanything::main_with(std::env::args_os()));
}
