//! Generates the gRPC service of `proto/flakeid/v1/flakeid.proto` and its file descriptor
//! set (for server reflection), with `$PROTOC` if set, else the protoc that
//! `protoc-bin-vendored` ships: no system tool needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    let mut config = tonic_prost_build::Config::new();
    if std::env::var_os("PROTOC").is_none() {
        config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    }
    tonic_prost_build::configure()
        .build_client(true)
        .file_descriptor_set_path(out.join("flakeid_v1_descriptor.bin"))
        .compile_with_config(config, &["proto/flakeid/v1/flakeid.proto"], &["proto"])?;
    println!("cargo:rerun-if-changed=proto");
    println!("cargo:rerun-if-env-changed=PROTOC");
    Ok(())
}
