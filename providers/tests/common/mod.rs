//! Helpers shared by the providers' integration tests.

use std::path::Path;
use trellis_providers::azure::AzureShoot;

/// The Azure shoot of the one-document manifest `text` (read as the file `path`), after `edit`: (from,
/// to) replacements, each of which must match.
pub fn azure_shoot(path: &Path, mut text: String, edit: &[(&str, &str)]) -> AzureShoot {
    for (from, to) in edit {
        assert!(text.contains(from), "{from:?} not in {}", path.display());
        text = text.replacen(from, to, 1);
    }
    let loaded = trellis_providers::manifest::parse_str(path, &text)
        .unwrap_or_else(|e| panic!("{} does not load: {e}\n{text}", path.display()));
    let shoot = loaded.shoots.into_iter().next().expect("one document").shoot;
    shoot.downcast_ref::<AzureShoot>().expect("an Azure shoot").clone()
}

/// The Azure shoot of `providers/tests/data/<file>`.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn data_shoot(file: &str) -> AzureShoot {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    azure_shoot(&path, text, &[])
}
