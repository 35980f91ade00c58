//! rt-app's `util_min`/`util_max`: utilization clamps, applied by the real backend where the
//! kernel has them (CONFIG_UCLAMP_TASK, detected before the run) and refused before anything
//! runs where it has not — as rt-app exits when sched_setattr refuses them; the simulator
//! ignores them. Which branch runs depends on the kernel; `/proc/config.gz`, where present,
//! must agree with the detection.

mod common;
use common::{schedlab, serial, stderr, succeeded, temp_dir};

const FILE: &str = r#"{
  "global": { "duration": 1 },
  "tasks": { "t": { "loop": 3, "util_max": 512, "run": 1000, "sleep": 1000 } }
}
"#;

/// CONFIG_UCLAMP_TASK as the running kernel's own configuration says, if it says.
fn configured() -> Option<bool> {
    let out = std::process::Command::new("zcat")
        .arg("/proc/config.gz")
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let text = String::from_utf8_lossy(&out.stdout);
    Some(text.lines().any(|l| l == "CONFIG_UCLAMP_TASK=y"))
}

#[test]
fn utilization_clamps_are_applied_where_the_kernel_has_them_and_refused_before_the_run_where_not() {
    let _turn = serial();
    let detected = schedlab_real::knobs::uclamp_supported();
    if let Some(config) = configured() {
        assert_eq!(
            config,
            detected.is_ok(),
            "/proc/config.gz against {detected:?}"
        );
    }
    let dir = temp_dir("rtapp", "uclamp");
    let file = dir.path().join("u.json");
    std::fs::write(&file, FILE).unwrap();
    let f = file.to_str().unwrap();
    // The simulator ignores the clamp: it runs, and says so when it reads the file.
    let args = ["run", f, "--backend", "sim", "--runs", "1"];
    let out = succeeded(&args, schedlab().args(args).output().unwrap());
    assert!(stderr(&out).contains("the simulator models no utilization signal and ignores it"));
    let out = schedlab().args(["run", f, "--runs", "1"]).output().unwrap();
    let err = stderr(&out);
    match detected {
        Ok(()) => assert!(out.status.success(), "{err}"),
        Err(_) => {
            assert!(!out.status.success());
            assert!(
                err.contains("util-max=512: this kernel has no utilization clamping")
                    && err.contains("CONFIG_UCLAMP_TASK")
                    && err.contains("rt-app exits there too"),
                "{err}"
            );
            // Refused before anything ran: no repetition line.
            assert!(
                !String::from_utf8_lossy(&out.stdout).contains("run 1/1"),
                "{err}"
            );
        }
    }
}
