//! The generated `cuzk.v1` types, client and server (from `proto/cuzk/v1/proving.proto`).
#![allow(missing_docs, clippy::all)]

tonic::include_proto!("cuzk.v1");
