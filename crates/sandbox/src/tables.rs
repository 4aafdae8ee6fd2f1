//! The tables of writable places, each entry with the reason it is there.
//!
//! Kept apart from the plan logic so a reviewer can audit "what may a confined command write"
//! in one screen, and so adding a toolchain is a one-line change with its justification beside it.

/// Where a toolchain cache lives: under the home directory, or named by an environment variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheLocation {
    Home(&'static str),
    Env(&'static str),
}

/// One writable toolchain cache and why builds need to write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheDir {
    pub location: CacheLocation,
    pub reason: &'static str,
}

const fn home(rel: &'static str, reason: &'static str) -> CacheDir {
    CacheDir {
        location: CacheLocation::Home(rel),
        reason,
    }
}

const fn env(var: &'static str, reason: &'static str) -> CacheDir {
    CacheDir {
        location: CacheLocation::Env(var),
        reason,
    }
}

/// Toolchain caches writable in `workspace-write` (when they exist). Without them the first
/// `cargo build` or `npm install` fails, and the agent's next move is to ask for full access.
pub const TOOLCHAIN_CACHES: &[CacheDir] = &[
    home(
        ".cargo",
        "cargo registry, git checkouts and installed binaries",
    ),
    env("CARGO_HOME", "cargo home when relocated"),
    home(".rustup", "rustup toolchains and its download cache"),
    env("RUSTUP_HOME", "rustup home when relocated"),
    home(
        ".cache",
        "XDG cache: pip, go-build, yarn, pre-commit, node-gyp, uv, ...",
    ),
    env("XDG_CACHE_HOME", "XDG cache when relocated"),
    home(".npm", "npm package cache and logs"),
    home(".local/share/pnpm", "pnpm store"),
    home(".yarn", "yarn berry cache"),
    home(".bun", "bun install cache"),
    home(".deno", "deno module cache"),
    home("go/pkg/mod", "go module cache (default GOPATH)"),
    env("GOPATH", "go module cache and binaries when relocated"),
    env("GOMODCACHE", "go module cache when relocated"),
    env("GOCACHE", "go build cache when relocated"),
    home(".gradle", "gradle caches and wrapper distributions"),
    home(".m2", "maven local repository"),
    home(".ivy2", "ivy/sbt dependency cache"),
    home(".sbt", "sbt boot and caches"),
    home(".nuget/packages", "NuGet package cache"),
    home(".pub-cache", "dart/flutter package cache"),
    home(".cabal", "cabal package store"),
    home(".stack", "haskell stack snapshots"),
    home(".opam", "opam switches and downloads"),
    home(".gem", "rubygems user installs"),
    home(".bundle", "bundler cache"),
    home(".ccache", "ccache compiler cache"),
];

/// Fixed temp directories writable in `workspace-write`; `$TMPDIR` is added from the environment.
pub const TEMP_DIRS: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

/// Writable in every confined mode: output sinks and the terminal, which a read-only command still
/// needs (`2>/dev/null`, a pager opening `/dev/tty`, `script` allocating a pty).
pub const TERMINAL_DEVICES: &[&str] = &["/dev/null", "/dev/tty", "/dev/ptmx", "/dev/pts"];

/// Writable in `workspace-write`: devices whose writes change nothing on disk. GPU nodes are here
/// because CUDA/ROCm open them read-write and an ML job must not fail as a "sandbox denial".
pub const HARMLESS_DEVICES: &[&str] = &[
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/dri",
    "/dev/kfd",
];

/// Device-name prefix under `/dev` also treated as harmless (`/dev/nvidia0`, `/dev/nvidiactl`, ...).
pub(crate) const GPU_DEVICE_PREFIX: &str = "nvidia";
