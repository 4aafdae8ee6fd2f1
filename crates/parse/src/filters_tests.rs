use super::*;
use crate::testutil::stage;

#[test]
fn filters_that_keep_lines() {
    for line in [
        "grep nginx",
        "grep -v grep",
        "grep -vi -e a -e b",
        "grep -ePAT",
        "grep --color=never -m 3 x",
        "head",
        "head -n 5",
        "head -5",
        "tail -n +2",
        "sort -k3 -n -r",
        "uniq",
        "cat",
        "tee out.txt",
    ] {
        assert!(keeps_format(&stage(line)).is_ok(), "{line}");
    }
    assert_eq!(keeps_format(&stage("cat")), Ok(false));
}

#[test]
fn stages_that_rewrite_lines() {
    for line in [
        "grep -c x",
        "grep -n x",
        "grep -o x",
        "grep -vn x",
        "grep -A2 x",
        "grep --count x",
        "head -c 100",
        "tail -f",
        "sort -o f",
        "uniq -c",
        "cat -n",
        "awk {print}",
        "cut -d: -f1",
        "wc -l",
    ] {
        assert!(keeps_format(&stage(line)).is_err(), "{line}");
    }
}
