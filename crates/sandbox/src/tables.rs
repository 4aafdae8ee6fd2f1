//! The tables of writable places, each entry with the reason it is there.
//!
//! Kept apart from the plan logic so a reviewer can audit "what may a confined command write"
//! in one screen, and so adding a toolchain is a one-line change with its justification beside it.

/// Where a toolchain cache lives: under the home directory, or under the directory an environment
/// variable names (`""` for the directory itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheLocation {
    Home(&'static str),
    Env(&'static str, &'static str),
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

const fn env(var: &'static str, rel: &'static str, reason: &'static str) -> CacheDir {
    CacheDir {
        location: CacheLocation::Env(var, rel),
        reason,
    }
}

/// Toolchain caches writable in `workspace-write`. Without them the first `cargo build` or
/// `npm install` fails, and the agent's next move is to ask for full access.
///
/// Caches only, never a tool's whole home: homes also hold what runs *outside* the sandbox later
/// (`~/.cargo/env` is sourced by the shell's rc files, `~/.cargo/bin` and `~/.bun/bin` lead
/// `PATH`, `~/.gradle/init.d` and `~/.sbt/1.0/plugins` run in every build, rustup toolchains are
/// the compilers themselves). A confined command writing there would run unconfined in the user's
/// next terminal. Global installs (`cargo install`, `npm -g`, `gem install --user-install`)
/// are refused for the same reason; they can take a root inside the workspace instead.
///
/// A missing cache under an existing tool home (or the XDG cache dir itself) is created when
/// the plan is made, so a tool's first download is not refused: Landlock can only allow paths
/// that exist.
pub const TOOLCHAIN_CACHES: &[CacheDir] = &[
    home(
        ".cargo/registry",
        "cargo registry index and downloaded crates",
    ),
    home(".cargo/git", "cargo git dependencies"),
    env("CARGO_HOME", "registry", "cargo registry when relocated"),
    env("CARGO_HOME", "git", "cargo git dependencies when relocated"),
    home(".rustup/downloads", "rustup download cache"),
    home(".rustup/tmp", "rustup scratch space"),
    home(
        ".cache",
        "XDG cache: pip, go-build, yarn, pre-commit, node-gyp, uv, deno, ...",
    ),
    env("XDG_CACHE_HOME", "", "XDG cache when relocated"),
    home(".npm/_cacache", "npm package cache"),
    home(".npm/_logs", "npm debug logs"),
    home(".local/share/pnpm/store", "pnpm store"),
    home(".yarn/berry/cache", "yarn berry cache"),
    home(".bun/install/cache", "bun install cache"),
    home("go/pkg/mod", "go module cache (default GOPATH)"),
    env("GOPATH", "pkg/mod", "go module cache when GOPATH is set"),
    env("GOMODCACHE", "", "go module cache when relocated"),
    env("GOCACHE", "", "go build cache when relocated"),
    home(".gradle/caches", "gradle caches"),
    home(".gradle/wrapper", "gradle wrapper distributions"),
    home(".m2/repository", "maven local repository"),
    home(".ivy2/cache", "ivy/sbt dependency cache"),
    home(".sbt/boot", "sbt launcher boot"),
    home(".nuget/packages", "NuGet package cache"),
    home(".pub-cache/hosted", "dart/flutter package cache"),
    home(".pub-cache/git", "dart/flutter git dependencies"),
    home(".cabal/packages", "cabal package downloads"),
    home(".cabal/store", "cabal package store"),
    home(".stack/pantry", "haskell stack package index"),
    home(".stack/snapshots", "haskell stack snapshot builds"),
    home(".opam/download-cache", "opam downloads"),
    home(".bundle/cache", "bundler cache"),
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
