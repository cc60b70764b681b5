//! `load`: a project directory (offloader's layout) read and checked into [`Project`], every
//! problem reported at once with its file and line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::diagnostics::Diagnostics;
use super::endpoint::read_endpoint;
use super::keys::load_keys_into;
use super::model::{AuthMode, Dataset, Endpoint, Project, ReadyPolicy};
use super::yaml::{parse_file, Node, Reader, Value};

/// The project file's names, in the order looked for.
pub const PROJECT_FILES: [&str; 2] = ["offloader.yml", "gateway.yml"];

/// Bounds on what a project may hold.
pub const MAX_DATASETS: usize = 1000;
pub const MAX_ENDPOINTS: usize = 1000;
pub const MAX_COLUMNS: usize = 1000;

use super::dataset::read_dataset;
use super::settings::{read_project_file, Layout};

/// Reads the project in `dir` and checks all of it.
pub fn load(dir: &Path) -> Result<Project, Diagnostics> {
    let (project, diagnostics) = read(dir);
    match project {
        Some(project) if diagnostics.is_empty() => Ok(project),
        _ => Err(diagnostics),
    }
}

/// Reads the project in `dir`: what of it loaded (`None` when the project file itself did not),
/// and every problem found; `check` goes on from here to the manifests and their parts.
pub fn read(dir: &Path) -> (Option<Project>, Diagnostics) {
    let mut diagnostics = Diagnostics::default();
    let Some(project_file) = PROJECT_FILES
        .iter()
        .map(|name| dir.join(name))
        .find(|path| path.is_file())
    else {
        diagnostics.push(
            dir,
            0,
            format!("no project file: expected {}", PROJECT_FILES.join(" or ")),
        );
        return (None, diagnostics);
    };
    let Some(root) = parse_file(&project_file, &mut diagnostics) else {
        return (None, diagnostics);
    };
    let mut reader = Reader {
        file: project_file.clone(),
        diagnostics: &mut diagnostics,
    };
    let layout = read_project_file(&mut reader, &root, dir);

    let datasets = read_datasets(&layout, &project_file, &mut diagnostics);
    let (mut endpoints, failed_endpoints) =
        read_endpoints(&layout, &project_file, &datasets, &mut diagnostics);
    check_ready(&layout, &project_file, &datasets.lines, &mut diagnostics);
    let keys = match &layout.keys_file {
        Some(path) => load_keys_into(
            path,
            Some((&endpoints, &failed_endpoints)),
            &mut diagnostics,
        ),
        None => {
            if layout.settings.auth == AuthMode::Required {
                diagnostics.push(
                    &project_file,
                    layout.auth_line.unwrap_or(root.line),
                    "`auth: required` needs a `keys` file (or set `auth: none` for a public API)",
                );
            }
            Vec::new()
        }
    };

    for item in endpoints
        .iter_mut()
        .flat_map(|endpoint| endpoint.select.iter_mut())
    {
        item.double_sums = layout.settings.double_sums;
    }
    let project = Project {
        root: dir.to_path_buf(),
        settings: layout.settings,
        datasets: datasets.sound,
        endpoints,
        keys_file: layout.keys_file,
        keys,
    };
    (Some(project), diagnostics)
}

/// The datasets' files, read and checked.
struct ReadDatasets {
    /// Datasets without problems: the project's.
    sound: Vec<Dataset>,
    /// Datasets whose files have problems, as far as they were read: endpoints over them are
    /// still checked (one pass finds every problem), but they are no part of the project.
    drafts: Vec<Dataset>,
    /// Where each dataset id was first defined.
    lines: BTreeMap<String, (PathBuf, usize)>,
}

/// Reads every dataset file of `layout`'s datasets directory.
fn read_datasets(
    layout: &Layout,
    project_file: &Path,
    diagnostics: &mut Diagnostics,
) -> ReadDatasets {
    let mut read = ReadDatasets {
        sound: Vec::new(),
        drafts: Vec::new(),
        lines: BTreeMap::new(),
    };
    for file in yaml_files(
        &layout.datasets_dir,
        "datasets_dir",
        diagnostics,
        project_file,
    ) {
        let Some(node) = parse_file(&file, diagnostics) else {
            continue;
        };
        let mut reader = Reader {
            file: file.clone(),
            diagnostics: &mut *diagnostics,
        };
        let problems_before = reader.diagnostics.len();
        let Some(dataset) = read_dataset(&mut reader, &node) else {
            continue;
        };
        let sound = reader.diagnostics.len() == problems_before;
        match define(
            &mut read.lines,
            &mut reader,
            "dataset",
            &dataset.id,
            node.line,
            MAX_DATASETS,
        ) {
            Defined::First if sound => read.sound.push(dataset),
            Defined::First => read.drafts.push(dataset),
            Defined::Again => continue,
            Defined::OverLimit => break,
        }
    }
    read
}

/// Reads every endpoint file of `layout`'s endpoints directory, each checked against the
/// datasets read (drafts included): the endpoints, and the names of those that failed their
/// checks (keys granting them are not also reported).
fn read_endpoints(
    layout: &Layout,
    project_file: &Path,
    datasets: &ReadDatasets,
    diagnostics: &mut Diagnostics,
) -> (Vec<Endpoint>, BTreeSet<String>) {
    let checkable: Vec<Dataset> = datasets
        .sound
        .iter()
        .chain(&datasets.drafts)
        .cloned()
        .collect();
    let mut endpoints = Vec::new();
    let mut failed = BTreeSet::new();
    let mut lines: BTreeMap<String, (PathBuf, usize)> = BTreeMap::new();
    for file in yaml_files(
        &layout.endpoints_dir,
        "endpoints_dir",
        diagnostics,
        project_file,
    ) {
        let Some(node) = parse_file(&file, diagnostics) else {
            continue;
        };
        let mut reader = Reader {
            file: file.clone(),
            diagnostics: &mut *diagnostics,
        };
        let Some(endpoint) = read_endpoint(&mut reader, &node, &checkable, layout.settings.auth)
        else {
            if let Some(name) = endpoint_name(&node) {
                failed.insert(name.to_string());
            }
            continue;
        };
        match define(
            &mut lines,
            &mut reader,
            "endpoint",
            &endpoint.name,
            node.line,
            MAX_ENDPOINTS,
        ) {
            Defined::First => endpoints.push(endpoint),
            Defined::Again => continue,
            Defined::OverLimit => break,
        }
    }
    (endpoints, failed)
}

/// An endpoint file's `name`, read even when the rest of it failed.
fn endpoint_name(node: &Node) -> Option<&str> {
    let Value::Map(entries) = &node.value else {
        return None;
    };
    match entries
        .iter()
        .find(|e| e.key == "name")
        .map(|e| &e.value.value)
    {
        Some(Value::Str(name)) => Some(name),
        _ => None,
    }
}

/// `ready: [ids]` names only datasets that are defined.
fn check_ready(
    layout: &Layout,
    project_file: &Path,
    dataset_lines: &BTreeMap<String, (PathBuf, usize)>,
    diagnostics: &mut Diagnostics,
) {
    let (ReadyPolicy::Required(required), Some(line)) = (&layout.settings.ready, layout.ready_line)
    else {
        return;
    };
    let mut reader = Reader {
        file: project_file.to_path_buf(),
        diagnostics,
    };
    for id in required {
        if !dataset_lines.contains_key(id) {
            reader.error(
                line,
                format!("`ready` names dataset `{id}`, which is not defined"),
            );
        }
    }
}

/// The `*.yml` / `*.yaml` files of a directory, sorted by name (so problems come in a stable order).
fn yaml_files(
    dir: &Path,
    field: &str,
    diagnostics: &mut Diagnostics,
    project_file: &Path,
) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) => {
            diagnostics.push(
                project_file,
                0,
                format!("{field} `{}` cannot be read: {error}", dir.display()),
            );
            return Vec::new();
        }
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.is_file()
                && matches!(
                    path.extension().and_then(|ext| ext.to_str()),
                    Some("yml" | "yaml")
                )
        })
        .collect();
    files.sort();
    files
}

/// What [`define`] found of a name.
enum Defined {
    First,
    /// Defined before: reported, this one skipped.
    Again,
    /// Past the limit of its kind: reported, the rest of its kind skipped.
    OverLimit,
}

/// Records where a `kind` (dataset, endpoint) named `name` is defined, at most `max` of them; a
/// second definition of a name is reported with the first one's place.
fn define(
    seen: &mut BTreeMap<String, (PathBuf, usize)>,
    reader: &mut Reader<'_>,
    kind: &str,
    name: &str,
    line: usize,
    max: usize,
) -> Defined {
    if let Some((first_file, first_line)) = seen.get(name) {
        reader.error(
            line,
            format!(
                "{kind} `{name}` is already defined at {}:{first_line}",
                first_file.display()
            ),
        );
        return Defined::Again;
    }
    if seen.len() == max {
        reader.error(0, format!("more than {max} {kind}s"));
        return Defined::OverLimit;
    }
    seen.insert(name.to_owned(), (reader.file.clone(), line));
    Defined::First
}
