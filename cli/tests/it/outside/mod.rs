//! trellis against software nobody here wrote: the official Python SDKs as clients of `trellis sim serve`,
//! Terraform's plan readers (HashiCorp's terraform-json Go types, checkov, terraform-compliance,
//! terraform-plan-summary) on `show --output terraform-json`. The tools come from `.ci/tools`
//! (`common::outside`); the default nextest profile skips these tests, the `ci` profile runs them.

mod arm_sdk;
mod clouddns_sdk;
mod gce_sdk;
mod terraform_readers;
