use super::*;

#[test]
fn ids_are_a_kind_letter_and_a_plain_number() {
    for ok in ["t1", "s1", "t42", "s9999"] {
        assert!(well_formed(ok), "{ok}");
    }
    for bad in [
        "",
        "t",
        "1",
        "x1",
        "t01",
        "t-1",
        "t1 ",
        "T1",
        "t1a",
        "tt1",
        "t99999999999999999999",
    ] {
        assert!(!well_formed(bad), "{bad}");
    }
}
