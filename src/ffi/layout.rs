//! The C structs' layouts, pinned: what callers built against older headers rely on.

#[cfg(target_pointer_width = "64")]
use super::{
    callbacks::{cuzk_log_record, cuzk_timeline_event},
    config::{cuzk_config, CONFIG_V1_SIZE},
    jobs::{cuzk_job_request, JOB_REQUEST_V1_SIZE},
    observe::{cuzk_admission, cuzk_engine_report, ADMISSION_V1_SIZE, REPORT_V1_SIZE},
    post::{cuzk_post_request, POST_REQUEST_V1_SIZE},
    snap::{cuzk_update_request, UPDATE_REQUEST_V1_SIZE},
};

/// Pins version 1 of a struct whose `struct_size` promises "fields are only appended": each v1
/// field's offset and the v1 size as literals (never edit them), and every later field past the
/// v1 end. Every field of the struct is named, in one list or the other (a destructuring with
/// no `..`), so a new field fails the build until it is listed: in `later`, where one inserted
/// before the v1 end, even into padding that moves no offset, fails the offset check.
/// (tests/c/test_abi.c holds frozen C copies of the same versions and checks the header.)
macro_rules! pinned_v1 {
    ($t:ident, $size:expr, { $($f:ident @ $off:literal),+ $(,)? } later { $($g:ident),* $(,)? }) => {
        const _: () = {
            $(assert!(std::mem::offset_of!($t, $f) == $off);)+
            $(assert!(std::mem::offset_of!($t, $g) >= $size);)*
            assert!(std::mem::size_of::<$t>() >= $size);
        };
        const _: fn($t) = |v: $t| {
            let $t { $($f: _,)+ $($g: _,)* } = v;
        };
    };
}
#[cfg(target_pointer_width = "64")]
mod v1_layouts {
    use super::*;
    pinned_v1!(cuzk_config, CONFIG_V1_SIZE, { struct_size @ 0, synthesis_workers @ 4,
        synthesis_lookahead @ 8, memory_budget_bytes @ 16, params_dir @ 24, self_check @ 32,
        timeline_stderr @ 33, timeline_file @ 40 }
        later { job_retention_ms, max_c1_bytes, device_cooldown_ms, max_jobs, _reserved });
    pinned_v1!(cuzk_engine_report, 136, { struct_size @ 0, devices @ 4, devices_busy @ 8,
        devices_out_of_service @ 12, jobs_in_flight @ 16, partitions_queued @ 24,
        partitions_synthesizing @ 32, partitions_ready @ 40, partitions_proving @ 48,
        memory_budget_bytes @ 56, memory_reserved_bytes @ 64, memory_peak_bytes @ 72,
        jobs_completed @ 80, jobs_failed @ 88, jobs_cancelled @ 96, params_resident @ 104,
        jobs_retained @ 112, partitions_cpu_retried @ 120, timeline_events_dropped @ 128 }
        later {});
    pinned_v1!(cuzk_admission, 72, { struct_size @ 0, admit @ 4, reason @ 8,
        partitions_per_job @ 12, partitions_fit @ 16, jobs_fit @ 24, partition_bytes @ 32,
        params_bytes @ 40, queued_bytes @ 48, free_bytes @ 56, job_slots @ 64 }
        later { cpu_fallback_bytes, cpu_fallback_fits });
    pinned_v1!(cuzk_job_request, JOB_REQUEST_V1_SIZE, { struct_size @ 0, priority @ 4,
        c1_ptr @ 8, c1_len @ 16, sector_id @ 24, prover_id @ 32, fixture_partitions @ 64,
        fixture_layers @ 68 } later {});
    pinned_v1!(cuzk_post_request, POST_REQUEST_V1_SIZE, { struct_size @ 0, priority @ 4,
        registered_proof @ 8, prover_id @ 16, randomness @ 48, vanilla_proofs @ 80,
        vanilla_count @ 88, partition_index @ 96 } later {});
    pinned_v1!(cuzk_update_request, UPDATE_REQUEST_V1_SIZE, { struct_size @ 0, priority @ 4,
        registered_proof @ 8, comm_r_old @ 16, comm_r_new @ 48, comm_d_new @ 80,
        vanilla_proofs @ 112, vanilla_count @ 120 } later {});
    const _: () = assert!(JOB_REQUEST_V1_SIZE == 72 && POST_REQUEST_V1_SIZE == 104);
    const _: () = assert!(UPDATE_REQUEST_V1_SIZE == 128);
    // What a caller whose struct_size is 0 gets (the first header's layout).
    const _: () = assert!(REPORT_V1_SIZE == 136 && ADMISSION_V1_SIZE == 72);
    pinned_v1!(cuzk_timeline_event, 48, { struct_size @ 0, kind @ 4, t_us @ 8, job_id @ 16,
        partition @ 24, worker @ 28, value @ 32, detail @ 40 } later {});
    pinned_v1!(cuzk_log_record, 32, { struct_size @ 0, level @ 4, unix_us @ 8, target @ 16,
        message @ 24 } later {});
}
