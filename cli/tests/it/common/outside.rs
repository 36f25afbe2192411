//! Where the outside clients and readers live (installed by `.ci/tools` into `<repo>/.tools/`, and Go's
//! terraform-json types from Debian in `/usr/share/gocode`). A test that needs one and does not find it
//! fails, saying what to run: these tests are the proof that software nobody here wrote accepts what
//! trellis writes and serves, so they never skip.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `<repo>/.tools`.
pub fn tools_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../.tools")
}

/// The executable `name` of the venv `venv` (`sdk`, `checkov`, `tfc`): `.tools/<venv>/bin/<name>`.
pub fn tool(venv: &str, name: &str) -> PathBuf {
    let path = tools_dir().join(venv).join("bin").join(name);
    assert!(
        path.exists(),
        "outside tool {} is not installed: run .ci/tools (installs the pinned PyPI and Debian packages)",
        path.display()
    );
    path
}

/// The Python interpreter of the SDK venv (azure-mgmt-network, azure-mgmt-resource, google-cloud-compute,
/// google-cloud-dns).
pub fn sdk_python() -> Command {
    let mut cmd = Command::new(tool("sdk", "python"));
    // The SDKs must never reach out: no proxy, no metadata server, no credential discovery.
    cmd.env("NO_PROXY", "127.0.0.1,localhost").env("no_proxy", "127.0.0.1,localhost");
    cmd.env_remove("HTTPS_PROXY").env_remove("HTTP_PROXY").env_remove("https_proxy").env_remove("http_proxy");
    cmd
}

/// `go` in GOPATH mode with Debian's Go sources (`/usr/share/gocode`: HashiCorp's terraform-json and its
/// dependencies), so a program importing `github.com/hashicorp/terraform-json` builds offline.
pub fn go(cache: &Path) -> Command {
    let gocode = Path::new("/usr/share/gocode/src/github.com/hashicorp/terraform-json");
    assert!(
        gocode.exists(),
        "HashiCorp's terraform-json Go types are not installed: run .ci/tools (Debian's golang-github-hashicorp-terraform-json-dev)"
    );
    let mut cmd = Command::new("go");
    cmd.env("GO111MODULE", "off")
        .env("GOPATH", "/usr/share/gocode")
        .env("GOPROXY", "off")
        .env("GOCACHE", cache.join("gocache"))
        .env("GOTOOLCHAIN", "local");
    cmd
}
