//! `build` — a kernel build as seed 002's load-balancing study ran it (`make -j12 bzImage` on a
//! 4-way machine): a job server with `jobs` slots (group `make`) runs a dependency graph of
//! compile jobs (group `cc`) and link steps (group `ld`), each a new process.
//!
//! The graph, in makefile order, is kbuild's of 2.5 (Documentation/kbuild/makefiles.txt): the
//! tree has `dirs` directories; each directory's compile units are compiled, then linked into
//! the directory's `built-in.o` (`ld -r`, which needs every object of its directory); the final
//! link (`vmlinux` and the bzImage around it) needs every `built-in.o`. The server starts, each
//! time a slot is free, the first job in makefile order whose inputs are built, and waits for
//! whichever job ends first (make's `reap_children`), paying `MAKE_CPU_PER_JOB` of its own CPU
//! per job started.
//!
//! A compile job is gcc without `-pipe`: the preprocessor writes the `.i` file, `cc1` reads it
//! back and compiles, `as` writes the object. What is assumed, not measured: a 2.5-era
//! `bzImage` of a default configuration compiles about 600 units in a few dozen directories
//! (the defaults are a fifth of that, so that a real run takes seconds); each unit's CPU is
//! `cpu` times a log-normal factor of σ = 0.8 (mean 1; a few units — the big drivers — take
//! several times the median); 20 % of it preprocessing; a `.i` file of 256 KiB and an object of
//! 16 KiB per unit of factor; a directory's link costs 5 ms plus 1 % of its units' CPU; the
//! final link `link`. The factors come from `tree` (a seed), so every backend and repetition
//! builds the same tree.
//!
//! Metrics: the makespan (the server's start to the final link's end), the CPU the jobs used
//! (what `wait` reported for each) over the makespan (`busy_cpus`: how many CPUs the build kept
//! busy on average), jobs per second, and the job count, checked: every job of the graph was
//! started once and reaped once, successfully.
//!
//! With `real-make` (real kernel only) the same graph is a real C tree built by the real
//! `make -jN` and the system compiler ([`super::build_tree`]): the `make` group's one task runs
//! make as its child, which inherits the group's knobs (affinity, nice and policy pass through
//! fork and exec to every compiler make starts). The makespan is make's start to its end; the
//! CPU is make's own and everything it waited for (wait4's rusage); the jobs are the compile and
//! link lines make printed, checked against the graph's.

use super::build_tree;
use super::def::{Example, WorkloadDef};
use super::params::{
    param_defs, parse_count, parse_param, parse_with, HostNeeds, Param, ParamDef, ParamKind, Preset,
};
use super::{metric, Outcome, Workload};
use crate::context::{Context, IoKind, Program, WorkloadError};
use crate::duration::{format_duration, parse_duration};
use crate::error::ParamError;
use crate::plan::{GroupPlan, Plan, SyncPlan, TaskMode, TaskRef, Transport};
use crate::record::{Better, MetricDef};
use std::collections::BTreeMap;
use std::time::Duration;

const NAME: &str = "build";

/// The job server's own CPU per job it starts (reading the makefile's rules, stat-ing inputs).
pub const MAKE_CPU_PER_JOB: Duration = Duration::from_micros(500);

/// Group indices of the plan.
const MAKE: usize = 0;
const CC: usize = 1;
const LD: usize = 2;

/// The most compile units a build may have.
pub const MAX_UNITS: usize = 20_000;

/// A kernel build run by a job server.
#[derive(Clone, Debug, PartialEq)]
pub struct Build {
    /// Job slots (`make -jN`).
    pub jobs: usize,
    /// Compile units.
    pub units: usize,
    /// Directories the units are spread over (each linked into its `built-in.o`).
    pub dirs: usize,
    /// Mean CPU of one compile unit.
    pub cpu: Duration,
    /// CPU of the final link.
    pub link: Duration,
    /// Seed of the units' sizes (the `tree` parameter).
    pub seed: u64,
    /// How the real backend hosts the server (its jobs are always new processes or threads).
    pub mode: TaskMode,
    /// Build a real C tree with the real `make` and compiler instead (real kernel only).
    pub real_make: bool,
}

impl Default for Build {
    fn default() -> Self {
        Build {
            jobs: 4,
            units: 120,
            dirs: 12,
            cpu: Duration::from_millis(40),
            link: Duration::from_millis(200),
            seed: 1,
            mode: TaskMode::Processes,
            real_make: false,
        }
    }
}

/// One job of the graph.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Job {
    /// `cc` or `ld`'s group index.
    pub group: usize,
    /// Its directory (the final link: `dirs`).
    pub dir: usize,
    /// Its CPU.
    pub cpu: Duration,
    /// Bytes of the file it writes and reads back (a compile's `.i`; 0 for a link).
    pub temp_bytes: usize,
    /// Bytes of its output.
    pub out_bytes: usize,
}

impl Build {
    /// The size factor of compile unit `u`: log-normal, σ = 0.8, mean 1, from `seed`.
    pub(crate) fn factor(&self, u: usize) -> f64 {
        const SIGMA: f64 = 0.8;
        // Two uniforms from splitmix64 of (seed, u), Box–Muller to a normal.
        let mut x = self.seed ^ (u as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        };
        let (a, b) = (next().max(1e-12), next());
        let normal = (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos();
        (SIGMA * normal - SIGMA * SIGMA / 2.0).exp()
    }

    /// The directory of compile unit `u`: units are spread evenly, in order.
    pub(crate) fn dir_of(&self, u: usize) -> usize {
        u * self.dirs / self.units
    }

    /// Every job in makefile order: per directory its compile units then its link; the final
    /// link last. Job `i` is spawned with argument `i`.
    pub fn graph(&self) -> Vec<Job> {
        let mut jobs = Vec::with_capacity(self.units + self.dirs + 1);
        let mut u = 0;
        for d in 0..self.dirs {
            let mut dir_cpu = Duration::ZERO;
            let mut dir_bytes = 0;
            while u < self.units && self.dir_of(u) == d {
                let f = self.factor(u);
                let cpu = self.cpu.mul_f64(f);
                let out = (16_384.0 * f) as usize + 1;
                dir_cpu += cpu;
                dir_bytes += out;
                jobs.push(Job {
                    group: CC,
                    dir: d,
                    cpu,
                    temp_bytes: (262_144.0 * f) as usize + 1,
                    out_bytes: out,
                });
                u += 1;
            }
            jobs.push(Job {
                group: LD,
                dir: d,
                cpu: Duration::from_millis(5) + dir_cpu / 100,
                temp_bytes: 0,
                out_bytes: dir_bytes,
            });
        }
        let total: usize = jobs
            .iter()
            .filter(|j| j.group == LD)
            .map(|j| j.out_bytes)
            .sum();
        jobs.push(Job {
            group: LD,
            dir: self.dirs,
            cpu: self.link,
            temp_bytes: 0,
            out_bytes: total,
        });
        jobs
    }

    /// Check parameters; the error names the value and what is accepted.
    pub fn validate(&self) -> Result<(), ParamError> {
        if !(1..=1024).contains(&self.jobs) {
            return Err(ParamError::value(
                NAME,
                "jobs",
                self.jobs,
                "is not accepted; use 1..1024 job slots",
            ));
        }
        if !(1..=MAX_UNITS).contains(&self.units) {
            return Err(ParamError::value(
                NAME,
                "units",
                self.units,
                format!("is not accepted; use 1..{MAX_UNITS}"),
            ));
        }
        if !(1..=self.units).contains(&self.dirs) {
            return Err(ParamError::params(
                NAME,
                &["dirs", "units"],
                format!(
                    "dirs {} is not accepted with units {}: use 1..units directories",
                    self.dirs, self.units
                ),
            ));
        }
        let hour = Duration::from_secs(3600);
        if self.cpu.is_zero() || self.cpu > hour || self.link > hour {
            return Err(ParamError::params(
                NAME,
                &["cpu", "link"],
                "cpu must be between 1ns and 1h, link at most 1h",
            ));
        }
        Ok(())
    }
}

/// The parameters of [`Build`], each declared once.
const TABLE: &[Param<Build>] = &[
    Param::new(
        ParamDef::value(
            "jobs",
            "4",
            "4",
            "Job slots (make -jN, 1..1024), comma-separated for one configuration each.",
        )
        .kind(ParamKind::List),
        |w, v| parse_count(NAME, "jobs", v, 1..=1024).map(|n| w.jobs = n),
        |w| w.jobs.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "units",
            "120",
            "120",
            "Compile units of the tree (1..20000; a 2.5-era bzImage has about 600).",
        ),
        |w, v| parse_count(NAME, "units", v, 1..=MAX_UNITS).map(|n| w.units = n),
        |w| w.units.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "dirs",
            "12",
            "12",
            "Directories the units are spread over, each linked into its built-in.o (1..units).",
        ),
        |w, v| parse_count(NAME, "dirs", v, 1..=MAX_UNITS).map(|n| w.dirs = n),
        |w| w.dirs.to_string(),
    ),
    Param::new(
        ParamDef::value(
            "cpu",
            "40ms",
            "40ms",
            "Mean CPU of one compile unit (sizes are log-normal, sigma 0.8).",
        ),
        |w, v| parse_with(NAME, v, parse_duration).map(|d| w.cpu = d),
        |w| format_duration(w.cpu),
    ),
    Param::new(
        ParamDef::value("link", "200ms", "200ms", "CPU of the final link."),
        |w, v| parse_with(NAME, v, parse_duration).map(|d| w.link = d),
        |w| format_duration(w.link),
    ),
    Param::new(
        ParamDef::value(
            "tree",
            "1",
            "1",
            "Seed of the units' sizes: the same number gives the same tree on every backend (0..2^32-1).",
        ),
        |w, v| parse_count(NAME, "tree", v, 0..=u32::MAX as usize).map(|n| w.seed = n as u64),
        |w| w.seed.to_string(),
    ),
    Param::<Build>::new(
        ParamDef::value(
            "real-make",
            "",
            "",
            "Build a real C tree of the same shape with the real make -jN and the system compiler (real kernel only; needs gcc and make).",
        )
        .kind(ParamKind::Flag)
        .no_default(),
        |w, v| parse_param(NAME, "real-make", v, "true or false").map(|r| w.real_make = r),
        |w| w.real_make.to_string(),
    )
    // Only when given, so that the records of the modelled build stay as they were.
    .recorded_when(|w| w.real_make),
    Param::new(
        ParamDef::tasks(
            "processes",
            "processes|threads",
            "How the real backend hosts the job server; its jobs are new processes, or threads with tasks=threads.",
        ),
        |w, v| parse_hosting(v).map(|m| w.mode = m),
        |w| w.mode.to_string(),
    ),
];

/// The declarations of [`TABLE`].
const PARAMS: &[ParamDef] = &param_defs::<Build, { TABLE.len() }>(TABLE);

/// The `tasks` parameter: the job server runs as a process or as threads.
fn parse_hosting(value: &str) -> Result<TaskMode, ParamError> {
    match parse_with(NAME, value, str::parse)? {
        m @ (TaskMode::Processes | TaskMode::Threads) => Ok(m),
        other => Err(ParamError::value(
            NAME,
            "tasks",
            other,
            "is not accepted; use processes or threads",
        )),
    }
}

impl Preset for Build {
    const DEF: WorkloadDef = WorkloadDef::new(
        NAME,
        "A kernel build: a job server with --jobs slots runs compile jobs and links, each a new process (groups: make, cc, ld).",
        "seed 002's make -jN bzImage: a job server runs a kernel-shaped graph of compile and link jobs, each a new process; makespan, busy CPUs, jobs/s",
        PARAMS,
    )
    .examples(&[
        Example::new(
            "A make -j8 kernel build on a simulated 4-CPU machine",
            "run build --jobs 8 --backend sim --cpus 4",
        ),
        Example::new(
            "Makespan against make's job slots",
            "sweep build --backend sim --cpus 4 --vary jobs=2,4,8",
        ),
    ]);

    const TABLE: &'static [Param<Self>] = TABLE;

    fn check(&self) -> Result<(), ParamError> {
        self.validate()
    }

    fn host_needs(&self) -> HostNeeds {
        if !self.real_make {
            return HostNeeds::default();
        }
        HostNeeds {
            files: Some(("units", build_tree::tree_bytes(self) * 3)),
            real_kernel: Some("real-make (the real make and C compiler)"),
            programs: Some((&["make", "cc"], "apt-get install -y gcc make")),
            ..HostNeeds::default()
        }
    }
}

impl Build {
    /// The job server: start ready jobs in makefile order while slots are free, reap whichever
    /// ends first, until the final link has ended.
    async fn serve<C: Context>(&self, ctx: &C) -> Result<(), WorkloadError> {
        let graph = self.graph();
        let start = ctx.now();
        // Per directory, compile jobs not yet reaped; links not yet reaped.
        let mut dir_left = vec![0usize; self.dirs];
        for j in &graph {
            if j.group == CC {
                dir_left[j.dir] += 1;
            }
        }
        let mut links_left = self.dirs;
        let mut started = vec![false; graph.len()];
        let mut reaped = vec![false; graph.len()];
        let mut running: Vec<(TaskRef, usize)> = Vec::with_capacity(self.jobs);
        let mut job_cpu = Duration::ZERO;
        let mut next = 0; // every job before it has started
        loop {
            while running.len() < self.jobs {
                let ready = (next..graph.len()).find(|&i| {
                    !started[i]
                        && match (graph[i].group, graph[i].dir) {
                            (CC, _) => true,
                            (_, d) if d < self.dirs => dir_left[d] == 0,
                            _ => links_left == 0,
                        }
                });
                let Some(i) = ready else { break };
                ctx.compute(MAKE_CPU_PER_JOB).await;
                let child = ctx.spawn(graph[i].group, i as u64).await?;
                started[i] = true;
                running.push((child, i));
                while next < graph.len() && started[next] {
                    next += 1;
                }
            }
            if running.is_empty() {
                break;
            }
            if ctx.stop_requested() {
                return Err(WorkloadError::Stopped);
            }
            let exit = ctx.wait(None).await?;
            let Some(pos) = running.iter().position(|(t, _)| *t == exit.task) else {
                return Err(WorkloadError::Integrity(format!(
                    "reaped task {} that no running job is",
                    exit.task.id
                )));
            };
            let (_, i) = running.swap_remove(pos);
            if reaped[i] {
                return Err(WorkloadError::Integrity(format!(
                    "job {i} was reaped twice"
                )));
            }
            reaped[i] = true;
            job_cpu += exit.cpu;
            match (graph[i].group, graph[i].dir) {
                (CC, d) => dir_left[d] -= 1,
                (_, d) if d < self.dirs => links_left -= 1,
                _ => {}
            }
        }
        let makespan = ctx.now().saturating_sub(start);
        let done = reaped.iter().filter(|&&r| r).count();
        if done != graph.len() {
            return Err(WorkloadError::Integrity(format!(
                "{done} of the graph's {} jobs ran",
                graph.len()
            )));
        }
        ctx.record("makespan_s", makespan.as_secs_f64());
        ctx.record("job_cpu_s", job_cpu.as_secs_f64());
        ctx.record("jobs", done as f64);
        Ok(())
    }

    /// `real-make`: run the real `make -jN` on the tree [`Workload::write_files`] wrote, and
    /// check that it ran every compile and link of the graph.
    async fn real_make<C: Context>(&self, ctx: &C) -> Result<(), WorkloadError> {
        const LOG: &str = "make.log";
        let program = Program {
            argv: vec!["make".into(), format!("-j{}", self.jobs)],
            dir: build_tree::TREE_DIR.into(),
            output: LOG.into(),
        };
        let exit = ctx.run_program(&program).await?;
        let mut log = Vec::new();
        ctx.read_file(LOG, 0, &mut log).await?;
        let (cc, ld) = build_tree::count_jobs(&String::from_utf8_lossy(&log));
        if cc != self.units || ld != self.dirs + 1 {
            return Err(WorkloadError::Integrity(format!(
                "make ran {cc} compiles and {ld} links; the Makefile has {} and {}",
                self.units,
                self.dirs + 1
            )));
        }
        ctx.record("makespan_s", exit.wall.as_secs_f64());
        ctx.record("job_cpu_s", exit.cpu.as_secs_f64());
        ctx.record("jobs", (cc + ld) as f64);
        Ok(())
    }

    /// One job: a compile (gcc without -pipe: preprocess, write the `.i`, read it back,
    /// compile, write the object) or a link (link, write the output).
    async fn job<C: Context>(&self, ctx: &C) -> Result<(), WorkloadError> {
        let graph = self.graph();
        let i = ctx.spawn_arg() as usize;
        let Some(job) = graph.get(i) else {
            return Err(WorkloadError::Integrity(format!(
                "job {i} is not in the graph of {} jobs",
                graph.len()
            )));
        };
        if job.group == CC {
            ctx.compute(job.cpu.mul_f64(0.2)).await;
            ctx.io(IoKind::Write, job.temp_bytes).await?;
            ctx.io(IoKind::Read, job.temp_bytes).await?;
            ctx.compute(job.cpu.mul_f64(0.8)).await;
            ctx.io(IoKind::Truncate, 0).await?;
        } else {
            ctx.compute(job.cpu).await;
        }
        ctx.io(IoKind::Write, job.out_bytes).await
    }
}

impl Workload for Build {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn params(&self) -> BTreeMap<String, String> {
        self.param_values()
    }

    fn label(&self) -> String {
        if self.real_make {
            format!("jobs={} real-make", self.jobs)
        } else {
            format!("jobs={}", self.jobs)
        }
    }

    fn plan(&self) -> Plan {
        // With real-make, make starts the jobs: they are its children, not the plan's tasks.
        let spawned = |n| if self.real_make { 0 } else { n };
        Plan {
            groups: vec![
                GroupPlan::fixed("make", 1),
                GroupPlan {
                    name: "cc",
                    tasks: 0,
                    spawn: spawned(self.units),
                },
                GroupPlan {
                    name: "ld",
                    tasks: 0,
                    spawn: spawned(self.dirs + 1),
                },
            ],
            channels: 0,
            duplex: false,
            locks: 0,
            sync: SyncPlan::default(),
            mode: self.mode,
            transport: Transport::Pipe,
        }
    }

    async fn body<C: Context>(&self, task: TaskRef, ctx: &C) -> Result<(), WorkloadError> {
        match task.group {
            MAKE if self.real_make => self.real_make(ctx).await,
            MAKE => self.serve(ctx).await,
            _ => self.job(ctx).await,
        }
    }

    fn metric_defs(&self) -> Vec<MetricDef> {
        vec![
            metric(
                "makespan_s",
                "s",
                Better::Lower,
                "from the job server's start to the final link's end",
            ),
            metric(
                "busy_cpus",
                "CPUs",
                Better::Higher,
                "CPU time of all jobs / makespan: CPUs kept busy on average (utilisation × CPUs)",
            ),
            metric("jobs_per_s", "jobs/s", Better::Higher, "jobs / makespan"),
            metric(
                "jobs",
                "jobs",
                Better::Higher,
                "jobs started and reaped, each once (checked against the graph)",
            ),
        ]
    }

    fn metrics(&self, outcome: &Outcome) -> Result<BTreeMap<String, f64>, WorkloadError> {
        let plan = self.plan();
        let makespan = outcome.sum(&plan, Some(MAKE), "makespan_s");
        let jobs = outcome.sum(&plan, Some(MAKE), "jobs");
        let expected = (self.units + self.dirs + 1) as f64;
        if jobs != expected || makespan <= 0.0 {
            return Err(WorkloadError::Integrity(format!(
                "{jobs} jobs ran in {makespan} s; the graph has {expected}"
            )));
        }
        let cpu = outcome.sum(&plan, Some(MAKE), "job_cpu_s");
        Ok(BTreeMap::from([
            ("makespan_s".into(), makespan),
            ("busy_cpus".into(), cpu / makespan),
            ("jobs_per_s".into(), jobs / makespan),
            ("jobs".into(), jobs),
        ]))
    }

    fn write_files(&self, dir: &std::path::Path) -> std::io::Result<()> {
        if self.real_make {
            build_tree::write(self, dir)?;
        }
        Ok(())
    }

    fn expected_time(&self) -> Option<Duration> {
        // A real compile also pays the compiler's start (about 20 ms).
        let start = if self.real_make {
            Duration::from_millis(50)
        } else {
            Duration::ZERO
        };
        let cpu = (self.cpu + start) * self.units as u32 + self.link;
        Some(cpu * 3 + Duration::from_secs(60))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_graph_has_every_unit_a_link_per_directory_and_the_final_link() {
        let b = Build::default();
        let g = b.graph();
        assert_eq!(g.len(), 120 + 12 + 1);
        assert_eq!(g.iter().filter(|j| j.group == CC).count(), 120);
        // Every directory's link follows its compile units in makefile order.
        for d in 0..12 {
            let link = g.iter().position(|j| j.group == LD && j.dir == d).unwrap();
            let last_cc = g.iter().rposition(|j| j.group == CC && j.dir == d).unwrap();
            assert!(last_cc < link);
        }
        assert_eq!(g.last().unwrap().dir, 12);
        // The sizes have mean about 1 and a spread.
        let mean: f64 = (0..10_000).map(|u| b.factor(u)).sum::<f64>() / 10_000.0;
        assert!((mean - 1.0).abs() < 0.05, "mean factor {mean}");
        assert!((0..120).map(|u| b.factor(u)).any(|f| f > 2.0));
    }

    #[test]
    fn bad_values_are_refused_with_what_is_accepted() {
        let mut b = Build::default();
        let e = b.set_param("jobs", "0").unwrap_err().to_string();
        assert!(e.contains("jobs") && e.contains("1..1024"), "{e}");
        b.set_param("dirs", "200").unwrap();
        let e = b.check().unwrap_err().to_string();
        assert!(e.contains("dirs 200") && e.contains("units 120"), "{e}");
        let e = b
            .set_param("tasks", "group-processes")
            .unwrap_err()
            .to_string();
        assert!(e.contains("processes or threads"), "{e}");
        assert!(b.set_param("bogus", "1").is_err());
    }
}
