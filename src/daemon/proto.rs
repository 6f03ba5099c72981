//! The generated `cuzk.v1` types, client and server (from `proto/cuzk/v1/proving.proto`).
// The proto's comments become these items' docs as they are: placeholders such as
// `<kind>-<size>` read as HTML tags to rustdoc.
#![allow(missing_docs, clippy::all, rustdoc::invalid_html_tags)]

tonic::include_proto!("cuzk.v1");
