//! Records the compiler and build settings in the binary: `ksched gate` stores them with its
//! instruction-count baseline and says so when a baseline came from another toolchain.

use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version =
        Command::new(rustc).arg("-V").output().ok().and_then(|o| String::from_utf8(o.stdout).ok()).unwrap_or_default();
    println!("cargo:rustc-env=KSCHED_RUSTC_VERSION={}", version.trim());
    for key in ["PROFILE", "OPT_LEVEL", "DEBUG", "TARGET"] {
        println!("cargo:rustc-env=KSCHED_BUILD_{key}={}", std::env::var(key).unwrap_or_default());
    }
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default().replace('\x1f', " ");
    println!("cargo:rustc-env=KSCHED_BUILD_RUSTFLAGS={flags}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
}
