//! The one driver of the data scenarios: every `tests/scenarios/<provider>/<ID>-<slug>/expect.yaml`
//! is a test named `<provider>/<ID>-<slug>` (so `cargo test -p trellis-tests --test scenarios A4`
//! runs acceptance A4). The format is documented in `trellis_tests::expect`.

use libtest_mimic::{Arguments, Trial};
use trellis_tests::expect::ScenarioCase;

fn main() {
    let args = Arguments::from_args();
    let trials = ScenarioCase::all()
        .into_iter()
        .map(|case| Trial::test(case.name.clone(), move || case.run().map_err(Into::into)))
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
