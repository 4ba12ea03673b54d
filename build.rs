//! Build script. With the `cuda` feature it compiles `kernels/` with nvcc (sppark's headers and
//! its own small CUDA library, built by its crate with the same nvcc); without it, it does
//! nothing and the crate is CPU-only.
//!
//! Environment:
//! - `NVCC` or `CUDA_HOME` (or `CUDA_PATH`) locate nvcc; otherwise `nvcc` on `PATH`.
//! - `CUZK_CUDA_ARCHS`: comma-separated compute capabilities to emit machine code for
//!   (default `90`, the H100/H200); PTX for the highest one is embedded as well so newer chips
//!   can JIT it. sppark's own build takes its extra architectures from `NVCC_APPEND_FLAGS`
//!   (set in `.cargo/config.toml`, overridable from the environment).

use std::env;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=kernels");
    for v in [
        "NVCC",
        "CUDA_HOME",
        "CUDA_PATH",
        "CUZK_CUDA_ARCHS",
        "NVCC_APPEND_FLAGS",
    ] {
        println!("cargo:rerun-if-env-changed={v}");
    }
    if env::var_os("CARGO_FEATURE_CUDA").is_none() {
        return;
    }
    #[cfg(feature = "cuda")]
    cuda::build();
}

#[cfg(feature = "cuda")]
mod cuda {
    use super::*;
    use std::{path::PathBuf, process::Command};

    fn nvcc() -> PathBuf {
        let candidates: Vec<PathBuf> = env::var_os("NVCC")
            .map(PathBuf::from)
            .into_iter()
            .chain(
                ["CUDA_HOME", "CUDA_PATH"]
                    .iter()
                    .filter_map(|v| env::var_os(v))
                    .map(|h| PathBuf::from(h).join("bin/nvcc")),
            )
            .chain(std::iter::once(PathBuf::from("nvcc")))
            .collect();
        for c in &candidates {
            if let Ok(out) = Command::new(c).arg("--version").output() {
                if out.status.success() {
                    return c.clone();
                }
            }
        }
        panic!(
            "\n\nthe `cuda` feature needs nvcc (CUDA 12 or 13), tried: {}.\n\
             Install it with `scripts/install-nvcc.sh` (pip wheels, no root) and export what it prints,\n\
             or set NVCC / CUDA_HOME. Build without `--features cuda` for a CPU-only library.\n\n",
            candidates.iter().map(|c| c.display().to_string()).collect::<Vec<_>>().join(", ")
        );
    }

    pub fn build() {
        let nvcc = nvcc();
        let archs = env::var("CUZK_CUDA_ARCHS").unwrap_or_else(|_| "90".into());
        let archs: Vec<String> = archs
            .split(',')
            .map(|a| a.trim().trim_start_matches("sm_").to_string())
            .filter(|a| !a.is_empty())
            .collect();
        if archs.is_empty() || archs.iter().any(|a| a.parse::<u32>().is_err()) {
            panic!("CUZK_CUDA_ARCHS must list compute capabilities such as `90` or `80,90`");
        }
        let mut b = cc::Build::new();
        // cc picks nvcc up from NVCC when building CUDA.
        env::set_var("NVCC", &nvcc);
        // No -G (device debug code is many times slower).
        b.cuda(true)
            .cudart("static")
            .debug(false)
            .opt_level(3)
            .file("kernels/probe.cu")
            .file("kernels/groth16.cu")
            .file("kernels/fixed_base.cu")
            // sppark's field, curve, NTT and MSM headers, and blst's (their host-side types).
            .define("FEATURE_BLS12_381", None)
            .define("TAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE", None)
            .flag("-Xcompiler")
            .flag("-Wno-unused-function");
        // blst's host-side helpers are named after the assembly its build chose: with ADX when
        // the build host has it (blst's own rule).
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("adx") {
            b.define("__ADX__", None);
        }
        for dep in ["DEP_SPPARK_ROOT", "DEP_BLST_C_SRC"] {
            match env::var_os(dep) {
                Some(dir) => {
                    b.include(dir);
                }
                None => {
                    panic!("{dep} is not set: the cuda feature needs the sppark and blst crates")
                }
            }
        }
        for a in &archs {
            b.flag("-gencode")
                .flag(format!("arch=compute_{a},code=sm_{a}"));
        }
        let top = archs
            .iter()
            .max_by_key(|a| a.parse::<u32>().unwrap())
            .unwrap();
        b.flag("-gencode")
            .flag(format!("arch=compute_{top},code=compute_{top}"));
        b.define(
            "CUZK_CUDA_ARCHS",
            Some(format!("\"{}\"", archs.join(",")).as_str()),
        );
        b.compile("cuzk_kernels");
        // cudart_static lives in lib64 (toolkit) or lib (pip wheels).
        if let Some(root) = nvcc.parent().and_then(|p| p.parent()) {
            for d in ["lib64", "lib"] {
                let p = root.join(d);
                if p.join("libcudart_static.a").exists() {
                    println!("cargo:rustc-link-search=native={}", p.display());
                }
            }
        }
        println!("cargo:rustc-link-lib=static=cudart_static");
        for l in ["dl", "rt", "pthread", "stdc++"] {
            println!("cargo:rustc-link-lib={l}");
        }
    }
}
