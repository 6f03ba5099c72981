//! Generates the `cuzk.v1` gRPC code from `proto/cuzk/v1/proving.proto`.
//!
//! The `.proto` is parsed by `protox` (a protobuf compiler written in Rust), so building
//! needs no `protoc` on the machine; `tonic-prost-build` turns the descriptors into Rust.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/cuzk/v1/proving.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["proto"])?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        // prost's codec behind a scan that bounds what decoding may allocate
        .codec_path("crate::daemon::codec::BoundedCodec")
        .compile_fds(descriptors)?;
    Ok(())
}
