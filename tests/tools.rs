//! Unit tests of the tools of the `cuzk-tools` crate (`tools/`) (timeline analysis, the call benchmark's arguments),
//! which live outside the library.

mod common;

mod analysis {
    use crate::common::tools::analysis::*;
    use cuzk::timeline::{Event, EventKind, NO_PARTITION};

    fn ev(kind: EventKind, ms: u64, job: u64, partition: u32, worker: u32) -> Event {
        Event {
            kind,
            t_us: ms * 1000,
            job,
            partition,
            worker,
            value: 0,
            detail: String::new(),
        }
    }

    /// job, partition, synth worker, synth start/end, device, gpu start/end (ms).
    fn partition(
        out: &mut Vec<Event>,
        job: u64,
        p: u32,
        sw: u32,
        ss: u64,
        se: u64,
        dev: u32,
        gs: u64,
        ge: u64,
    ) {
        use EventKind::*;
        out.push(ev(SynthStart, ss, job, p, sw));
        out.push(ev(SynthEnd, se, job, p, sw));
        out.push(ev(ChanSend, se, job, p, sw));
        out.push(ev(GpuPickup, gs, job, p, dev));
        out.push(ev(GpuStart, gs, job, p, dev));
        out.push(ev(GpuEnd, ge, job, p, dev));
    }

    fn two_jobs_one_device() -> Vec<Event> {
        let mut e = vec![
            ev(EventKind::JobQueued, 0, 1, NO_PARTITION, 0),
            ev(EventKind::JobQueued, 0, 2, NO_PARTITION, 0),
        ];
        partition(&mut e, 1, 0, 0, 0, 100, 0, 100, 150);
        partition(&mut e, 1, 1, 1, 0, 200, 0, 200, 250);
        partition(&mut e, 2, 0, 0, 200, 400, 0, 400, 450);
        partition(&mut e, 2, 1, 1, 210, 420, 0, 450, 500);
        e.push(ev(EventKind::JobDone, 250, 1, NO_PARTITION, 0));
        e.push(ev(EventKind::JobDone, 510, 2, NO_PARTITION, 0));
        e.reverse(); // order must not matter
        e
    }

    #[test]
    fn busy_gaps_and_concurrency_of_a_known_stream() {
        let a = analyze(&two_jobs_one_device());
        assert_eq!(a.partitions.len(), 4);
        assert_eq!(a.incomplete, 0);
        assert_eq!((a.run_start_us, a.run_end_us), (0, 510_000));
        assert_eq!(a.devices.len(), 1);
        let d = &a.devices[0];
        assert_eq!(d.partitions, 4);
        assert!((d.busy_ms - 200.0).abs() < 1e-9);
        assert!((d.busy_pct_run - 100.0 * 200.0 / 510.0).abs() < 1e-9);
        assert!((d.busy_pct_steady - 50.0).abs() < 1e-9);
        let gaps: Vec<(u64, u64, GapClass)> = a
            .gaps
            .iter()
            .map(|g| (g.start_us / 1000, g.end_us / 1000, g.class))
            .collect();
        assert_eq!(
            gaps,
            vec![
                (0, 100, GapClass::StartUp),
                (150, 200, GapClass::WithinProof),
                (250, 400, GapClass::CrossProof),
                (500, 510, GapClass::Drain),
            ]
        );
        assert_eq!(a.gaps[2].next_job, Some(2));
        assert!((a.gap_ms(GapClass::WithinProof) - 50.0).abs() < 1e-9);
        assert_eq!(a.max_synth_concurrency, 2);
        assert!(
            (a.mean_synth_concurrency - 710.0 / 510.0).abs() < 1e-9,
            "{}",
            a.mean_synth_concurrency
        );
        let p = &a.partitions[3];
        assert_eq!((p.job, p.partition), (2, 1));
        assert!(
            (p.synth_ms() - 210.0).abs() < 1e-9
                && (p.wait_ms() - 30.0).abs() < 1e-9
                && (p.gpu_ms() - 50.0).abs() < 1e-9
        );
    }

    #[test]
    fn a_batch_counts_once_in_busy_time() {
        let mut e = Vec::new();
        // Two partitions proved together (one GPU call), then one alone.
        partition(&mut e, 1, 0, 0, 0, 100, 0, 100, 300);
        partition(&mut e, 1, 1, 1, 0, 100, 0, 100, 300);
        partition(&mut e, 1, 2, 0, 0, 100, 0, 350, 400);
        let a = analyze(&e);
        assert_eq!(a.devices.len(), 1);
        assert!(
            (a.devices[0].busy_ms - 250.0).abs() < 1e-9,
            "{}",
            a.devices[0].busy_ms
        );
    }

    #[test]
    fn overlapping_devices_and_incomplete_partitions() {
        let mut e = Vec::new();
        // Two devices proving at once: each is busy on its own lane.
        partition(&mut e, 1, 0, 0, 0, 100, 0, 100, 300);
        partition(&mut e, 1, 1, 1, 0, 100, 1, 100, 200);
        partition(&mut e, 1, 2, 0, 100, 250, 1, 250, 300);
        // An abandoned partition (cancelled during synthesis).
        e.push(ev(EventKind::SynthStart, 100, 2, 0, 1));
        let mut end = ev(EventKind::SynthEnd, 120, 2, 0, 1);
        end.detail = "aborted".into();
        e.push(end);
        let a = analyze(&e);
        assert_eq!(a.incomplete, 1);
        assert_eq!(
            a.devices.iter().map(|d| d.partitions).collect::<Vec<_>>(),
            vec![1, 2]
        );
        assert!((a.devices[0].busy_pct_steady - 100.0).abs() < 1e-9);
        assert!((a.devices[1].busy_pct_steady - 75.0).abs() < 1e-9);
        let g: Vec<_> = a
            .gaps
            .iter()
            .map(|g| (g.device, g.start_us / 1000, g.end_us / 1000, g.class))
            .collect();
        assert_eq!(
            g,
            vec![
                (0, 0, 100, GapClass::StartUp),
                (1, 0, 100, GapClass::StartUp),
                (1, 200, 250, GapClass::WithinProof)
            ]
        );
        assert_eq!(a.max_synth_concurrency, 2);
    }

    #[test]
    fn log_lines_round_trip() {
        let events = two_jobs_one_device();
        let text: String = events
            .iter()
            .map(|e| cuzk::timeline::log_line(e) + "\n")
            .collect();
        let back = parse_log(&format!("noise\n{text}more noise\n")).unwrap();
        assert_eq!(back.len(), events.len());
        assert_eq!(analyze(&back), analyze(&events));
        let json = serde_json::to_string(&events).unwrap();
        assert_eq!(parse_any(&json).unwrap(), events);
        assert!(parse_log("TIMELINE,1.0,NOPE,1,").is_err());
        assert!(parse_log("TIMELINE,x,JOB_DONE,1,").is_err());
    }

    #[test]
    fn svg_is_well_formed_and_shows_every_bar_and_gap() {
        let a = analyze(&two_jobs_one_device());
        let s = waterfall_svg(&a, "test");
        check_svg(&s).unwrap();
        // 4 partitions × (synthesis bar + prove bar) with titles, and 4 gaps.
        assert_eq!(s.matches("synthesis: ").count(), 4);
        assert_eq!(s.matches("prove: ").count(), 4);
        assert_eq!(s.matches("idle ").count(), 4);
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
    }
}

mod calls {
    use std::path::PathBuf;

    use crate::common::tools::calls::*;
    use cuzk::{porep::FixtureShape, Status};

    #[test]
    fn bad_widths_and_reps_are_argument_errors() {
        let spec = |widths: Vec<usize>, reps| CallsSpec {
            c1: Vec::new(),
            prover_id: [0; 32],
            sector_id: 1,
            shape: FixtureShape::default(),
            devices: "cpu".into(),
            widths,
            reps,
            params_dir: PathBuf::from("."),
            compare_cpu: false,
            compact: false,
        };
        for s in [spec(vec![], 1), spec(vec![1, 0], 1), spec(vec![1], 0)] {
            assert_eq!(run(&s).unwrap_err().status, Status::InvalidArgument);
        }
        // Past the arguments, bad input is reported as such.
        assert_eq!(
            run(&spec(vec![1], 1)).unwrap_err().status,
            Status::InvalidInput
        );
    }
}
