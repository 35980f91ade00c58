//! A mock backend and workload for testing the measuring loop exactly and fast, as hyperfine
//! tests its benchmark loop with a `MockExecutor`: each configuration's machine is a name, and
//! every repetition returns the next scripted value as its wall time (the mock workload's one
//! metric, `value`), or a scripted interruption or failure.

use crate::backend::{Backend, RepDetail, RepError, RepInput, RepOutput};
use crate::build::{Config, Experiment};
use crate::error::ExperimentError;
use crate::vary::MachineKey;
use schedlab_workload::knobs::Knobs;
use schedlab_workload::presets::{HostNeeds, Outcome};
use schedlab_workload::record::{BackendInfo, Better, MetricDef};
use schedlab_workload::{Context, Plan, TaskMode, TaskRef, Transport, Workload, WorkloadError};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

/// A workload whose metric is whatever the mock backend says.
#[derive(Clone, Debug, Default)]
pub struct MockWorkload {
    /// What it says one repetition may take (`Workload::expected_time`).
    pub expected: Option<Duration>,
}

impl Workload for MockWorkload {
    fn name(&self) -> &'static str {
        "mock"
    }
    fn params(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn plan(&self) -> Plan {
        Plan {
            groups: vec![schedlab_workload::plan::GroupPlan {
                name: "task",
                tasks: 1,
                spawn: 0,
            }],
            channels: 0,
            duplex: false,
            locks: 0,
            sync: schedlab_workload::SyncPlan::default(),
            mode: TaskMode::Threads,
            transport: Transport::Pipe,
        }
    }
    async fn body<C: Context>(&self, _task: TaskRef, _ctx: &C) -> Result<(), WorkloadError> {
        Ok(())
    }
    fn metric_defs(&self) -> Vec<MetricDef> {
        vec![MetricDef {
            name: "value".into(),
            unit: "s".into(),
            better: Better::Lower,
            description: "the scripted value".into(),
        }]
    }
    fn metrics(&self, outcome: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        Ok(BTreeMap::from([(
            "value".into(),
            outcome.wall.as_secs_f64(),
        )]))
    }
    fn expected_time(&self) -> Option<Duration> {
        self.expected
    }
}

/// What the mock does at one repetition.
#[derive(Clone, Debug)]
pub enum Step {
    /// Return this value.
    Value(f64),
    /// Return this value plus the repetition's index (as a simulator's result depends on its
    /// seed, SEED + index, and on nothing else).
    Indexed(f64),
    /// Report an interruption.
    Interrupt,
    /// Fail with this message.
    Fail(&'static str),
}

/// The mock backend: per machine name, the steps of its successive repetitions (the last value
/// repeats when the script runs out), and a log of every call.
#[derive(Default)]
pub struct MockBackend {
    /// Scripts by machine name.
    pub scripts: BTreeMap<&'static str, VecDeque<Step>>,
    /// Every call: (machine, repetition index).
    pub calls: Vec<(&'static str, u64)>,
}

impl MockBackend {
    /// Script the repetitions of `machine`.
    pub fn script(mut self, machine: &'static str, steps: &[Step]) -> MockBackend {
        self.scripts
            .insert(machine, steps.iter().cloned().collect());
        self
    }
}

impl Backend for MockBackend {
    type Machine = &'static str;
    fn info(&self, _first: &&'static str) -> BackendInfo {
        BackendInfo {
            kind: "mock".into(),
            ..BackendInfo::default()
        }
    }
    fn machine_label(&self, m: &&'static str) -> Option<String> {
        Some(m.to_string())
    }
    fn policy_label(&self, m: &&'static str) -> Option<String> {
        Some(m.to_string())
    }
    fn cpus(&self, _: &&'static str) -> usize {
        2
    }
    fn varies_machines(&self) -> bool {
        true
    }
    fn vary_machine(
        &self,
        _: &&'static str,
        _: MachineKey,
        value: &str,
    ) -> Result<&'static str, ExperimentError> {
        self.scripts
            .keys()
            .find(|k| **k == value)
            .copied()
            .ok_or_else(|| ExperimentError::Machine(format!("no machine '{value}'")))
    }
    fn realtime_allowed(&self, _: &Self::Machine) -> bool {
        false
    }
    fn check_needs(&self, _: &'static str, _: &HostNeeds) -> Result<(), ExperimentError> {
        Ok(())
    }
    fn check_knobs(&self, _: &&'static str, _: &str, _: &Knobs) -> Result<(), ExperimentError> {
        Ok(())
    }
    fn prepare<W: Workload>(
        &mut self,
        _: &[Config<W, &'static str>],
        _: &mut BackendInfo,
    ) -> Result<(), ExperimentError> {
        Ok(())
    }
    fn run<W: Workload>(
        &mut self,
        machine: &&'static str,
        _workload: &Arc<W>,
        input: RepInput,
    ) -> Result<RepOutput, RepError> {
        self.calls.push((machine, input.index));
        let script = self.scripts.get_mut(machine).expect("scripted machine");
        let step = if script.len() > 1 {
            script.pop_front()
        } else {
            script.front().cloned()
        };
        let step = match step.expect("a non-empty script") {
            Step::Indexed(v) => Step::Value(v + input.index as f64),
            other => other,
        };
        match step {
            Step::Indexed(v) | Step::Value(v) => Ok(RepOutput {
                outcome: Outcome {
                    wall: Duration::from_secs_f64(v),
                    tasks: Vec::new(),
                },
                counters: BTreeMap::new(),
                sources: Default::default(),
                detail: RepDetail::None,
                locks: Vec::new(),
                timeline: None,
            }),
            Step::Interrupt => Err(RepError::Interrupted),
            Step::Fail(m) => Err(RepError::Failed(m.into())),
        }
    }
}

/// An experiment of one mock configuration per machine, labelled with the machine's name.
pub fn experiment(machines: &[&'static str]) -> Experiment<MockWorkload, &'static str> {
    Experiment {
        configs: machines
            .iter()
            .map(|m| Config {
                workload: MockWorkload::default(),
                knobs: vec![Knobs::default()],
                label: m.to_string(),
                machine: *m,
            })
            .collect(),
        variations: Vec::new(),
        combinations: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{measure, Progress, RunEnd, Sinks};
    use crate::outdir::OutDir;
    use crate::settings::{Budget, Settings};
    use std::sync::atomic::AtomicBool;

    fn settings(budget: Budget, warmup: usize) -> Settings {
        Settings {
            budget,
            until_text: None,
            warmup,
            level: 95.0,
            timeout: None,
            json: None,
            command: vec!["test".into()],
            shard: None,
            timeline: false,
            timeline_events: None,
            rt_app_logs: None,
            jobs: 1,
        }
    }

    fn run(
        backend: &mut MockBackend,
        machines: &[&'static str],
        settings: &Settings,
        out: Option<&OutDir>,
    ) -> Result<(RunEnd, schedlab_workload::record::RunRecord), ExperimentError> {
        let stop = Arc::new(AtomicBool::new(false));
        let sinks = Sinks {
            json: None,
            out,
            exports: None,
        };
        measure(
            experiment(machines),
            backend,
            settings,
            &sinks,
            &stop,
            &mut |_| {},
        )
    }

    fn values(r: &schedlab_workload::record::ConfigResult) -> Vec<f64> {
        r.repetitions.iter().map(|x| x.metrics["value"]).collect()
    }

    #[test]
    fn a_fixed_count_interleaves_configurations_and_numbers_repetitions() {
        let mut b = MockBackend::default()
            .script("a", &[Step::Value(1.0), Step::Value(2.0), Step::Value(3.0)])
            .script("b", &[Step::Value(10.0)]);
        let (end, rec) = run(&mut b, &["a", "b"], &settings(Budget::Fixed(3), 0), None).unwrap();
        assert_eq!(end, RunEnd::Complete);
        assert_eq!(
            b.calls,
            [("a", 0), ("b", 0), ("a", 1), ("b", 1), ("a", 2), ("b", 2)]
        );
        assert_eq!(values(&rec.configs[0]), [1.0, 2.0, 3.0]);
        assert_eq!(values(&rec.configs[1]), [10.0, 10.0, 10.0]);
        assert_eq!(rec.configs[0].summary["value"].mean, 2.0);
        assert_eq!(rec.configs[0].converged, None);
    }

    #[test]
    fn warm_ups_run_first_interleaved_and_are_not_recorded() {
        let mut b = MockBackend::default()
            .script("a", &[Step::Value(100.0), Step::Value(1.0)])
            .script("b", &[Step::Value(2.0)]);
        let (_, rec) = run(&mut b, &["a", "b"], &settings(Budget::Fixed(1), 1), None).unwrap();
        let w = RepInput::WARMUP_BASE;
        assert_eq!(b.calls, [("a", w), ("b", w), ("a", 0), ("b", 0)]);
        assert_eq!(values(&rec.configs[0]), [1.0]);
        assert_eq!(rec.warmup, 1);
    }

    /// `--until 95:2%` (at most 6 runs) over `tight`, whose value never varies, and `noisy`,
    /// which never converges.
    fn tight_and_noisy() -> (schedlab_stats::StoppingRule, MockBackend) {
        let rule = schedlab_stats::StoppingRule::parse("95:2%", 6).unwrap();
        let noisy: Vec<Step> = [1.0, 5.0, 2.0, 9.0, 1.0, 7.0, 3.0]
            .into_iter()
            .map(Step::Value)
            .collect();
        let b = MockBackend::default()
            .script("tight", &[Step::Value(1.0)])
            .script("noisy", &noisy);
        (rule, b)
    }

    #[test]
    fn until_stops_a_tight_configuration_early_and_a_noisy_one_at_the_maximum() {
        let (rule, mut b) = tight_and_noisy();
        let (_, rec) = run(
            &mut b,
            &["tight", "noisy"],
            &settings(Budget::Until(rule), 0),
            None,
        )
        .unwrap();
        assert_eq!(
            rec.configs[0].repetitions.len(),
            3,
            "the minimum, then converged"
        );
        assert_eq!(rec.configs[0].converged, Some(true));
        assert_eq!(rec.configs[1].repetitions.len(), 6, "the maximum");
        assert_eq!(rec.configs[1].converged, Some(false));
        // Once `tight` is done, only `noisy` runs.
        assert_eq!(b.calls.iter().filter(|c| c.0 == "tight").count(), 3);
        assert_eq!(&b.calls[6..], [("noisy", 3), ("noisy", 4), ("noisy", 5)]);
    }

    #[test]
    fn an_interruption_keeps_the_finished_repetitions() {
        let mut b = MockBackend::default()
            .script("a", &[Step::Value(1.0), Step::Value(2.0), Step::Interrupt])
            .script("b", &[Step::Value(5.0)]);
        let (end, rec) = run(&mut b, &["a", "b"], &settings(Budget::Fixed(5), 0), None).unwrap();
        assert_eq!(end, RunEnd::Interrupted);
        assert!(rec.interrupted);
        assert_eq!(values(&rec.configs[0]), [1.0, 2.0]);
        assert_eq!(values(&rec.configs[1]), [5.0, 5.0]);
    }

    /// The `Started` reports of measuring `machines`: (label, configuration, of, warm-up,
    /// number, of, at most, finished, planned).
    #[allow(clippy::type_complexity)]
    fn started(
        backend: &mut MockBackend,
        machines: &[&'static str],
        settings: &Settings,
    ) -> Vec<(String, usize, usize, bool, usize, usize, bool, usize, usize)> {
        let stop = Arc::new(AtomicBool::new(false));
        let sinks = Sinks {
            json: None,
            out: None,
            exports: None,
        };
        let mut seen = Vec::new();
        measure(
            experiment(machines),
            backend,
            settings,
            &sinks,
            &stop,
            &mut |p| {
                if let Progress::Started {
                    label,
                    config,
                    configs,
                    repetition: r,
                    finished,
                    planned,
                    ..
                } = p
                {
                    seen.push((
                        label, config, configs, r.warmup, r.number, r.of, r.at_most, finished,
                        planned,
                    ));
                }
            },
        )
        .unwrap();
        seen
    }

    #[test]
    fn every_repetition_is_announced_with_what_is_left() {
        let mut b = MockBackend::default()
            .script("a", &[Step::Value(1.0)])
            .script("b", &[Step::Value(2.0)]);
        let seen = started(&mut b, &["a", "b"], &settings(Budget::Fixed(2), 1));
        let s = |l: &str, c, w, n, of, f| (l.to_string(), c, 2, w, n, of, false, f, 6);
        assert_eq!(
            seen,
            [
                s("a", 0, true, 1, 1, 0),
                s("b", 1, true, 1, 1, 1),
                s("a", 0, false, 1, 2, 2),
                s("b", 1, false, 1, 2, 3),
                s("a", 0, false, 2, 2, 4),
                s("b", 1, false, 2, 2, 5),
            ]
        );
        // Under --until, the plan is the maximum, and shrinks when a configuration converges
        // (`tight` after its third run, the fifth in all).
        let (rule, mut b) = tight_and_noisy();
        let seen = started(
            &mut b,
            &["tight", "noisy"],
            &settings(Budget::Until(rule), 0),
        );
        let plans: Vec<(usize, usize)> = seen.iter().map(|s| (s.7, s.8)).collect();
        assert_eq!(
            plans,
            [
                (0, 12),
                (1, 12),
                (2, 12),
                (3, 12),
                (4, 12),
                (5, 9),
                (6, 9),
                (7, 9),
                (8, 9)
            ]
        );
        assert!(seen.iter().all(|s| s.5 == 6 && s.6), "{seen:?}");
        assert_eq!((seen[8].0.as_str(), seen[8].4), ("noisy", 6));
    }

    #[test]
    fn a_failure_names_the_configuration() {
        let mut b = MockBackend::default()
            .script("a", &[Step::Value(1.0)])
            .script("b", &[Step::Value(1.0), Step::Fail("boom")]);
        let e = run(&mut b, &["a", "b"], &settings(Budget::Fixed(3), 0), None).unwrap_err();
        assert_eq!(e.to_string(), "b: boom");
    }

    #[test]
    fn a_sweep_resumes_from_its_directory() {
        let dir = std::env::temp_dir().join(format!("schedlab-mock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let out = OutDir::new(&dir).unwrap();
        let mut first = MockBackend::default()
            .script("a", &[Step::Value(1.0), Step::Value(2.0), Step::Interrupt])
            .script("b", &[Step::Value(3.0)]);
        let (end, _) = run(
            &mut first,
            &["a", "b"],
            &settings(Budget::Fixed(4), 0),
            Some(&out),
        )
        .unwrap();
        assert_eq!(end, RunEnd::Interrupted);
        let mut again = MockBackend::default()
            .script("a", &[Step::Value(7.0)])
            .script("b", &[Step::Value(8.0)]);
        let (end, rec) = run(
            &mut again,
            &["a", "b"],
            &settings(Budget::Fixed(4), 0),
            Some(&out),
        )
        .unwrap();
        assert_eq!(end, RunEnd::Complete);
        assert_eq!(values(&rec.configs[0]), [1.0, 2.0, 7.0, 7.0]);
        assert_eq!(values(&rec.configs[1]), [3.0, 3.0, 8.0, 8.0]);
        // Repetition indices continue where the first sweep stopped (seeds differ).
        assert_eq!(again.calls, [("a", 2), ("b", 2), ("a", 3), ("b", 3)]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
