//! The read-only classifier: every command read-only and no output redirected to a file.

use agentty_guard::is_read_only;

#[test]
fn read_only_lines() {
    for line in [
        "ls -la",
        "cat README.md | head -20",
        "git status",
        "git log --oneline -5 && git diff HEAD~1",
        "git branch",
        "git branch -a",
        "grep -rn TODO src/ 2>/dev/null",
        "rg foo | wc -l",
        "find . -name '*.rs'",
        "echo $(pwd)",
        "ls > /dev/null 2>&1",
        "which cargo; pwd",
        "sudo ls /root",
        "du -sh . && df -h",
        "ps aux | grep node",
        "stat Cargo.toml; file Cargo.toml",
        "cd src && ls",
        "sh -c 'ls -la'",
        "",
    ] {
        assert!(is_read_only(line), "{line:?} should be read-only");
    }
}

#[test]
fn not_read_only_lines() {
    for line in [
        "ls > files.txt",
        "echo hi >> log.txt",
        "cat a &> out",
        "git commit -m x",
        "git branch new-feature",
        "git branch -D old",
        "git push",
        "find . -name '*.o' -delete",
        "find . -exec touch {} \\;",
        "rm -f x",
        "cargo build",
        "ls; touch x",
        "echo $(touch x)",
        "sort -o out.txt in.txt",
        "tee out.txt",
        "unknown-tool --flag",
        "ls (",
        "pwsh -c 'Get-ChildItem'",
        "f() { ls; }; f",
        "xargs rm",
        "date -s '2020-01-01'",
    ] {
        assert!(!is_read_only(line), "{line:?} should not be read-only");
    }
}
