//! Rules against destroying a disk: `format-disk` (mkfs, relabelling, encryption) and
//! `disk-overwrite` (raw writes onto a block device).

use super::*;

/// `mkfs` of a regular image file (`mkfs.ext4 -F ./disk.img`) is ordinary image building; only a
/// target that may be a device counts: one under `/dev`, an expansion, or no target at all.
pub(super) fn formats_a_device(c: &SimpleCommand) -> bool {
    let mut targets = operands(c).peekable();
    targets.peek().is_none()
        || targets.any(|o| o.starts_with("/dev") || o.contains('$') || o.contains('`'))
}

pub(super) fn format_disk(a: &Analysis) -> Option<String> {
    first(a, |c| {
        let p = c.program.as_str();
        let mkfs = p == "mkfs"
            || p.starts_with("mkfs.")
            || p.starts_with("mkfs_")
            || matches!(p, "mke2fs" | "mkdosfs" | "mkntfs")
            || p == "newfs"
            || p.starts_with("newfs_");
        let verb = operands(c).next().map(|v| v.to_ascii_lowercase());
        (mkfs && formats_a_device(c))
            || (p == "mkswap" && formats_a_device(c))
            // A new partition table, zapped GPT, or encryption: the data on the disk is gone.
            || (matches!(p, "parted" | "parted.static")
                && args(c).iter().any(|w| matches!(w.as_str(), "mklabel" | "mktable")))
            || (p == "sgdisk"
                && args(c).iter().any(|w| {
                    matches!(w.as_str(), "--zap-all" | "--zap" | "--clear" | "-Z" | "-z" | "-o")
                }))
            || (p == "cryptsetup"
                && matches!(verb.as_deref(), Some("luksformat" | "erase" | "lukserase")))
            || matches!(p, "format-volume" | "clear-disk")
            || (p == "diskutil"
                && args(c).first().is_some_and(|verb| {
                    let v = verb.to_ascii_lowercase();
                    v.starts_with("erase")
                        || matches!(
                            v.as_str(),
                            "zerodisk"
                                | "randomdisk"
                                | "secureerase"
                                | "partitiondisk"
                                | "reformat"
                        )
                }))
    })
}

pub(super) fn disk_overwrite(a: &Analysis) -> Option<String> {
    first(a, |c| {
        let to_device = c
            .redirects
            .iter()
            .any(|r| r.writes() && is_block_device(&r.target));
        let by_program = match c.program.as_str() {
            "dd" => args(c)
                .iter()
                .any(|w| w.strip_prefix("of=").is_some_and(is_block_device)),
            "shred" | "blkdiscard" | "tee" | "truncate" => operands(c).any(|o| is_block_device(o)),
            "cp" | "pv" => operands(c).last().is_some_and(|o| is_block_device(o)),
            "wipefs" => {
                has_flag(c, &['a', 'o'], &["all", "offset"])
                    && operands(c).any(|o| is_block_device(o))
            }
            "sgdisk" => {
                has_flag(c, &['Z', 'z', 'o'], &["zap", "zap-all", "clear"])
                    && operands(c).any(|o| is_block_device(o))
            }
            _ => false,
        };
        to_device || by_program
    })
}
