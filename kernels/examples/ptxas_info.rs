//! Prints ptxas resource usage (registers, stack, spills) of every kernel module for sm_90,
//! or of the modules named on the command line.
//! Needs NVRTC, no GPU: `cargo run --release -p cuzk-kernels --example ptxas_info [ntt ...]`.

fn main() {
    let only: Vec<String> = std::env::args().skip(1).collect();
    for m in cuzk_kernels::compile::MODULES {
        if !only.is_empty() && !only.iter().any(|o| o == m.name) {
            continue;
        }
        match cuzk_kernels::compile::compile_module_with(m, "sm_90", &["--ptxas-options=-v"]) {
            Ok((_, log)) => println!("== {}\n{log}", m.name),
            Err(e) => println!("== {}: {e}", m.name),
        }
    }
}
