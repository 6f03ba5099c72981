//! Simulate a busy proving host on mock GPUs: the way to test an integration's scheduling
//! (priorities, faults, back-pressure) without GPUs, in seconds.
//!
//! Two mock devices, enumerated in swapped ordinal order as `CUDA_VISIBLE_DEVICES=1,0`
//! would, one of them failing every 5th partition; a mix of priorities; a Chrome/Perfetto
//! trace with one track per device. Then the example checks what the simulation tests
//! check: no two partitions overlapped on one physical device, every job landed.
//!
//! ```text
//! cargo run --release --example 02_simulate_on_mock_devices -- /tmp/cuzk-sim-trace.json
//! ```
//! and open the trace at <https://ui.perfetto.dev>.

use std::time::{Duration, Instant};

use cuzk::actors::mock::find_overlap;
use cuzk::{
    DeviceChoice, Engine, EngineConfig, MockDevice, MockDriver, Priority, SimulatedJob,
    SubmitOptions,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let trace = std::env::args().nth(1).unwrap_or_else(|| {
        std::env::temp_dir()
            .join("cuzk-sim-trace.json")
            .display()
            .to_string()
    });

    // Two devices at PCI 0000:00:06 and 0000:00:07, the second one flaky.
    let mut devices = vec![MockDevice::new(6), MockDevice::new(7)];
    devices[1].fail_every = Some(5);
    let driver = MockDriver::new(devices).with_ordinal_order(vec![1, 0])?;
    let recorder = driver.recorder();

    let mut config = EngineConfig::new(std::env::temp_dir());
    config.devices = DeviceChoice::mock(&driver);
    config.synthesis_workers = 4;
    config.trace_file = Some(trace.clone().into());
    let engine = Engine::start(config)?;

    // 200 jobs: PoRep-like batches of 10 partitions, WindowPoSt-like single partitions at
    // high priority, and now and then a critical WinningPoSt-like one.
    let t0 = Instant::now();
    let mut jobs = Vec::new();
    for i in 0..200 {
        let (partitions, priority, gpu_ms) = match i % 10 {
            0 => (1, Priority::Critical, 1),
            1..=3 => (1, Priority::High, 3),
            _ => (10, Priority::Normal, 2),
        };
        let job = SimulatedJob {
            partitions,
            gpu_time: Duration::from_millis(gpu_ms),
            synthesis_time: Duration::from_millis(1),
            ..SimulatedJob::default()
        };
        let opts = SubmitOptions {
            priority: Some(priority),
            ..Default::default()
        };
        jobs.push(engine.submit_simulated(job, opts)?.job);
    }
    let mut partitions = 0;
    for job in &jobs {
        partitions += engine
            .wait(*job, Some(Duration::from_secs(120)))?
            .partitions;
    }
    let status = engine.status()?;
    engine.shutdown(Duration::from_secs(1))?;

    let intervals = recorder.take();
    if let Some((a, b)) = find_overlap(&intervals) {
        return Err(format!("two partitions overlapped on {}: {a:?} / {b:?}", a.device).into());
    }
    println!(
        "{} jobs, {partitions} partitions in {:.2}s; no overlap on any device",
        jobs.len(),
        t0.elapsed().as_secs_f64()
    );
    for d in &status.devices {
        println!(
            "  {} (ordinal {} at start): {} partitions, {} failed attempts, busy {:.2}s",
            d.info.id,
            d.info.ordinal,
            d.partitions_ok,
            d.partitions_failed,
            d.busy.as_secs_f64()
        );
    }
    println!("trace: {trace} (one track per device; open in https://ui.perfetto.dev)");
    Ok(())
}
