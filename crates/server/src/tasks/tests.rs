use super::*;

#[test]
fn ids_are_a_kind_letter_and_a_plain_number_or_a_handle() {
    for ok in [
        "t1",
        "s1",
        "t42",
        "s9999",
        "t-0123456789abcdef01234567",
        "s-ffffffffffffffffffffffff",
    ] {
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
        "t-0123456789abcdef0123456",
        "t-0123456789abcdef012345678",
        "t-0123456789ABCDEF01234567",
        "x-0123456789abcdef01234567",
        "t-0123456789abcdef0123456g",
        "t--123456789abcdef01234567",
    ] {
        assert!(!well_formed(bad), "{bad}");
    }
}
