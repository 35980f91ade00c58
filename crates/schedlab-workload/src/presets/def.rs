//! How a shipped workload defines itself, once, in its own file — as each simulated policy ends
//! its file with its `PolicyDef`: a [`WorkloadDef`] holds its name, its help and summary, its
//! parameters and the hooks that print its own tables (seed 000's chat and SPECweb99 tables,
//! interbench's). [`super::WORKLOADS`] lists the definitions, one registry line per workload;
//! the command line's subcommands and their order, `schedlab list`, and every table that
//! depends on the workload (the run summary, the sweep table, the HTML report, `compare`,
//! `merge`) come from the definition, found by a record's workload name with [`lookup`].
//!
//! Where the table hooks live: the tables are the workload's knowledge (which columns the seed
//! document printed), so they are written in the preset's file; the report crate, which prints
//! them, depends on this crate, so it can call them, and this crate cannot call the report or
//! the statistics crate (both depend on it). A hook therefore gets what it needs of the
//! statistics through [`TableStats`], which the report implements with `schedlab-stats`, and
//! renders with [`crate::table::Table`], which lives here for that reason.

use super::params::ParamDef;
use crate::record::{ConfigResult, RunRecord};

/// The definition of a shipped workload: everything schedlab knows about it without building
/// one.
#[derive(Debug)]
pub struct WorkloadDef {
    /// Its name on the command line and in records.
    pub name: &'static str,
    /// One line on what it is (the command line's help).
    pub about: &'static str,
    /// What `schedlab list` says of it.
    pub summary: &'static str,
    /// Its parameters, in the order the command line shows them.
    pub params: &'static [ParamDef],
    /// The tables of its own that the outputs print.
    pub tables: Tables,
    /// The search `run --find-max` does on it, if it has one.
    pub search: Option<SearchDef>,
    /// Command lines that show it in use, for its `run --help` and `sweep --help` and the
    /// manual (a test runs each through the command line's parser).
    pub examples: &'static [Example],
    /// Texts it writes to files its parameters name (cyclictest's `--histfile`).
    pub files: &'static [FileOutput],
}

/// A text a workload writes to the file one of its parameters names, instead of printing it
/// with its tables (cyclictest's `--histfile`): the command line checks the path with its other
/// outputs before anything runs, and writes the file once the run has ended.
#[derive(Clone, Copy, Debug)]
pub struct FileOutput {
    /// The parameter whose value is the file's path; not given, or empty: nothing is written.
    pub param: &'static str,
    /// The parameter as the command line spells it (`--histfile`), for its errors.
    pub flag: &'static str,
    /// The file's text, from the configurations that name it; `varied` are the sweep's
    /// varied keys, as a [`SeedTable`]'s.
    pub render: fn(rows: &[&ConfigResult], varied: &[String]) -> String,
}

/// One example of a workload in use: what it shows, and the command line after `schedlab`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Example {
    /// What it shows, one line.
    pub about: &'static str,
    /// The arguments after `schedlab`, starting with the command (`run`, `sweep`).
    pub args: &'static str,
}

impl Example {
    /// An example: `about`, then `schedlab ARGS`.
    pub const fn new(about: &'static str, args: &'static str) -> Example {
        Example { about, args }
    }

    /// The command it runs (`run`, `sweep`, ...): the first word of its arguments.
    pub fn command(&self) -> &'static str {
        self.args.split(' ').next().unwrap_or("")
    }
}

impl WorkloadDef {
    /// A definition with no tables of its own and no search.
    pub const fn new(
        name: &'static str,
        about: &'static str,
        summary: &'static str,
        params: &'static [ParamDef],
    ) -> WorkloadDef {
        WorkloadDef {
            name,
            about,
            summary,
            params,
            tables: Tables::NONE,
            search: None,
            examples: &[],
            files: &[],
        }
    }

    /// This definition with `files`.
    pub const fn files(mut self, files: &'static [FileOutput]) -> WorkloadDef {
        self.files = files;
        self
    }

    /// This definition with `examples`.
    pub const fn examples(mut self, examples: &'static [Example]) -> WorkloadDef {
        self.examples = examples;
        self
    }

    /// This definition with `tables`.
    pub const fn tables(mut self, tables: Tables) -> WorkloadDef {
        self.tables = tables;
        self
    }

    /// This definition with `search`.
    pub const fn search(mut self, search: SearchDef) -> WorkloadDef {
        self.search = Some(search);
        self
    }
}

/// A workload's own tables: a seed table printed after the generic ones, or tables that take
/// their place.
#[derive(Clone, Copy, Debug)]
pub struct Tables {
    /// A table in a seed document's layout, one row per configuration, printed after the run
    /// summary and the sweep table (chat's and web's seed 000 tables).
    pub seed: Option<SeedTable>,
    /// Tables that replace the summary and the sweep table (interbench's seed 004 tables).
    pub own: Option<OwnTables>,
}

impl Tables {
    /// No tables of its own.
    pub const NONE: Tables = Tables {
        seed: None,
        own: None,
    };
}

/// A seed table after the generic tables.
#[derive(Clone, Copy, Debug)]
pub struct SeedTable {
    /// Its title in the HTML report.
    pub title: &'static str,
    /// The table of these configurations; `varied` are the sweep's varied keys, which a row
    /// names beside the seed's own columns.
    pub render: fn(rows: &[&ConfigResult], varied: &[String]) -> String,
}

/// Tables that take the place of the summary and the sweep table.
#[derive(Clone, Copy, Debug)]
pub struct OwnTables {
    /// Their title in the HTML report.
    pub title: &'static str,
    /// The tables of a record; `against` marks rows significantly better than that record's
    /// row for the same point.
    pub render:
        fn(record: &RunRecord, against: Option<&RunRecord>, stats: &dyn TableStats) -> String,
    /// How a row is judged better when records are compared side by side (the `*` legend).
    pub better_by: &'static str,
    /// The label keys of the points the workload splits a configuration into itself
    /// (interbench's `bench=` and `load=`): a sweep prints the tables side by side per
    /// combination of its varied values, which is a label without these.
    pub points: &'static [&'static str],
}

/// The statistics a workload's tables use. The statistics crate depends on this one, so a hook
/// gets them through this trait, which the report implements.
pub trait TableStats {
    /// The mean of `values` and the half-width of its confidence interval at `level` (not
    /// finite when there are too few values).
    fn mean_ci(&self, values: &[f64], level: f64) -> (f64, f64);
    /// `b`'s mean minus `a`'s when the difference is significant at `level` (Student's t);
    /// `None` when it is not, or cannot be tested.
    fn significant_diff(&self, a: &[f64], b: &[f64], level: f64) -> Option<f64>;
}

/// `run --find-max`: a search for the largest value of a parameter at which a metric stays at
/// least a threshold (web's SPECweb99 simultaneous connections).
#[derive(Clone, Copy, Debug)]
pub struct SearchDef {
    /// What it finds, in words (error messages name it).
    pub what: &'static str,
    /// The parameter searched.
    pub param: &'static str,
    /// The metric that must reach the threshold.
    pub metric: &'static str,
    /// The threshold.
    pub threshold: f64,
    /// Refuse parameters given (name, text) that do not go with the search, naming them.
    pub check: ParamsCheck,
}

/// Refuse parameters given (name, text) that do not go with something, naming them.
pub type ParamsCheck = fn(params: &[(String, String)]) -> Result<(), String>;

/// The definition of the shipped workload named `name` (a record's `workload`).
pub fn lookup(name: &str) -> Option<&'static WorkloadDef> {
    super::WORKLOADS.iter().copied().find(|d| d.name == name)
}

/// The names of the shipped workloads, in [`super::WORKLOADS`] order.
pub fn names() -> impl Iterator<Item = &'static str> {
    super::WORKLOADS.iter().map(|d| d.name)
}

#[cfg(test)]
mod tests {
    use super::super::{visit, Preset, PresetVisitor, WORKLOADS};
    use super::*;

    /// What a preset's type says of itself, to hold against its registry entry.
    struct Facts;

    /// A preset's name, its record's parameter keys at its defaults, the names of its declared
    /// parameters, its table's names, and the record keys its table gives at its defaults.
    type FactsOf = (
        &'static str,
        Vec<String>,
        Vec<&'static str>,
        Vec<&'static str>,
        Vec<&'static str>,
    );

    impl PresetVisitor for Facts {
        type Output = FactsOf;
        fn visit<P: Preset>(self) -> Self::Output {
            let w = P::with_defaults(2);
            let names = P::PARAMS.iter().map(|d| d.name).collect();
            let table = P::TABLE.iter().map(|p| p.def.name).collect();
            let recorded = (P::TABLE.iter())
                .filter_map(|p| p.entry(&w).map(|(k, _)| k))
                .collect();
            (
                w.name(),
                w.params().into_keys().collect(),
                names,
                table,
                recorded,
            )
        }
    }

    /// A new workload needs its file and its registry line, nothing else: the registry reaches
    /// its type by its name, the name is its own, every parameter it declares is declared once
    /// in its table (the command line's list is the table's), and its record keeps what the
    /// table says it keeps.
    #[test]
    fn every_registered_workload_is_reached_by_its_own_name_and_declares_its_params() {
        assert!(!WORKLOADS.is_empty());
        for (i, def) in WORKLOADS.iter().enumerate() {
            assert!(
                !WORKLOADS[..i].iter().any(|d| d.name == def.name),
                "{} registered twice",
                def.name
            );
            // The definition found by name is this one (a const's copies share no address).
            let found = lookup(def.name).unwrap();
            assert_eq!((found.about, found.summary), (def.about, def.summary));
            let (name, keys, declared, table, recorded) = visit(def.name, Facts).unwrap();
            assert_eq!(name, def.name);
            assert_eq!(
                table, declared,
                "{}: the table is not the parameters",
                def.name
            );
            assert!(!recorded.is_empty(), "{} records no parameter", def.name);
            for k in &recorded {
                assert!(
                    keys.iter().any(|r| r == k),
                    "{}: the table records {k}, the record has {keys:?}",
                    def.name
                );
            }
        }
        assert!(lookup("nosuch").is_none());
        assert!(visit("nosuch", Facts).is_none());
    }

    /// No code outside the presets' own files chooses what to do by a workload's name
    /// (`record.workload == "chat"`, `match record.workload.as_str() { "web" => ...`): that is
    /// what a definition's fields and hooks are for.
    #[test]
    fn no_source_outside_the_presets_matches_a_workload_name() {
        let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = Vec::new();
        let mut dirs: Vec<std::path::PathBuf> = std::fs::read_dir(&crates)
            .unwrap()
            .map(|e| e.unwrap().path().join("src"))
            .filter(|p| p.is_dir())
            .collect();
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    files.push(p);
                }
            }
        }
        let presets = crates.join("schedlab-workload/src/presets");
        assert!(files.len() > 50, "found only {} source files", files.len());
        let mut found = Vec::new();
        for f in files.iter().filter(|f| !f.starts_with(&presets)) {
            let text = std::fs::read_to_string(f).unwrap();
            for (n, line) in text.lines().enumerate() {
                let by_name = WORKLOADS.iter().any(|d| {
                    let quoted = format!("\"{}\"", d.name);
                    line.contains(&format!("workload == {quoted}"))
                        || line.contains(&format!("workload != {quoted}"))
                }) || (line.contains("match") && line.contains("workload.as_str()"));
                if by_name {
                    found.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
                }
            }
        }
        assert!(found.is_empty(), "name matches: {found:#?}");
    }
}
