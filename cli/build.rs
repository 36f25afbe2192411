//! Build script: the commit the binary is built from, for `trellis --version` (`0.1.0 (3f2a9c1d0b7e)`).
//! Outside a git checkout (a source tarball) it is `unknown commit`.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string()).filter(|s| !s.is_empty())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown commit".to_string());
    println!("cargo:rustc-env=TRELLIS_COMMIT={commit}");
    // Rebuilt when HEAD moves: HEAD itself, the branch it points to, and packed refs.
    for path in ["HEAD", "packed-refs"] {
        if let Some(p) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        if let Some(p) = git(&["rev-parse", "--git-path", &branch]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
}
