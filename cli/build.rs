//! Nothing to build: with the `etcd` feature the build-dependency `protoc-bin-vendored` is
//! here only so cargo unpacks its protoc before the etcd client's build script runs it
//! (through scripts/protoc; see .cargo/config.toml).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
}
