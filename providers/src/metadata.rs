//! Gardener's rules for a Shoot's `metadata.name` and `metadata.namespace`.
//!
//! trellis derives the technical id `shoot--<project>--<name>` from them (the project is the
//! namespace without `garden-`), and uses it as the state key, the cluster resource group and the
//! prefix of every resource name; it is printed in plans and PR comments. So the names are checked
//! as Gardener checks them before anything uses them:
//!
//! - [`validate`] (every command, when manifests are loaded): `metadata.name` and
//!   `metadata.namespace` are DNS-1123 labels (apimachinery's `ValidateObjectMeta` with
//!   `NameIsDNSLabel`, as `ValidateShoot` calls it); the name has no `--`
//!   (`validateNameConsecutiveHyphens`); the namespace is a project's, `garden` or
//!   `garden-<project>`, and the project name is a DNS-1123 label of at most 10 characters without
//!   `--` (`ValidateProject`, `ValidateProjectSpec`, the shoot validator's admission check). With
//!   these, `shoot--<project>--<name>` is a DNS label sequence that no two shoots share.
//! - [`validate_create`] (when a shoot is planned for the first time): project name + shoot name
//!   are at most 21 characters (the shoot validator admission plugin's `validateProjectMembership`,
//!   a CREATE-only rule: "we do not want to reject changes to existing Shoots").
//!
//! Field paths are `metadata.name` / `metadata.namespace` (upstream's admission plugin reports the
//! length rule at `name`). Messages are upstream's; where trellis infers the project from the
//! namespace, the message names the project.

use std::sync::LazyLock;

use regex::Regex;

use crate::field::{ErrorList, FieldError};
use crate::manifest::ObjectMeta;

/// apimachinery's `DNS1123LabelMaxLength`.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// The namespace of the `garden` project.
pub const GARDEN_NAMESPACE: &str = "garden";
/// Gardener's `ProjectNamespacePrefix`: the namespace of project `p` is `garden-p`.
pub const PROJECT_NAMESPACE_PREFIX: &str = "garden-";
/// `ValidateProject`: a project name has at most 10 characters.
pub const PROJECT_NAME_MAX_LENGTH: usize = 10;
/// The shoot validator's `lengthLimit`: project name + shoot name, on create.
pub const PROJECT_AND_SHOOT_NAME_MAX_LENGTH: usize = 21;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";

static DNS1123_LABEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!("^{DNS1123_LABEL_FMT}$")).expect("upstream regex compiles"));
static DNS1123_SUBDOMAIN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!("^{DNS1123_LABEL_FMT}(\\.{DNS1123_LABEL_FMT})*$")).expect("upstream regex compiles")
});

/// apimachinery's `IsDNS1123Label`: why `value` is not a DNS-1123 label (empty: it is one).
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(format!("must be no more than {DNS1123_LABEL_MAX_LENGTH} characters"));
    }
    if !DNS1123_LABEL.is_match(value) {
        if DNS1123_SUBDOMAIN.is_match(value) {
            // A valid subdomain, not a valid label: the length was checked, so it must be dots.
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(format!(
                "{DNS1123_LABEL_ERR_MSG} (e.g. 'my-name',  or '123-abc', regex used for validation is '{DNS1123_LABEL_FMT}')"
            ));
        }
    }
    errs
}

/// The project of a shoot namespace: `garden-p` → `p`, `garden` → `garden`.
pub fn project_of(namespace: &str) -> &str {
    namespace.strip_prefix(PROJECT_NAMESPACE_PREFIX).unwrap_or(namespace)
}

/// The rules every loaded Shoot must pass before its technical id is used; all errors at once.
pub fn validate(meta: &ObjectMeta) -> ErrorList {
    let (name, namespace) = (meta.name.as_str(), meta.namespace.as_str());
    let mut errs = Vec::new();

    // ValidateObjectMeta(&shoot.ObjectMeta, true, NameIsDNSLabel, "metadata").
    if name.is_empty() {
        let detail = match meta.generate_name {
            None => "name or generateName is required",
            // Upstream would generate a name; trellis must know it before the shoot exists.
            Some(_) => "trellis needs the name: the technical id shoot--<project>--<name> names the state and the cloud resources before the shoot exists (generateName is not supported)",
        };
        errs.push(FieldError::required("metadata.name", detail));
    } else {
        errs.extend(is_dns1123_label(name).into_iter().map(|m| FieldError::invalid("metadata.name", name, m)));
    }
    let mut namespace_ok = false;
    if namespace.is_empty() {
        errs.push(FieldError::required("metadata.namespace", ""));
    } else {
        let msgs = is_dns1123_label(namespace);
        namespace_ok = msgs.is_empty();
        errs.extend(msgs.into_iter().map(|m| FieldError::invalid("metadata.namespace", namespace, m)));
    }

    // validateNameConsecutiveHyphens(shoot.Name, "metadata.name").
    if name.contains("--") {
        errs.push(FieldError::invalid("metadata.name", name, "name may not contain two consecutive hyphens"));
    }

    // The namespace must be a project's; the project name follows Gardener's rules for it.
    if namespace_ok {
        if namespace != GARDEN_NAMESPACE && !namespace.starts_with(PROJECT_NAMESPACE_PREFIX) {
            errs.push(FieldError::invalid(
                "metadata.namespace",
                namespace,
                format!("must start with {PROJECT_NAMESPACE_PREFIX} (a shoot lives in its project's namespace, garden-<project>, or in {GARDEN_NAMESPACE})"),
            ));
        } else {
            let project = project_of(namespace);
            for m in is_dns1123_label(project) {
                errs.push(FieldError::invalid(
                    "metadata.namespace",
                    namespace,
                    format!("project name {project:?}: {m}"),
                ));
            }
            if project.len() > PROJECT_NAME_MAX_LENGTH {
                errs.push(FieldError::invalid(
                    "metadata.namespace",
                    namespace,
                    format!("project name {project:?}: must be no more than {PROJECT_NAME_MAX_LENGTH} characters"),
                ));
            }
            if project.contains("--") {
                errs.push(FieldError::invalid(
                    "metadata.namespace",
                    namespace,
                    format!("the project name must not contain two consecutive hyphens (project: {project})"),
                ));
            }
        }
    }
    errs
}

/// The rules for a shoot that does not exist yet (no configuration applied): project name + shoot
/// name are at most 21 characters. Expects names that passed [`validate`].
pub fn validate_create(meta: &ObjectMeta) -> ErrorList {
    let (name, project) = (meta.name.as_str(), project_of(&meta.namespace));
    if project.len() + name.len() <= PROJECT_AND_SHOOT_NAME_MAX_LENGTH {
        return Vec::new();
    }
    vec![FieldError::invalid(
        "metadata.name",
        name,
        format!(
            "the length of the shoot name and the project name must not exceed {PROJECT_AND_SHOOT_NAME_MAX_LENGTH} characters (project: {project}; shoot: {name})"
        ),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns1123_labels_as_apimachinery() {
        assert!(is_dns1123_label("a").is_empty());
        assert!(is_dns1123_label("123-abc").is_empty());
        assert!(is_dns1123_label(&"a".repeat(63)).is_empty());
        assert_eq!(is_dns1123_label(&"a".repeat(64)), vec!["must be no more than 63 characters"]);
        assert_eq!(is_dns1123_label("a.b"), vec!["must not contain dots"]);
        let regex_msg = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
        for bad in ["", "A", "-a", "a-", "a_b", "a/b", "ä"] {
            assert_eq!(is_dns1123_label(bad), vec![regex_msg], "{bad:?}");
        }
    }

    #[test]
    fn project_of_namespace() {
        assert_eq!(project_of("garden-dev"), "dev");
        assert_eq!(project_of("garden"), "garden");
    }
}
