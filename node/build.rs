//! Links the addon the way Node loads it (napi-rs's setup).

fn main() {
    napi_build::setup();
}
