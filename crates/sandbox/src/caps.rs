//! Capabilities a confined command gives up: those that reach past Landlock and seccomp.
//!
//! Landlock confines paths; a command running as root keeps every capability besides, and some
//! act where no path rule looks: `CAP_SYS_MODULE` loads kernel code, `CAP_SYS_RAWIO` reads
//! `/proc/kcore` and I/O ports, `CAP_SYS_ADMIN` opens the new mount API (`mount_setattr` makes
//! the session's read-only mounts writable, `open_tree` copies a mount from under the session's
//! covers), `bpf`, `setns` and much more; `CAP_NET_ADMIN` takes the machine's network down,
//! `CAP_SYS_BOOT` reboots it, `CAP_SYS_TIME` sets its clock; `CAP_SYS_PTRACE` reads the memory of
//! a program that keeps its own from other processes (not dumpable: `sudo`, `ssh`), such as one a
//! user types a secret into (docs/BEHAVIOUR.md §4 *Sealed entry*). So a confined child drops these from
//! its bounding, effective, permitted, inheritable and ambient sets, for good (a setuid-root
//! binary cannot bring them back: the bounding set caps what exec grants root).
//! `CAP_DAC_READ_SEARCH` goes too: `CAP_DAC_OVERRIDE` already passes every file mode, and what
//! it adds is `open_by_handle_at`, an open by inode that names no path for Landlock's read rules
//! to judge (`unreadable.rs`).
//!
//! Kept, because ordinary work as root needs them and the sandbox already bounds what they
//! reach: writing files of another owner in the workspace (`CAP_DAC_OVERRIDE`, `CAP_FOWNER`,
//! `CAP_CHOWN`, as in a container whose repository is bind-mounted from the host), `tar` and
//! `cp -a` restoring owners, `ping` (`CAP_NET_RAW`), a dev server on port 80
//! (`CAP_NET_BIND_SERVICE`), signals (scoped by Landlock), `su`.
//!
//! Only a server that has capabilities pays for this: a child of an unprivileged server has
//! none to drop. Dropping from the bounding set is one `prctl` per capability, each a
//! credentials commit (~3 µs): 24 of them were 80 µs per spawn, measured. So the server drops
//! them from the bounding set of each of its threads once, when the thread starts
//! ([`drop_bounding_set`]), and a child only clears its other sets (one `capset`); a child of a
//! thread that did not (one started some other way) still drops them itself. The consequence:
//! in a confining mode an approved unconfined command of a root server runs without these
//! capabilities too (`auto` mode keeps them all).

/// Capability numbers (linux/capability.h) a confined command drops.
const DROPPED: &[u32] = &[
    2,  // CAP_DAC_READ_SEARCH: open_by_handle_at (CAP_DAC_OVERRIDE already passes file modes)
    9,  // CAP_LINUX_IMMUTABLE
    12, // CAP_NET_ADMIN
    15, // CAP_IPC_OWNER
    16, // CAP_SYS_MODULE
    17, // CAP_SYS_RAWIO
    18, // CAP_SYS_CHROOT
    19, // CAP_SYS_PTRACE
    20, // CAP_SYS_PACCT
    21, // CAP_SYS_ADMIN
    22, // CAP_SYS_BOOT
    25, // CAP_SYS_TIME
    26, // CAP_SYS_TTY_CONFIG
    27, // CAP_MKNOD
    30, // CAP_AUDIT_CONTROL
    31, // CAP_SETFCAP
    32, // CAP_MAC_OVERRIDE
    33, // CAP_MAC_ADMIN
    34, // CAP_SYSLOG
    35, // CAP_WAKE_ALARM
    36, // CAP_BLOCK_SUSPEND
    37, // CAP_AUDIT_READ
    38, // CAP_PERFMON
    39, // CAP_BPF
    40, // CAP_CHECKPOINT_RESTORE
];
/// Dropped last from the bounding set: dropping from it needs this capability.
const CAP_SETPCAP: u32 = 8;

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct Header {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Data {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

fn read() -> Option<[Data; 2]> {
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: capget writes two `Data` for version 3 into the array given.
    let rc = unsafe { libc::syscall(libc::SYS_capget, &raw mut header, data.as_mut_ptr()) };
    (rc == 0).then_some(data)
}

/// Whether this process holds any capability (then its confined children drop theirs). Read
/// once, when the sandbox is prepared.
pub(crate) fn held() -> bool {
    read().is_some_and(|d| d.iter().any(|w| w.permitted != 0))
}

/// The calling thread's effective capabilities, one bit each.
pub(crate) fn effective() -> Option<u64> {
    read().map(|[low, high]| u64::from(low.effective) | (u64::from(high.effective) << 32))
}

/// The calling thread's permitted capabilities, one bit each.
pub(crate) fn permitted() -> Option<u64> {
    read().map(|[low, high]| u64::from(low.permitted) | (u64::from(high.permitted) << 32))
}

/// Sets the calling thread's effective capabilities (each must be permitted), its other sets
/// as they are. A raw `capset`: this thread alone.
pub(crate) fn set_effective(effective: u64) -> std::io::Result<()> {
    let Some(mut data) = read() else {
        return Err(std::io::Error::last_os_error());
    };
    data[0].effective = effective as u32;
    data[1].effective = (effective >> 32) as u32;
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    // SAFETY: capset reads a header and two `Data` for version 3.
    if unsafe { libc::syscall(libc::SYS_capset, &raw mut header, data.as_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A mask of the dropped capabilities, per 32-bit word.
const fn dropped_mask() -> [u32; 2] {
    let mut mask = [0u32; 2];
    let mut i = 0;
    while i < DROPPED.len() {
        let cap = DROPPED[i];
        mask[(cap / 32) as usize] |= 1 << (cap % 32);
        i += 1;
    }
    mask[(CAP_SETPCAP / 32) as usize] |= 1 << (CAP_SETPCAP % 32);
    mask
}

/// Drops [`DROPPED`] and `CAP_SETPCAP` from the calling thread's bounding set, and so from
/// what every process it starts can ever hold. Its own effective capabilities stay. Raw system
/// calls only.
pub fn drop_bounding_set() -> std::io::Result<()> {
    let last = std::io::Error::last_os_error;
    for &cap in DROPPED.iter().chain(std::iter::once(&CAP_SETPCAP)) {
        // SAFETY: prctl with integer arguments. EINVAL: a capability this kernel does not know.
        let rc = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) };
        if rc != 0 && last().raw_os_error() != Some(libc::EINVAL) {
            return Err(last());
        }
    }
    Ok(())
}

/// Drops [`DROPPED`] and `CAP_SETPCAP` from every set of the calling process. Child only (see
/// `Prepared::apply_in_child`): raw system calls, no allocation.
pub(crate) fn drop_in_child() -> std::io::Result<()> {
    let last = std::io::Error::last_os_error;
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_CAPBSET_READ, 21 as libc::c_ulong, 0, 0, 0) } == 1 {
        // Started from a thread that kept its bounding set (CAP_SYS_ADMIN is still in it).
        drop_bounding_set()?;
    }
    let Some(mut data) = read() else {
        return Err(last());
    };
    let mask = dropped_mask();
    for (word, drop) in data.iter_mut().zip(mask) {
        word.effective &= !drop;
        word.permitted &= !drop;
        word.inheritable &= !drop;
    }
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    // SAFETY: capset reads a header and two `Data` for version 3.
    if unsafe { libc::syscall(libc::SYS_capset, &raw mut header, data.as_ptr()) } != 0 {
        return Err(last());
    }
    // SAFETY: prctl with integer arguments.
    if unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        )
    } != 0
    {
        return Err(last());
    }
    Ok(())
}

/// The names of what is dropped, for `doctor`.
pub const DROPPED_NAMES: &str = "CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_SYS_MODULE, CAP_SYS_RAWIO, \
CAP_NET_ADMIN, CAP_SYS_BOOT, CAP_SYS_TIME, CAP_BPF, CAP_PERFMON, CAP_MKNOD, CAP_SYS_CHROOT, \
CAP_DAC_READ_SEARCH and 14 more";

#[cfg(test)]
mod tests {
    #[test]
    fn the_mask_has_every_dropped_capability_and_keeps_the_ones_work_needs() {
        let mask = super::dropped_mask();
        let has = |cap: u32| mask[(cap / 32) as usize] & (1 << (cap % 32)) != 0;
        for cap in [21, 19, 16, 17, 12, 39, 40, 8, 2] {
            assert!(has(cap), "{cap}");
        }
        // CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_KILL, CAP_SETUID, CAP_NET_BIND_SERVICE,
        // CAP_NET_RAW stay.
        for cap in [0, 1, 3, 5, 7, 10, 13] {
            assert!(!has(cap), "{cap}");
        }
    }
}
