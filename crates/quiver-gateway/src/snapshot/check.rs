//! `check`'s look at snapshots: every local manifest read, parsed and held against its dataset,
//! and every part resolved, as serving would, so that what serving would refuse (a manifest or
//! part outside the data roots, `..`, an absolute part, a missing part, a narrowed column) is
//! reported before serving, against the dataset file's `manifest:` line. Object-storage manifests
//! are left to serving (they need its credentials and network).

use super::fetch::{self, ManifestLocation};
use super::manifest::Manifest;
use crate::project::{Dataset, Diagnostics, Project};

/// Every problem of the project's local manifests and parts, added to `diagnostics`.
pub fn check_sources(project: &Project, diagnostics: &mut Diagnostics) {
    for dataset in &project.datasets {
        if let Err(problem) = check_dataset(project, dataset) {
            let (file, line) = &dataset.manifest_at;
            diagnostics.push(file, *line, problem);
        }
    }
}

fn check_dataset(project: &Project, dataset: &Dataset) -> Result<(), String> {
    let location = fetch::locate(&dataset.source, &project.root)?;
    if !matches!(location, ManifestLocation::File(_)) {
        return Ok(());
    }
    let roots = &project.settings.data_roots;
    let bytes = fetch::read_manifest(&location, roots)?;
    let manifest = Manifest::parse(&bytes)
        .map_err(|problems| format!("{location}: {}", problems.join("; ")))?;
    let problems = manifest.check_against(dataset);
    if !problems.is_empty() {
        return Err(format!("{location}: {}", problems.join("; ")));
    }
    // Local parts are resolved, parts named by URL parsed; nothing is fetched.
    fetch::check_parts(&location, &manifest, roots)
        .map_err(|problems| format!("{location}: {problems}"))
}
