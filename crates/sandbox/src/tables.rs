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
    /// The program whose cache this is: when it is on `PATH`, a missing cache (and the tool's
    /// home above it) is created, so a fresh account's first `npm install` is not refused.
    pub tool: Option<&'static str>,
}

const fn home(rel: &'static str, reason: &'static str) -> CacheDir {
    CacheDir {
        location: CacheLocation::Home(rel),
        reason,
        tool: None,
    }
}

const fn tool_home(rel: &'static str, tool: &'static str, reason: &'static str) -> CacheDir {
    CacheDir {
        location: CacheLocation::Home(rel),
        reason,
        tool: Some(tool),
    }
}

const fn env(var: &'static str, rel: &'static str, reason: &'static str) -> CacheDir {
    CacheDir {
        location: CacheLocation::Env(var, rel),
        reason,
        tool: None,
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
/// A missing cache is created when the plan is made, so a tool's first download is not refused
/// (Landlock can only allow paths that exist): under an existing tool home, when the tool is on
/// `PATH` (its home too, as on a fresh account), and the XDG cache dir itself.
pub const TOOLCHAIN_CACHES: &[CacheDir] = &[
    tool_home(
        ".cargo/registry",
        "cargo",
        "cargo registry index and downloaded crates",
    ),
    tool_home(".cargo/git", "cargo", "cargo git dependencies"),
    env("CARGO_HOME", "registry", "cargo registry when relocated"),
    env("CARGO_HOME", "git", "cargo git dependencies when relocated"),
    tool_home(".rustup/downloads", "rustup", "rustup download cache"),
    tool_home(".rustup/tmp", "rustup", "rustup scratch space"),
    home(
        ".cache",
        "XDG cache: pip, go-build, yarn, pre-commit, node-gyp, uv, deno, ...",
    ),
    env("XDG_CACHE_HOME", "", "XDG cache when relocated"),
    tool_home(".npm/_cacache", "npm", "npm package cache"),
    tool_home(".npm/_logs", "npm", "npm debug logs"),
    tool_home(".local/share/pnpm/store", "pnpm", "pnpm store"),
    tool_home(".yarn/berry/cache", "yarn", "yarn berry cache"),
    tool_home(".bun/install/cache", "bun", "bun install cache"),
    tool_home("go/pkg/mod", "go", "go module cache (default GOPATH)"),
    env("GOPATH", "pkg/mod", "go module cache when GOPATH is set"),
    env("GOMODCACHE", "", "go module cache when relocated"),
    env("GOCACHE", "", "go build cache when relocated"),
    tool_home(".gradle/caches", "gradle", "gradle caches"),
    tool_home(".gradle/wrapper", "gradle", "gradle wrapper distributions"),
    tool_home(".m2/repository", "mvn", "maven local repository"),
    tool_home(".ivy2/cache", "sbt", "ivy/sbt dependency cache"),
    tool_home(".sbt/boot", "sbt", "sbt launcher boot"),
    tool_home(".nuget/packages", "dotnet", "NuGet package cache"),
    tool_home(".pub-cache/hosted", "dart", "dart/flutter package cache"),
    tool_home(".pub-cache/git", "dart", "dart/flutter git dependencies"),
    tool_home(".cabal/packages", "cabal", "cabal package downloads"),
    tool_home(".cabal/store", "cabal", "cabal package store"),
    tool_home(".stack/pantry", "stack", "haskell stack package index"),
    tool_home(".stack/snapshots", "stack", "haskell stack snapshot builds"),
    tool_home(".opam/download-cache", "opam", "opam downloads"),
    tool_home(".bundle/cache", "bundle", "bundler cache"),
    tool_home(".ccache", "ccache", "ccache compiler cache"),
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
