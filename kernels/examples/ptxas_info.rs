//! Prints ptxas resource usage (registers, stack, spills) of every kernel module for sm_90.
//! Needs NVRTC, no GPU: `cargo run --release -p cuzk-kernels --example ptxas_info`.

fn main() {
    for m in cuzk_kernels::compile::MODULES {
        match cuzk_kernels::compile::compile_module_with(m, "sm_90", &["--ptxas-options=-v"]) {
            Ok((_, log)) => println!("== {}\n{log}", m.name),
            Err(e) => println!("== {}: {e}", m.name),
        }
    }
}
